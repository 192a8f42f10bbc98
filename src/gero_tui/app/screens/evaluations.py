"""The evaluations table: filter, sort, select; every query in a thread worker.

The screen owns the filter, the sort and the selection. A change starts a query worker
(exclusive: a newer one supersedes an older one, and the older one's DuckDB query is
interrupted) that posts the row count and first page back; the UI thread never waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import duckdb
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from gero.api import RunGone
from gero.query.table import (
    COLUMN_FILTERS,
    COLUMNS,
    GROUPINGS,
    NATURAL,
    RESULT_CLASSES,
    TEXT_SEARCHED,
    VALUE_FILTERS,
    ColumnContent,
    GroupedRows,
    Grouping,
    Page,
    Selection,
    TableFilter,
    TableQuery,
    TableRow,
    TableSort,
    split_covers,
)
from gero_runner.escape import for_terminal
from gero_tui.app.widgets.evaluations_table import PAGE_SIZE, EvaluationsTable
from gero_tui.app.widgets.filter_bar import FilterBar
from gero_tui.app.widgets.find_box import FIND_MAX, FindBox
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.app.widgets.palette import CLASS_COLORS

if TYPE_CHECKING:
    from gero_tui.app.base import ExplorerApp

T = TypeVar("T")
FIND_PAUSE_S = 0.15
"""How long the find box waits for the next change before its text is queried: a burst of
keys (typing, a paste without bracketed paste) is one query, of the text typed last."""
GROUP_CACHE = 4
"""Grouped tables kept (a few MB each on a million rows): the two groupings of the last
two filters."""


class EvaluationsScreen(Screen[None]):
    """Every evaluation of the run, filtered and sorted in DuckDB, a page at a time."""

    app: ExplorerApp

    CSS_PATH = "evaluations.tcss"
    AUTO_FOCUS = "#table"
    """Not the (hidden) text box: keys typed while the screen opens go to the table."""

    # Priority, every key but escape: the app runs a priority binding before it hands the
    # next keys on, so the keys typed right after one that opens a screen (a picker, the
    # find box, a detail) reach that screen, not this one. While the find box has focus,
    # check_action turns them off and they are text.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "toggle_class('passed')", "Passed",
                tooltip="Show/hide passed rows (no class chosen: all)", show=False,
                priority=True),
        Binding("2", "toggle_class('divergence')", "Divergence",
                tooltip="Show/hide backend divergences", show=False, priority=True),
        Binding("3", "toggle_class('contract_issue')", "Contract",
                tooltip="Show/hide contract issues", show=False, priority=True),
        Binding("4", "toggle_class('execution')", "Execution",
                tooltip="Show/hide execution failures", show=False, priority=True),
        Binding("slash", "text_filter", "Find",
                tooltip=f"Free text in {TEXT_SEARCHED}", priority=True),
        Binding("o", "pick_values('operations')", "Op",
                tooltip="Filter by operation", priority=True),
        Binding("t", "pick_values('dtypes')", "Dtype",
                tooltip="Filter by dtype", priority=True),
        Binding("z", "pick_values('optimizations')", "Opt",
                tooltip="Filter by optimisation level (or the reference path)", priority=True),
        Binding("b", "pick_values('backends')", "Runtime",
                tooltip="Filter by runtime (onnxruntime, openvino, tract, onnx-reference)",
                priority=True),
        # Not in the key bar: only a run that names a runtime's release (issue 42) has them.
        Binding("v", "pick_values('releases')", "Release",
                tooltip="Filter by release (a releases row: the release and the reference "
                "release it was compared with)", show=False, priority=True),
        Binding("u", "pick_values('suites')", "Suite",
                tooltip="Filter by suite (synthetic, onnx-backend, models)", priority=True),
        Binding("c", "pick_values('checks')", "Check",
                tooltip="Filter by check (agreement, analytic, contracts)", priority=True),
        Binding("w", "pick_values('blamed')", "Blamed",
                tooltip="Filter by the path a row blames (the side float64 does not side "
                "with, the path that failed)", priority=True),
        Binding("x", "clear_filters", "Clear",
                tooltip="Clear every filter", priority=True),
        Binding("s", "pick_sort", "Sort",
                tooltip="Sort by a column (again: reverse)", priority=True),
        Binding("S", "reverse_sort", "Reverse sort",
                tooltip="Reverse the sort direction", priority=True),
        Binding("enter", "open_evaluation", "Open",
                tooltip="Open the evaluation under the cursor", priority=True),
        Binding("r", "replay", "Replay",
                tooltip="Replay the evaluation under the cursor", priority=True),
        Binding("space", "toggle_selected", "Select",
                tooltip="Select/unselect the row under the cursor (a grouped row: its whole "
                "group)", priority=True),
        Binding("a", "select_matching", "Select all",
                tooltip="Select every matching row (again: none)", priority=True),
        Binding("e", "export", "Export",
                tooltip="Export the selected rows, or all matching rows", priority=True),
        Binding("g", "op_histogram", "Histogram",
                tooltip="Max abs. error histogram of the operation under the cursor",
                priority=True),
        # VisiData's Shift-F (f as well: no other key of the table or the app uses it).
        Binding("F,f", "frequency", "Frequency",
                tooltip="Counts of each value of the column under the column cursor "
                "(left/right move it) within the filter; enter filters to a value",
                priority=True),
        Binding("m", "toggle_grouping", "Group",
                tooltip="One row per case and check: merge the optimisation levels, then the "
                "dtypes, then none (enter opens the worst row of a group)", priority=True),
        Binding("escape", "back", "Back",
                tooltip="Leave the find box, or back to the overview"),
    ]

    table_filter: reactive[TableFilter] = reactive(TableFilter, init=False)
    """What rows are shown."""
    sort: reactive[TableSort] = reactive(TableSort, init=False)
    """In what order."""
    selection: reactive[Selection] = reactive(Selection, init=False)
    """Which rows are selected (``space``, ``a``)."""
    grouping: reactive[str | None] = reactive(None, init=False)
    """A ``GROUPINGS`` key (``m``): rows that differ only in it are one row; None: every row."""

    class ExportRows(Message):
        """``e``: export the rows matching ``where`` (the selection, else the filter)."""

        def __init__(self, where: str, params: list[Any], selected: bool, count: int | None
                     ) -> None:
            self.where = where
            self.params = params
            self.selected = selected
            """Whether ``where`` is the selection (True) or the whole filter (False)."""
            self.count = count
            super().__init__()

    class RowsLoaded(Message):
        def __init__(self, generation: int, count: int, page: Page, total: int | None,
                     groups: GroupedRows | None = None) -> None:
            self.generation = generation
            self.count = count
            self.page = page
            self.total = total
            self.groups = groups
            """The grouped table the page came from (grouping on)."""
            super().__init__()

    class PageLoaded(Message):
        def __init__(self, generation: int, page: Page) -> None:
            self.generation = generation
            self.page = page
            super().__init__()

    class SelectionCounted(Message):
        def __init__(self, selection: Selection, count: int) -> None:
            self.selection = selection
            self.count = count
            super().__init__()

    class QueryFailed(Message):
        def __init__(self, error: str, generation: int | None = None) -> None:
            self.error = error
            self.generation = generation
            """The query's generation: a superseded query's failure is not shown."""
            super().__init__()


    def __init__(self, table_filter: TableFilter | None = None,
                 sort: TableSort | None = None, find: bool = False,
                 grouping: str | None = None) -> None:
        super().__init__()
        self._find_on_mount = find
        self._groups: GroupedRows | None = None
        """The grouped table the rows on screen come from."""
        self._group_cache: dict[tuple[TableFilter, str], GroupedRows] = {}
        """The grouped tables last made, by filter and grouping, newest last: ``m`` back to
        one of them pages it again instead of grouping every row anew."""
        """Open with the find box focused (``/`` on the overview)."""
        self.set_reactive(EvaluationsScreen.table_filter, table_filter or TableFilter())
        self.set_reactive(EvaluationsScreen.sort, sort or TableSort())
        self.set_reactive(EvaluationsScreen.grouping, grouping if grouping in GROUPINGS else None)
        self._generation = 0
        self._rows_query: TableQuery | None = None
        self.matching_count: int | None = None
        """Rows matching the current filter, once counted."""
        self._counted: tuple[TableFilter, str | None] | None = None
        """The filter ``matching_count`` counts (a new sort needs no new count)."""
        self.total_count: int | None = None
        self.selected_count = 0

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield FilterBar(id="filter-bar")
        box = FindBox(placeholder=f"find in {TEXT_SEARCHED} (at most {FIND_MAX} characters; "
                      "enter: done)", id="text-filter", value=self.table_filter.text)
        box.display = bool(self.table_filter.text)
        yield box
        yield EvaluationsTable(id="table")
        # The full reason of the row under the cursor: the Details column keeps what fits.
        yield Static(id="why")
        # One line of keys; Textual's Footer rebuilds a widget per key on every screen change.
        yield KeyBar()

    def on_mount(self) -> None:
        self.set_focus(self.table)
        if self._find_on_mount:
            self.action_text_filter()
        self.table.set_sort(self.sort)
        self._sync_bar()
        self.source_changed()
        self.watch(self.app, "source", self.source_changed, init=False)

    @property
    def table(self) -> EvaluationsTable:
        return self.query_one(EvaluationsTable)

    # -- what part 2 and export build on -----------------------------------------------

    def filter_where(self) -> tuple[str, list[Any]]:
        """The current filter as a parameterised SQL condition over the observation table."""
        return self.table_filter.where()

    def selection_where(self) -> tuple[str, list[Any]]:
        """The selected rows as a parameterised SQL condition (``false`` when none)."""
        return self.selection.where()

    @property
    def current_observation_id(self) -> str | None:
        """The observation under the cursor (None while its page loads)."""
        return self.table.current_observation_id

    def selected_observation_ids(self) -> list[str]:
        """Every selected observation id. Runs a query: call it from a worker."""
        query = TableQuery(self.app.require_source())
        try:
            return query.selected_ids(self.selection)
        finally:
            query.close()

    # The detail and export screens are pushed now, not on the next message: the keys typed
    # after `enter` go to the detail.
    def open_evaluation(self, observation_id: str, row_number: int | None = None) -> None:
        self.app.open_detail(observation_id, row_number)

    def replay_evaluation(self, observation_id: str, row_number: int | None = None) -> None:
        self.app.open_detail(observation_id, row_number, replay=True)

    def export_rows(self) -> None:
        if self.selection.is_empty:
            where, params = self.filter_where()
            self.app.open_export(where, params, False, self.matching_count,
                                 "; ".join(self.table_filter.describe()))
        else:
            where, params = self.selection_where()
            self.app.open_export(where, params, True, self.selected_count)

    # -- queries -----------------------------------------------------------------------

    def source_changed(self) -> None:
        """The app opened (another) run: show its rows under the current filter."""
        source = self.app.source
        if source is None:
            return
        self.query_one("#title", Static).update(Text(self.app.title_line()))
        self.total_count = None
        if self.selection != Selection():
            self.selection = Selection()  # rows (and groups) of the run shown before
        self._groups = None
        self._group_cache.clear()  # tables of the run shown before
        self._counted = None  # the count was the other run's
        self.table.set_run_content(None)  # the other run's
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Query the count and first page for the current filter and sort, off the UI thread."""
        source = self.app.source
        if source is None:
            return
        self._generation += 1
        if self._rows_query is not None:
            self._rows_query.interrupt()
        first, self.app.first_page = self.app.first_page, None
        limit = max(PAGE_SIZE, self.table.visible_rows + 1)
        if (first is not None and self.table_filter.is_empty and self.sort.column == NATURAL
                and self.selection.is_empty and self.grouping is None
                and (len(first[0].rows) >= limit or len(first[0].rows) == first[1])):
            # Read ahead while Textual started (gero_tui.app.prefetch): paint it now.
            self._rows_query = None
            self.post_message(self.RowsLoaded(self._generation, first[1], first[0], first[1]))
            return
        # The cursor is made here so that a newer filter can interrupt its query at once.
        try:
            self._rows_query = TableQuery(source)
        except RunGone:  # removed underneath: the app leaves the run (OpenRun.on_gone)
            return
        self.query_one(FilterBar).busy = True
        counted = (self.table_filter, self.grouping)
        known = self.matching_count if self._counted == counted else None
        grouping = GROUPINGS.get(self.grouping or "")
        groups = (self._group_cache.get((self.table_filter, self.grouping))
                  if self.grouping is not None else None)
        self._load_rows(self._rows_query, self._generation, self.table_filter, self.sort,
                        self.selection, limit, need_total=self.total_count is None,
                        known_count=known, grouping=grouping, groups=groups)

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def _load_rows(self, query: TableQuery, generation: int, table_filter: TableFilter,
                   sort: TableSort, selection: Selection, limit: int, need_total: bool,
                   known_count: int | None = None, grouping: Grouping | None = None,
                   groups: GroupedRows | None = None) -> None:
        try:
            if grouping is not None and groups is None:
                # A new filter or grouping: group once; a new sort pages the same groups.
                groups = query.group(table_filter, grouping, f"grouped_{id(self)}_{generation}")
            page = query.page(table_filter, sort, 0, limit, selection, groups)
            # A short first page is the whole result: no need to count.
            short = len(page.rows) < limit
            count = (groups.count if groups is not None else len(page.rows) if short
                     else known_count if known_count is not None else query.count(table_filter))
            total = None
            if need_total:
                total = count if table_filter.is_empty else query.count(TableFilter())
        except duckdb.InterruptException:
            return  # superseded by a newer filter
        except duckdb.Error as e:
            self.post_message(self.QueryFailed(str(e), generation))
            return
        finally:
            query.close()
        self.post_message(self.RowsLoaded(generation, count, page, total, groups))

    def _query(self, ask: Callable[[TableQuery], T], generation: int | None = None) -> T | None:
        """Run one question on a fresh cursor (worker threads only); a failure is posted."""
        source = self.app.source
        if source is None:
            return None
        query = TableQuery(source)
        try:
            return ask(query)
        except duckdb.Error as e:
            self.post_message(self.QueryFailed(str(e), generation))
            return None
        finally:
            query.close()

    @work(thread=True, exclusive=True, group="page", exit_on_error=False)
    def _load_page(self, generation: int, table_filter: TableFilter, sort: TableSort,
                   selection: Selection, offset: int, limit: int,
                   groups: GroupedRows | None) -> None:
        page = self._query(lambda q: q.page(table_filter, sort, offset, limit, selection, groups),
                           generation)
        if page is not None:
            self.post_message(self.PageLoaded(generation, page))

    @work(thread=True, group="drop", exit_on_error=False)
    def _drop_groups(self, name: str) -> None:
        """A grouped table no page reads any more (a late page of it fails unseen)."""
        self._query(lambda q: q.drop(name))

    @work(thread=True, exclusive=True, group="selection", exit_on_error=False)
    def _count_selection(self, selection: Selection) -> None:
        count = self._query(lambda q: q.selected_count(selection))
        if count is not None:
            self.post_message(self.SelectionCounted(selection, count))


    def on_evaluations_screen_rows_loaded(self, message: RowsLoaded) -> None:
        if message.generation != self._generation:
            return
        self._rows_query = None
        self.matching_count = message.count
        self._counted = (self.table_filter, self.grouping)
        if message.groups is not None and self.grouping is not None:
            key = (self.table_filter, self.grouping)
            self._group_cache.pop(key, None)
            self._group_cache[key] = message.groups
            while len(self._group_cache) > GROUP_CACHE:
                old = self._group_cache.pop(next(iter(self._group_cache)))
                self._drop_groups(old.name)
        self._groups = message.groups
        self.table.grouped_column = (None if message.groups is None
                                     else message.groups.grouping.column)
        if message.total is not None:
            self.total_count = message.total
        self.table.reset(message.count, message.page)
        if self.table.run_content is None:
            self._load_content(self.app.source)
        bar = self.query_one(FilterBar)
        bar.busy = False
        bar.problem = ""
        self._sync_bar()

    @work(thread=True, exclusive=True, group="widths", exit_on_error=False)
    def _load_content(self, source: Any) -> None:
        """The run's longest names, which the table sizes its columns from (after the first
        page: it waits for no scan of the run)."""
        content = self._query(lambda q: q.content())
        if content is not None and source is self.app.source:
            self.app.call_from_thread(self._content_loaded, source, content)

    def _content_loaded(self, source: Any, content: ColumnContent) -> None:
        if source is self.app.source:
            self.table.set_run_content(content)

    def on_evaluations_screen_page_loaded(self, message: PageLoaded) -> None:
        if message.generation == self._generation:
            self.table.add_page(message.page)

    def on_evaluations_screen_selection_counted(self, message: SelectionCounted) -> None:
        if message.selection == self.selection:
            self.selected_count = message.count
            self._sync_bar()

    def on_evaluations_screen_query_failed(self, message: QueryFailed) -> None:
        if message.generation is not None and message.generation != self._generation:
            return  # superseded: the newer query says how it went
        self._rows_query = None
        bar = self.query_one(FilterBar)
        bar.busy = False
        bar.problem = f"query failed: {message.error}"
        self.table.loading_text = f"Query failed: {message.error}"
        self.table.refresh()
        self.notify(message.error, title="Query failed", severity="error", timeout=10)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so on the status line; the app goes on."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.post_message(self.QueryFailed(f"{type(error).__name__}: {error}"))

    def on_evaluations_table_cursor_moved(self, message: EvaluationsTable.CursorMoved) -> None:
        self.query_one("#why", Static).update(
            why_text(self.table.row(message.index), self.table.grouped_column))

    def on_evaluations_table_page_needed(self, message: EvaluationsTable.PageNeeded) -> None:
        self._load_page(self._generation, self.table_filter, self.sort, self.selection,
                        message.offset, message.limit, self._groups)

    def on_evaluations_table_sort_requested(self, message: EvaluationsTable.SortRequested
                                            ) -> None:
        self._sort_by(message.column)

    def watch_table_filter(self) -> None:
        if not self.selection.is_empty:
            # A selection made under another filter may hold rows this one hides: `e` would
            # export rows that are not on screen. Dropped, and said so.
            self.selection = Selection()
            self.notify("selection cleared: the filter changed", timeout=4)
        self._sync_bar()
        self.refresh_rows()

    def action_frequency(self) -> None:
        """``F``: the values of the column under the column cursor, with their counts."""
        from gero_tui.app.screens.frequency import FrequencyScreen

        key = self.table.column_key
        column = next(c for c in COLUMNS if c.key == key)
        table_filter = self.table_filter
        scope = "; ".join(table_filter.describe()) or "every row"
        target = COLUMN_FILTERS.get(key)

        def chosen(value: str | None) -> None:
            if value is None or target is None:
                return
            if target == "classes":
                if value in RESULT_CLASSES:
                    self.table_filter = replace(self.table_filter, classes=frozenset({value}))
            else:
                self.table_filter = self.table_filter.with_values(target, frozenset({value}))

        self.app.push_screen(
            FrequencyScreen(column.label, lambda: self._query(
                lambda q: q.frequency(key, table_filter)), target is not None, scope),
            chosen)

    def watch_grouping(self) -> None:
        self.app.last_grouping = self.grouping
        self._sync_bar()
        self.refresh_rows()

    def action_toggle_grouping(self) -> None:
        """Step through the groupings: levels merged, dtypes merged, none."""
        keys = [None, *GROUPINGS]
        self.grouping = keys[(keys.index(self.grouping) + 1) % len(keys)]

    def watch_sort(self) -> None:
        self.app.last_sort = self.sort  # the next table opened keeps it
        self.table.set_sort(self.sort)
        self._sync_bar()
        self.refresh_rows()

    def watch_selection(self) -> None:
        if self.selection.is_empty:
            self.selected_count = 0
            self._sync_bar()
        else:
            self._count_selection(self.selection)

    def _sync_bar(self) -> None:
        bar = self.query_one(FilterBar)
        bar.table_filter = self.table_filter
        bar.sort = self.sort
        bar.matching = self.matching_count
        bar.total = self.total_count
        source = self.app.source
        bar.recorded = None if source is None else self.app.recorded_count(source)
        bar.selected = self.selected_count
        bar.grouping = GROUPINGS[self.grouping].label if self.grouping else ""
        bar.grouped_rows = self._groups.rows if self._groups is not None else None
        bar.refresh(layout=True)  # its height follows its text (one line may wrap)

    # -- actions -----------------------------------------------------------------------

    def action_toggle_class(self, result: str) -> None:
        """Show or hide one result class (none chosen: all shown)."""
        self.table_filter = self.table_filter.toggle_class(result)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the find box has focus, the screen's keys are text (escape excepted)."""
        return action == "back" or not isinstance(self.focused, Input)

    def action_text_filter(self) -> None:
        """Free-text filter over every text column the table shows."""
        box = self.query_one("#text-filter", Input)
        box.display = True
        # At once, not on the next idle (Widget.focus): the keys after `/` go to the box.
        self.set_focus(box)

    @on(Input.Changed, "#text-filter")
    def _text_changed(self, event: Input.Changed) -> None:
        self._find_after_pause(event.value)

    @work(exclusive=True, group="find", exit_on_error=False)
    async def _find_after_pause(self, text: str) -> None:
        """Query ``text`` unless the box changes again within ``FIND_PAUSE_S`` (exclusive:
        the next change cancels this one), so only the last text of a burst is queried."""
        await asyncio.sleep(FIND_PAUSE_S)
        self._set_find(text)

    def _find_now(self, text: str) -> None:
        """The filter takes ``text`` at once (enter, escape): no pause left to wait."""
        self.workers.cancel_group(self, "find")
        self._set_find(text)

    def _set_find(self, text: str) -> None:
        if text != self.table_filter.text:
            self.table_filter = replace(self.table_filter, text=text)

    @on(FindBox.Capped)
    def _find_capped(self) -> None:
        self.notify(f"the find box keeps {FIND_MAX} characters: the rest of what was typed "
                    "or pasted is left out", timeout=6)

    @on(Input.Submitted, "#text-filter")
    def _text_done(self) -> None:
        box = self.query_one("#text-filter", Input)
        self._find_now(box.value)
        box.display = bool(box.value)
        self.set_focus(self.table)  # now: the next key is a table key

    def action_pick_values(self, key: str) -> None:
        """Choose values of one column (operation, dtype, optimisation, suite, check, arbiter).

        The picker opens now and counts in its own worker: keys typed right after this one
        go to the picker, not to the table under it.
        """
        from gero_tui.app.screens.value_picker import ValuePickerScreen

        label = VALUE_FILTERS[key][1]
        # Counts under every other active filter: what choosing a value would leave.
        others = self.table_filter.with_values(key, frozenset())

        def chosen(values: frozenset[str] | None) -> None:
            if values is not None:
                self.table_filter = self.table_filter.with_values(key, values)

        self.app.push_screen(
            ValuePickerScreen(f"Filter by {label}",
                              lambda: self._query(lambda q: q.distinct(key, others)),
                              self.table_filter.values(key)),
            chosen)

    def action_clear_filters(self) -> None:
        """Remove every filter (the sort stays)."""
        self.query_one("#text-filter", Input).value = ""
        self.query_one("#text-filter").display = False
        self.table_filter = TableFilter()

    def set_filter(self, table_filter: TableFilter) -> None:
        """Show rows matching ``table_filter`` (the overview opens the table this way)."""
        box = self.query_one("#text-filter", Input)
        box.value = table_filter.text
        box.display = bool(table_filter.text)
        self.table_filter = table_filter

    def action_pick_sort(self) -> None:
        """Choose the column to sort by; choosing the current one reverses it."""
        from gero_tui.app.screens.sort_picker import SortPickerScreen

        def chosen(column: str | None) -> None:
            if column is not None:
                self._sort_by(column)

        # A run that names no release has no Release column to sort by.
        hidden = frozenset() if (self.table.content or {}).get("release") else {"release"}
        self.app.push_screen(SortPickerScreen(self.sort, frozenset(hidden)), chosen)

    def _sort_by(self, column: str) -> None:
        if column == self.sort.column and column != NATURAL:
            self.sort = TableSort(column, not self.sort.descending)
        else:
            numeric = any(c.key == column and c.numeric for c in COLUMNS)
            self.sort = TableSort(column, descending=numeric)

    def action_reverse_sort(self) -> None:
        if self.sort.column != NATURAL:
            self.sort = TableSort(self.sort.column, not self.sort.descending)

    def action_toggle_selected(self) -> None:
        """Select or unselect the row under the cursor: on a grouped row, every row of its
        group (what ``e`` then exports)."""
        row = self.table.row(self.table.cursor)
        if row is None:
            return
        observation_id, selected = row.observation_id, row.selected
        key = self.table.current_group_key
        if self._groups is not None and key is not None:
            where, params = self._groups.members(*self.filter_where(), key)
            self.selection = self.selection.toggle_rows(where, params, selected)
        else:
            self.selection = self.selection.toggle(observation_id, selected)
        self.table.set_selected(self.table.cursor, not selected)

    def action_select_matching(self) -> None:
        """Select every row matching the filter; again (with nothing changed) unselects all."""
        where, params = self.filter_where()
        everything = Selection.matching(where, params)
        self.selection = Selection() if self.selection == everything else everything
        self.refresh_rows()

    def action_open_evaluation(self) -> None:
        if (oid := self.current_observation_id) is not None:
            self.open_evaluation(oid, self.table.current_row_number)

    def action_replay(self) -> None:
        if (oid := self.current_observation_id) is not None:
            self.replay_evaluation(oid, self.table.current_row_number)

    def action_export(self) -> None:
        self.export_rows()

    def action_op_histogram(self) -> None:
        """``g``: max abs error histogram of the operation under the cursor."""
        from gero_tui.app.screens.op_histogram import OpHistogramScreen

        if (oid := self.current_observation_id) is not None:
            self.app.push_screen(OpHistogramScreen(self.app.require_source(),
                                                   observation_id=oid))

    def action_back(self) -> None:
        if not self.is_active:  # a key queued before this screen was left
            return
        box = self.query_one("#text-filter", Input)
        if self.focused is box:  # (has_focus waits for the Focus event)
            self._find_now(box.value)
            box.display = bool(box.value)
            self.set_focus(self.table)  # now: the next key is a table key
        elif box.value or self.table_filter.text:
            # `/ text enter`, then escape: the find goes, the table stays (it left for the
            # overview); the next escape goes back.
            box.value = ""
            box.display = False
            self.table_filter = replace(self.table_filter, text="")
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.show_overview()


