"""The evaluations table: filter, sort, select; every query in a thread worker.

The screen owns the filter, the sort and the selection. A change starts a query worker
(exclusive: a newer one supersedes an older one, and the older one's DuckDB query is
interrupted) that posts the row count and first page back; the UI thread never waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import duckdb
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input, Static

from gero_tui.app.widgets.evaluations_table import PAGE_SIZE, EvaluationsTable
from gero_tui.app.widgets.filter_bar import FilterBar
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.query.table import (
    COLUMNS,
    NATURAL,
    RESULT_CLASSES,
    VALUE_FILTERS,
    Page,
    Selection,
    TableFilter,
    TableQuery,
    TableSort,
)

if TYPE_CHECKING:
    from gero_tui.app.base import ExplorerApp

T = TypeVar("T")


class EvaluationsScreen(Screen[None]):
    """Every evaluation of the run, filtered and sorted in DuckDB, a page at a time."""

    app: ExplorerApp  # type: ignore[assignment]

    CSS_PATH = "evaluations.tcss"
    AUTO_FOCUS = "#table"
    """Not the (hidden) text box: keys typed while the screen opens go to the table."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "toggle_class('passed')", "Passed",
                tooltip="Show/hide passed rows (no class chosen: all)", show=False),
        Binding("2", "toggle_class('divergence')", "Divergence",
                tooltip="Show/hide backend divergences", show=False),
        Binding("3", "toggle_class('contract_issue')", "Contract",
                tooltip="Show/hide contract issues", show=False),
        Binding("4", "toggle_class('execution')", "Execution",
                tooltip="Show/hide execution failures", show=False),
        # Priority: the app runs it before it hands the next keys on, so the keys that came
        # with `/` in one burst (a paste, SSH batching) reach the box it focuses.
        Binding("slash", "text_filter", "Find",
                tooltip="Free text in operation, case, dtype, details", priority=True),
        Binding("o", "pick_values('operations')", "Op",
                tooltip="Filter by operation"),
        Binding("t", "pick_values('dtypes')", "Dtype",
                tooltip="Filter by dtype"),
        Binding("z", "pick_values('optimizations')", "Opt",
                tooltip="Filter by optimisation level"),
        Binding("b", "pick_values('backends')", "Runtime",
                tooltip="Filter by runtime (onnxruntime, openvino, tract, onnx-reference)",
                show=False),
        Binding("u", "pick_values('suites')", "Suite",
                tooltip="Filter by suite (synthetic, onnx-backend, models)", show=False),
        Binding("c", "pick_values('checks')", "Check",
                tooltip="Filter by check (agreement, analytic, contracts)", show=False),
        Binding("x", "clear_filters", "Clear",
                tooltip="Clear every filter"),
        Binding("s", "pick_sort", "Sort",
                tooltip="Sort by a column (again: reverse)"),
        Binding("S", "reverse_sort", "Reverse sort",
                tooltip="Reverse the sort direction", show=False),
        Binding("enter", "open_evaluation", "Open",
                tooltip="Open the evaluation under the cursor", show=False),
        Binding("r", "replay", "Replay",
                tooltip="Replay the evaluation under the cursor", show=False),
        Binding("space", "toggle_selected", "Select",
                tooltip="Select/unselect the row under the cursor", show=False),
        Binding("a", "select_matching", "Select all",
                tooltip="Select every matching row (again: none)", show=False),
        Binding("e", "export", "Export",
                tooltip="Export the selected rows, or all matching rows"),
        Binding("g", "op_histogram", "Per-op histogram", show=False),
        Binding("escape", "back", "Back",
                tooltip="Leave the text filter, or back to the overview"),
    ]

    table_filter: reactive[TableFilter] = reactive(TableFilter, init=False)
    """What rows are shown."""
    sort: reactive[TableSort] = reactive(TableSort, init=False)
    """In what order."""
    selection: reactive[Selection] = reactive(Selection, init=False)
    """Which rows are selected (``space``, ``a``)."""

    class OpenEvaluation(Message):
        """``enter``: open the detail of one evaluation."""

        def __init__(self, observation_id: str, row_number: int | None = None) -> None:
            self.observation_id = observation_id
            self.row_number = row_number
            """The row's ``rn`` in the source's views: a faster fetch than the id."""
            super().__init__()

    class ReplayEvaluation(Message):
        """``r``: replay one evaluation from its evidence."""

        def __init__(self, observation_id: str, row_number: int | None = None) -> None:
            self.observation_id = observation_id
            self.row_number = row_number
            """The row's ``rn`` in the source's views: a faster fetch than the id."""
            super().__init__()

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
        def __init__(self, generation: int, count: int, page: Page, total: int | None) -> None:
            self.generation = generation
            self.count = count
            self.page = page
            self.total = total
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
        def __init__(self, error: str) -> None:
            self.error = error
            super().__init__()

    class ValuesLoaded(Message):
        def __init__(self, key: str, values: list[tuple[str, int]]) -> None:
            self.key = key
            self.values = values
            super().__init__()

    def __init__(self, table_filter: TableFilter | None = None,
                 sort: TableSort | None = None) -> None:
        super().__init__()
        self.set_reactive(EvaluationsScreen.table_filter, table_filter or TableFilter())
        self.set_reactive(EvaluationsScreen.sort, sort or TableSort())
        self._generation = 0
        self._rows_query: TableQuery | None = None
        self.matching_count: int | None = None
        """Rows matching the current filter, once counted."""
        self._counted: TableFilter | None = None
        """The filter ``matching_count`` counts (a new sort needs no new count)."""
        self.total_count: int | None = None
        self.selected_count = 0

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield FilterBar(id="filter-bar")
        box = Input(placeholder="find in operation, case, dtype, details (enter: done)",
                    id="text-filter", value=self.table_filter.text)
        box.display = bool(self.table_filter.text)
        yield box
        yield EvaluationsTable(id="table")
        # One line of keys; Textual's Footer rebuilds a widget per key on every screen change.
        yield KeyBar()

    def on_mount(self) -> None:
        self.set_focus(self.table)
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

    def open_evaluation(self, observation_id: str, row_number: int | None = None) -> None:
        self.post_message(self.OpenEvaluation(observation_id, row_number))

    def replay_evaluation(self, observation_id: str, row_number: int | None = None) -> None:
        self.post_message(self.ReplayEvaluation(observation_id, row_number))

    def export_rows(self) -> None:
        if self.selection.is_empty:
            where, params = self.filter_where()
            self.post_message(self.ExportRows(where, params, False, self.matching_count))
        else:
            where, params = self.selection_where()
            self.post_message(self.ExportRows(where, params, True, self.selected_count))

    # -- queries -----------------------------------------------------------------------

    def source_changed(self) -> None:
        """The app opened (another) run: show its rows under the current filter."""
        source = self.app.source
        if source is None:
            return
        self.query_one("#title", Static).update(self.app.title_line())
        self.total_count = None
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
                and self.selection.is_empty
                and (len(first[0].rows) >= limit or len(first[0].rows) == first[1])):
            # Read ahead while Textual started (gero_tui.app.prefetch): paint it now.
            self._rows_query = None
            self.post_message(self.RowsLoaded(self._generation, first[1], first[0], first[1]))
            return
        # The cursor is made here so that a newer filter can interrupt its query at once.
        self._rows_query = TableQuery(source)
        self.query_one(FilterBar).busy = True
        known = self.matching_count if self._counted == self.table_filter else None
        self._load_rows(self._rows_query, self._generation, self.table_filter, self.sort,
                        self.selection, limit, need_total=self.total_count is None,
                        known_count=known)

    @work(thread=True, exclusive=True, group="rows")
    def _load_rows(self, query: TableQuery, generation: int, table_filter: TableFilter,
                   sort: TableSort, selection: Selection, limit: int, need_total: bool,
                   known_count: int | None = None) -> None:
        try:
            page = query.page(table_filter, sort, 0, limit, selection)
            # A short first page is the whole result: no need to count.
            short = len(page.rows) < limit
            count = (len(page.rows) if short else known_count if known_count is not None
                     else query.count(table_filter))
            total = None
            if need_total:
                total = count if table_filter.is_empty else query.count(TableFilter())
        except duckdb.InterruptException:
            return  # superseded by a newer filter
        except duckdb.Error as e:
            self.post_message(self.QueryFailed(str(e)))
            return
        finally:
            query.close()
        self.post_message(self.RowsLoaded(generation, count, page, total))

    def _query(self, ask: Callable[[TableQuery], T]) -> T | None:
        """Run one question on a fresh cursor (worker threads only); a failure is posted."""
        source = self.app.source
        if source is None:
            return None
        query = TableQuery(source)
        try:
            return ask(query)
        except duckdb.Error as e:
            self.post_message(self.QueryFailed(str(e)))
            return None
        finally:
            query.close()

    @work(thread=True, exclusive=True, group="page")
    def _load_page(self, generation: int, table_filter: TableFilter, sort: TableSort,
                   selection: Selection, offset: int, limit: int) -> None:
        page = self._query(lambda q: q.page(table_filter, sort, offset, limit, selection))
        if page is not None:
            self.post_message(self.PageLoaded(generation, page))

    @work(thread=True, exclusive=True, group="selection")
    def _count_selection(self, selection: Selection) -> None:
        count = self._query(lambda q: q.selected_count(selection))
        if count is not None:
            self.post_message(self.SelectionCounted(selection, count))

    @work(thread=True, exclusive=True, group="values")
    def _load_values(self, key: str) -> None:
        values = self._query(lambda q: q.distinct(key))
        if values is not None:
            self.post_message(self.ValuesLoaded(key, values))

    def on_evaluations_screen_rows_loaded(self, message: RowsLoaded) -> None:
        if message.generation != self._generation:
            return
        self._rows_query = None
        self.matching_count = message.count
        self._counted = self.table_filter
        if message.total is not None:
            self.total_count = message.total
        self.table.reset(message.count, message.page)
        self.query_one(FilterBar).busy = False
        self._sync_bar()

    def on_evaluations_screen_page_loaded(self, message: PageLoaded) -> None:
        if message.generation == self._generation:
            self.table.add_page(message.page)

    def on_evaluations_screen_selection_counted(self, message: SelectionCounted) -> None:
        if message.selection == self.selection:
            self.selected_count = message.count
            self._sync_bar()

    def on_evaluations_screen_query_failed(self, message: QueryFailed) -> None:
        self.query_one(FilterBar).busy = False
        self.table.loading_text = f"Query failed: {message.error}"
        self.table.refresh()
        self.notify(message.error, title="Query failed", severity="error", timeout=10)

    def on_evaluations_table_page_needed(self, message: EvaluationsTable.PageNeeded) -> None:
        self._load_page(self._generation, self.table_filter, self.sort, self.selection,
                        message.offset, message.limit)

    def on_evaluations_table_sort_requested(self, message: EvaluationsTable.SortRequested
                                            ) -> None:
        self._sort_by(message.column)

    def watch_table_filter(self) -> None:
        self._sync_bar()
        self.refresh_rows()

    def watch_sort(self) -> None:
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
        bar.selected = self.selected_count
        bar.refresh(layout=True)  # its height follows its text (one line may wrap)

    # -- actions -----------------------------------------------------------------------

    def action_toggle_class(self, result: str) -> None:
        """Show or hide one result class (none chosen: all shown)."""
        self.table_filter = self.table_filter.toggle_class(result)

    def action_text_filter(self) -> None:
        """Free-text filter over operation, case, dtype and details."""
        box = self.query_one("#text-filter", Input)
        if self.focused is box:  # (has_focus waits for the Focus event)
            # The binding has priority: a `/` typed in the box is text, after the keys before it.
            box.post_message(events.Key("slash", "/"))
            return
        box.display = True
        # At once, not on the next idle (Widget.focus): the keys after `/` go to the box.
        self.set_focus(box)

    @on(Input.Changed, "#text-filter")
    def _text_changed(self, event: Input.Changed) -> None:
        from dataclasses import replace

        if event.value != self.table_filter.text:
            self.table_filter = replace(self.table_filter, text=event.value)

    @on(Input.Submitted, "#text-filter")
    def _text_done(self) -> None:
        box = self.query_one("#text-filter", Input)
        box.display = bool(box.value)
        self.table.focus()

    def action_pick_values(self, key: str) -> None:
        """Choose values of one column (operation, dtype, optimisation, suite, check)."""
        self._load_values(key)

    def on_evaluations_screen_values_loaded(self, message: ValuesLoaded) -> None:
        from gero_tui.app.screens.value_picker import ValuePickerScreen

        key = message.key
        label = VALUE_FILTERS[key][1]

        def chosen(values: frozenset[str] | None) -> None:
            if values is not None:
                self.table_filter = self.table_filter.with_values(key, values)

        self.app.push_screen(
            ValuePickerScreen(f"Filter by {label}", message.values, self.table_filter.values(key)),
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

        self.app.push_screen(SortPickerScreen(self.sort), chosen)

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
        """Select or unselect the row under the cursor."""
        row = self.table.row(self.table.cursor)
        if row is None:
            return
        observation_id, selected = str(row[0]), bool(row[1])
        self.table.set_selected(self.table.cursor, not selected)
        self.selection = self.selection.toggle(observation_id, selected)
        self.table.action_cursor_down()

    def action_select_matching(self) -> None:
        """Select every row matching the filter; again (with nothing changed) unselects all."""
        where, params = self.filter_where()
        everything = Selection(matching=(where, tuple(params)))
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
        box = self.query_one("#text-filter", Input)
        if box.has_focus:
            box.display = bool(box.value)
            self.table.focus()
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.show_overview()


__all__ = ["RESULT_CLASSES", "EvaluationsScreen"]
