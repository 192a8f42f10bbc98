"""A virtual table of evaluations: it knows how many rows match, and holds only a few pages.

Rows arrive as pages from a query worker (``add_page``); a row that is scrolled into view
before its page has arrived is drawn as a placeholder and its page is asked for with
``PageNeeded``. Nothing here queries anything: the screen owns the data.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from gero.query.table import (
    COLUMNS,
    LEVEL_NAMES,
    RUNTIME_SHORT,
    Page,
    TableRow,
    TableSort,
    split_covers,
)
from gero_runner.escape import for_terminal
from gero_runner.result_classes import RESULT_ABBREVIATIONS, RESULT_WORDS

PAGE_SIZE = 128
KEEP_ROWS = 8 * PAGE_SIZE
"""Rows kept in the cache; pages far from the view are dropped beyond this."""

# Widths of the fixed columns: as wide as their longest common value (and header), the
# check and the case name first, since they are what triage reads. "case" and "details"
# share what is left: the case up to CASE_MAX, then the details. A column not named here
# is as wide as its header (``column_width``).
FLEXIBLE = ("case", "details")
WIDTHS = {"input": 9, "runtime": 7, "optimization": 12, "check": 22, "dtype": 7,
          "max_abs_error": 9, "result": 10, "blamed": 12}
DEFAULT_MIN_WIDTH = 6
NARROW = {"runtime": 5, "check": 13, "dtype": 7, "result": 8, "blamed": 9}
"""Widths where even the fewest columns do not fit at full width (80 columns): short forms
(f16 for float16, ref for reference) rather than fewer columns."""
NARROW_LABELS = {"max_abs_error": "Max error", "runtime": "Rt"}
# Richest first: the first whose columns leave CASE_FIT + DETAILS_MIN cells is used, else
# the last. Input goes first (synthetic case names carry the shape), then the details
# (the line under the table shows the reason of the row under the cursor in full).
CONFIGS: tuple[tuple[frozenset[str], bool], ...] = (
    (frozenset(), False),
    (frozenset({"input"}), False),
    (frozenset({"input"}), True),
    (frozenset({"input", "runtime"}), True),  # the Path column names other runtimes
    (frozenset({"input", "runtime", "details"}), True),
)
CASE_MIN, CASE_FIT, CASE_MAX = 20, 30, 40
DETAILS_MIN = 10
MARK_WIDTH = 2
NARROW_VALUES = {
    "dtype": {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16"},
    "result": RESULT_ABBREVIATIONS,
    "runtime": RUNTIME_SHORT,
}
DTYPE_SHORT = NARROW_VALUES["dtype"] | {"int64": "i64", "int32": "i32", "int8": "i8",
                                        "uint8": "u8"}
SHAPE_TAIL = re.compile(r" (\d+(?:x\d+)*|\[[\d,; \[\]]*\])$")
"""A case name's trailing shape ("… 3x4x10"): kept when the name is cut."""


def column_width(key: str, narrow: bool = False) -> int:
    """A fixed column's width: its own (narrowed where asked), else its header's."""
    if narrow and key in NARROW:
        return NARROW[key]
    if key in WIDTHS:
        return WIDTHS[key]
    label = next(c.label for c in COLUMNS if c.key == key)
    return max(DEFAULT_MIN_WIDTH, cell_len(label))


def _config(width: int) -> tuple[list[str], dict[str, int], bool]:
    keys = [c.key for c in COLUMNS]
    for dropped, narrow in CONFIGS:
        shown = [k for k in keys if k not in dropped]
        widths = {k: column_width(k, narrow) for k in keys if k not in FLEXIBLE}
        fixed = sum(widths[k] for k in shown if k in widths)
        details = DETAILS_MIN if "details" in shown else 0
        if MARK_WIDTH + fixed + len(shown) - 1 + CASE_FIT + details <= width:
            break
    return shown, widths, narrow


def layout(width: int) -> list[tuple[int, int]]:
    """(column index, width) of the columns that fit ``width`` cells."""
    keys = [c.key for c in COLUMNS]
    shown, widths, _ = _config(width)
    rest = width - MARK_WIDTH - sum(widths[k] for k in shown if k in widths) - (len(shown) - 1)
    if "details" not in shown:
        return [(keys.index(k), rest if k == "case" else widths[k]) for k in shown]
    case = max(CASE_MIN, min(CASE_MAX, rest - DETAILS_MIN))
    widths = {**widths, "case": case, "details": max(rest - case, 4)}
    return [(keys.index(k), widths[k]) for k in shown]