def why_text(row: TableRow | None, grouped_column: str | None = None) -> Text:
    """The line under the table: the row's result and full reason (and the path it
    blames); for a
    group, what its rows cover with each one's result first."""
    if row is None:
        return Text("")
    values = row.cells
    result = str(values.get("result") or "")
    text = Text()
    if grouped_column is not None:
        covers = split_covers(str(values.get(grouped_column) or ""))
        text.append(f"{len(covers)} row{'s' if len(covers) != 1 else ''}: ", style="bold")
        for n, (name, member) in enumerate(covers):
            text.append(" · " if n else "")
            text.append(f"{for_terminal(name)} ")
            text.append(member.replace("_", " "), style=CLASS_COLORS.get(member, ""))
        text.append("; worst shown: ", style="dim")
    text.append(f"{result.replace('_', ' ')}: ", style=f"bold {CLASS_COLORS.get(result, '')}")
    text.append(for_terminal(values.get("details") or "-"))
    blamed = str(values.get("blamed") or "")
    if blamed == "undecided":
        text.append("  (blamed: undecided, no float64 value sides with either path)",
                    style="dim")
    elif blamed:
        text.append(f"  (blamed: {for_terminal(blamed)})", style="dim")
    return text

__all__ = ["RESULT_CLASSES", "EvaluationsScreen"]