def header_label(key: str, width: int) -> str:
    """A column's header, its short form where the column is narrowed."""
    label = next(c.label for c in COLUMNS if c.key == key)
    short = NARROW_LABELS.get(key)
    return short if short is not None and cell_len(label) > width else label


def format_value(key: str, value: Any, width: int | None = None) -> str:
    """A cell's text: errors in short scientific notation, short forms where narrow."""
    if value is None:
        return "-"
    if key == "max_abs_error":
        v = float(value)
        if math.isnan(v):
            return "-"
        return "0" if v == 0 else f"{v:.2e}"
    # A name or reason from the run: its control characters shown, not sent to the terminal.
    text = for_terminal(str(value).replace("\n", " "))
    if key == "result":
        text = RESULT_WORDS.get(text, text)
    if width is not None and cell_len(text) > width:
        short = NARROW_VALUES.get(key, {}).get(str(value))
        if short is not None:
            return short
        if key == "dtype" and "→" in text:  # the input's dtype → the output's
            return "→".join(DTYPE_SHORT.get(part, part) for part in text.split("→"))
        if key == "case":
            return cut_keeping_shape(text, width)
    return text


def cut_keeping_shape(text: str, width: int) -> str:
    """A case name cut to ``width`` in its middle, so that its trailing shape stays."""
    tail = SHAPE_TAIL.search(text)
    if tail is None or cell_len(tail.group()) + 4 > width:
        return text
    head = text[:tail.start()]
    room = width - cell_len(tail.group()) - 1
    return set_cell_size(head, room) + "…" + tail.group()


COVERED_NOUN = {"optimization": "settings", "dtype": "dtypes"}
"""What a group's covered values are called when their names do not fit ("2 settings")."""


def covers_label(value: str, width: int, column: str = "") -> str:
    """What a group covers, in a cell: "all 4 levels", or its names, short where narrow."""
    names = [name for name, _ in split_covers(value)]
    if names == list(LEVEL_NAMES):
        return "all 4 levels" if width >= 12 else "4 levels"
    text = for_terminal(",".join(names))
    if cell_len(text) > width:
        text = ",".join(NARROW_VALUES["dtype"].get(n, n) for n in names)
    if cell_len(text) > width:
        text = f"{len(names)} {COVERED_NOUN.get(column, 'values')}"
    return text


def _fit(text: str, width: int, right: bool = False) -> str:
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else text[:width]
    pad = " " * (width - cell_len(text))
    return pad + text if right else text + pad


class EvaluationsTable(Widget, can_focus=True):
    """Rows of the evaluations query, drawn a line at a time from a page cache."""

    # Priority like the screen's keys: a priority binding runs as its key arrives, a plain
    # one after a round trip through the widget, so `down enter` typed in one burst would
    # open the row before the cursor moved.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False, priority=True),
        Binding("down,j", "cursor_down", "Down", show=False, priority=True),
        Binding("pageup", "page_up", "Page up", show=False, priority=True),
        Binding("pagedown", "page_down", "Page down", show=False, priority=True),
        Binding("home", "first", "First row", show=False, priority=True),
        Binding("end,G", "last", "Last row", show=False, priority=True),
        Binding("left,h", "column(-1)", "Column left", show=False, priority=True),
        Binding("right,l", "column(1)", "Column right", show=False, priority=True),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "evaluations-table--header",
        "evaluations-table--sorted",
        "evaluations-table--cursor",
        "evaluations-table--selected",
        "evaluations-table--placeholder",
        "evaluations-table--scrollbar",
        "evaluations-table--passed",
        "evaluations-table--divergence",
        "evaluations-table--contract_issue",
        "evaluations-table--execution",
    }

    DEFAULT_CSS = """
    EvaluationsTable { height: 1fr; }
    """

    cursor: reactive[int] = reactive(0, always_update=True)
    """Index of the highlighted row in the filtered, sorted result."""
    top: reactive[int] = reactive(0)
    """Index of the first row on screen."""
    row_count: reactive[int] = reactive(0)
    """Rows matching the current filter."""
    column: reactive[int] = reactive(0)
    """Index (in ``COLUMNS``) of the column under the column cursor (``F`` counts it)."""

    class PageNeeded(Message):
        """Rows from ``offset`` are on screen but not loaded."""

        def __init__(self, offset: int, limit: int) -> None:
            self.offset = offset
            self.limit = limit
            super().__init__()

    class CursorMoved(Message):
        """The highlighted row changed (``observation_id`` is None while it loads)."""

        def __init__(self, index: int, observation_id: str | None) -> None:
            self.index = index
            self.observation_id = observation_id
            super().__init__()

    class SortRequested(Message):
        """A column header was clicked."""

        def __init__(self, column: str) -> None:
            self.column = column
            super().__init__()

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._rows: dict[int, TableRow] = {}
        self._numbers: dict[int, int] = {}
        """Each loaded row's ``rn`` (the detail view reads the row by it)."""
        self._group_keys: dict[int, int] = {}
        """Grouped: each loaded row's group key (``space`` selects the group's rows)."""
        self._pending: set[int] = set()
        self._sort = TableSort()
        self.loading_text = "Loading evaluations…"
        """What the table says while it has no answer yet."""
        self.loaded = False
        self.grouped_column: str | None = None
        """The column that lists what each (grouped) row covers; None: rows are not grouped."""

    # -- data --------------------------------------------------------------------------

    def reset(self, row_count: int, page: Page) -> None:
        """Show a new query's result: its row count and first page."""
        self._rows.clear()
        self._numbers.clear()
        self._group_keys.clear()
        self._pending.clear()
        self.loaded = True
        self.set_reactive(EvaluationsTable.row_count, row_count)
        self.set_reactive(EvaluationsTable.top, 0)
        self.add_page(page)
        self.cursor = 0

    def add_page(self, page: Page) -> None:
        """Rows of a page that arrived; far-away pages are dropped to bound memory."""
        for i, row in enumerate(page.rows, start=page.offset):
            self._rows[i] = row
        self._numbers.update(enumerate(page.numbers, start=page.offset))
        self._group_keys.update(enumerate(page.groups, start=page.offset))
        self._pending.discard(page.offset)
        if len(self._rows) > KEEP_ROWS:
            keep = range(self.top - KEEP_ROWS // 2, self.top + KEEP_ROWS // 2)
            self._rows = {i: r for i, r in self._rows.items() if i in keep}
            self._numbers = {i: n for i, n in self._numbers.items() if i in keep}
            self._group_keys = {i: k for i, k in self._group_keys.items() if i in keep}
        self.refresh()
        if page.offset <= self.cursor < page.offset + len(page.rows):
            self._announce_cursor()

    def row(self, index: int) -> TableRow | None:
        """A loaded row (its cells by column key)."""
        return self._rows.get(index)

    @property
    def current_observation_id(self) -> str | None:
        row = self._rows.get(self.cursor)
        return None if row is None else row.observation_id

    @property
    def current_row_number(self) -> int | None:
        """The ``rn`` of the row under the cursor, when its page said."""
        return self._numbers.get(self.cursor) if self.cursor in self._rows else None

    @property
    def current_group_key(self) -> int | None:
        """The group key of the (grouped) row under the cursor, when its page said."""
        return self._group_keys.get(self.cursor) if self.cursor in self._rows else None

    def set_selected(self, index: int, selected: bool) -> None:
        """Mark a loaded row selected or not (the screen keeps the selection itself)."""
        row = self._rows.get(index)
        if row is not None:
            self._rows[index] = row._replace(selected=selected)
            self.refresh()

    def set_sort(self, sort: TableSort) -> None:
        self._sort = sort
        self.refresh()

    def loaded_range(self) -> range:
        """The rows the view needs: those on screen, from ``top``."""
        return range(self.top, min(self.row_count, self.top + self.visible_rows))

    # -- geometry ----------------------------------------------------------------------

    @property
    def visible_rows(self) -> int:
        return max(self.size.height - 1, 1)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return container.height

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, self.row_count - 1)) if self.row_count else 0

    def validate_top(self, value: int) -> int:
        return max(0, min(value, self.row_count - self.visible_rows))

    def watch_cursor(self, value: int) -> None:
        if value < self.top:
            self.top = value
        elif value >= self.top + self.visible_rows:
            self.top = value - self.visible_rows + 1
        self.refresh()
        self._announce_cursor()

    def watch_top(self) -> None:
        self.refresh()

    def _announce_cursor(self) -> None:
        self.post_message(self.CursorMoved(self.cursor, self.current_observation_id))

    # -- keys and mouse ----------------------------------------------------------------

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_page_up(self) -> None:
        self.top -= self.visible_rows
        self.cursor -= self.visible_rows

    def action_page_down(self) -> None:
        self.top += self.visible_rows
        self.cursor += self.visible_rows

    def action_column(self, step: int) -> None:
        """Move the column cursor to the next shown column left or right."""
        shown = [index for index, _ in layout(self.size.width - 1)]
        here = shown.index(self.column) if self.column in shown else 0
        self.column = shown[max(0, min(len(shown) - 1, here + step))]
        self.refresh()

    @property
    def column_key(self) -> str:
        """The key of the column under the column cursor."""
        return COLUMNS[self.column].key

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = self.row_count - 1

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.top += 3
        self.cursor = max(self.cursor, self.top)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.top -= 3
        self.cursor = min(self.cursor, self.top + self.visible_rows - 1)

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            x = MARK_WIDTH
            for index, width in layout(self.size.width - 1):
                if x <= event.x < x + width + 1:
                    self.post_message(self.SortRequested(COLUMNS[index].key))
                    return
                x += width + 1
        elif self.row_count:
            self.cursor = self.top + event.y - 1

    # -- drawing -----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scrollbar = self.row_count > self.visible_rows
        columns = layout(width - (1 if scrollbar else 0))
        base = self.rich_style
        if y == 0:
            strip = self._header(columns, width)
        else:
            index = self.top + y - 1
            if index >= self.row_count:
                if index == 0:
                    text = self.loading_text if not self.loaded else "No evaluations match."
                    style = self.get_component_rich_style("evaluations-table--placeholder")
                    return Strip([Segment(_fit("  " + for_terminal(text), width), style)],
                                 width)
                return Strip.blank(width, base)
            strip = self._row(index, columns, width - (1 if scrollbar else 0))
            if scrollbar:
                strip = Strip([*strip, self._thumb(y - 1)], width)
        return strip

    def _header(self, columns: list[tuple[int, int]], width: int) -> Strip:
        header = self.get_component_rich_style("evaluations-table--header")
        sorted_style = header + self.get_component_rich_style("evaluations-table--sorted")
        segments = [Segment(" " * (MARK_WIDTH - 1), header)]
        for index, w in columns:
            column = COLUMNS[index]
            label = header_label(column.key, w)
            style = header
            arrow = " "
            if column.key == self._sort.column:
                # The arrow in the cell before the column: the label keeps its room.
                arrow = "▼" if self._sort.descending else "▲"
                style = sorted_style
            segments.append(Segment(arrow, style))
            if index == self.column:
                # The column cursor: underlined and reversed, not only a colour.
                style = style + Style(reverse=True, underline=True)
            segments.append(Segment(_fit(label, w, right=column.numeric), style))
        return Strip(segments).adjust_cell_length(width, header)

    def _row(self, index: int, columns: list[tuple[int, int]], width: int) -> Strip:
        row = self._rows.get(index)
        base = self.rich_style
        if row is None:
            self._request(index)
            style = self.get_component_rich_style("evaluations-table--placeholder")
            if index == self.cursor:
                style = style + self.get_component_rich_style("evaluations-table--cursor")
            return Strip([Segment(_fit("  …", width), style)], width)
        selected = row.selected
        line_style: Style = base
        if selected:
            line_style = line_style + self.get_component_rich_style("evaluations-table--selected")
        if index == self.cursor:
            line_style = line_style + self.get_component_rich_style("evaluations-table--cursor")
        segments = [Segment("● " if selected else "  ", line_style)]
        for n, (col, w) in enumerate(columns):
            column = COLUMNS[col]
            value = row.cells.get(column.key)
            if column.key == self.grouped_column:
                value = covers_label(str(value), w, column.key)
            text = _fit(format_value(column.key, value, w), w, right=column.numeric)
            style = line_style
            if column.key == "result":
                style = line_style + self.get_component_rich_style(
                    f"evaluations-table--{row.cells.get('result')}", partial=True,
                    default=Style())
            segments.append(Segment(text, style))
            if n < len(columns) - 1:
                segments.append(Segment(" ", line_style))
        return Strip(segments).adjust_cell_length(width, line_style)

    def _thumb(self, line: int) -> Segment:
        rows, visible = self.row_count, self.visible_rows
        size = max(1, visible * visible // max(rows, 1))
        start = (visible - size) * self.top // max(rows - visible, 1)
        style = self.get_component_rich_style("evaluations-table--scrollbar")
        return Segment("▐" if start <= line < start + size else " ", style)

    def _request(self, index: int) -> None:
        offset = index - index % PAGE_SIZE
        if offset not in self._pending:
            self._pending.add(offset)
            self.post_message(self.PageNeeded(offset, PAGE_SIZE))
