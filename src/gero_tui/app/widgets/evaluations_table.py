"""A virtual table of evaluations: it knows how many rows match, and holds only a few pages.

Rows arrive as pages from a query worker (``add_page``); a row that is scrolled into view
before its page has arrived is drawn as a placeholder and its page is asked for with
``PageNeeded``. Nothing here queries anything: the screen owns the data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
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
    ColumnContent,
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

# Column widths come from the run's values (``content``: the longest of each of
# ``WIDTH_COLUMNS``, from ``TableQuery.content_widths`` and the rows loaded), so that the
# names that tell rows apart (case, path, check, blamed) are not cut where they fit: at 120
# columns "model:fp16:vs-fp32" and "model:fp16:vs-model" were both "model:fp16:v…". The
# Details column takes what is left (the line under the table shows the whole reason). The
# other columns' values are short and known: their widths are fixed. A column named nowhere
# is as wide as its header (``column_width``).
FLEXIBLE = ("case", "details")
WIDTHS = {"runtime": 7, "max_abs_error": 9, "result": 10}
NARROW = {"runtime": 5, "max_abs_error": 8, "result": 6, "dtype": 5}
"""Widths where the columns do not fit at full width: short forms (f16 for float16, ref for
reference, div for divergence) rather than fewer columns."""
UNKNOWN_CONTENT = {"case": 30, "input": 9, "optimization": 12, "check": 22, "dtype": 7,
                   "blamed": 12}
"""Widths while the run's values are not known yet (its first rows have not arrived)."""
CONTENT_MAX = {"case": 40, "input": 24, "optimization": 30, "check": 32, "blamed": 30,
               "dtype": 16}
"""No wider than this however long a value: the rest goes to the details."""
FLOORS = {"case": 16, "check": 10, "optimization": 9, "blamed": 9, "input": 5}
"""How narrow a content column may be cut where even the fewest columns do not fit
(80 columns), widest first. Never the Release column: a cut version reads as another."""
NARROW_LABELS = {"max_abs_error": "|a−r|", "runtime": "Rt", "case": "Case"}
# Richest first: the first whose columns fit with DETAILS_MIN cells of details is used, else
# the last. Input goes first (synthetic case names carry the shape), then the details (the
# line under the table shows the reason of the row under the cursor in full).
CONFIGS: tuple[tuple[frozenset[str], bool], ...] = (
    (frozenset(), False),
    (frozenset({"input"}), False),
    (frozenset({"input"}), True),
    (frozenset({"input", "runtime"}), True),  # the Path column names other runtimes
    (frozenset({"input", "runtime", "details"}), True),
)
DETAILS_MIN = 10
MARK_WIDTH = 2
NARROW_VALUES = {
    "dtype": {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16"},
    "result": RESULT_ABBREVIATIONS,
    "runtime": RUNTIME_SHORT,
}
DTYPE_SHORT = NARROW_VALUES["dtype"] | {"int64": "i64", "int32": "i32", "int8": "i8",
                                        "uint8": "u8"}
ARROW_DTYPE = 7
"""A narrow dtype column holding an input → output pair ("f32→i64")."""
CUT_APART = ("optimization", "check", "blamed")
"""Columns with few values, cut (where they must be) around an ellipsis placed so that no two
of the run's values read the same: "tract:u…ized" and "tract:o…ized", where the middle
("tract:…mized") or the end ("tract:unop…", "tract:opti…" at 11) would not always do."""
SHAPE_TAIL = re.compile(r" (\d+(?:x\d+)*|\[[\d,; \[\]]*\])$")
"""A case name's trailing shape ("… 3x4x10"): kept when the name is cut."""


def column_width(key: str, narrow: bool = False,
                 content: Mapping[str, int] | None = None) -> int:
    """A column's width: from the run's values (``content``) for a content column, its fixed
    width (narrowed where asked) otherwise, else its header's."""
    label = next(c.label for c in COLUMNS if c.key == key)
    if key == RELEASE:
        return max(len(label), min((content or {}).get(key, 0), RELEASE_MAX))
    if key in UNKNOWN_CONTENT:
        longest = (content or UNKNOWN_CONTENT).get(key, UNKNOWN_CONTENT[key])
        if key == "dtype" and narrow:
            # f16, bf16, i64: five cells with the header; an input → output pair seven
            return ARROW_DTYPE if longest > len("bfloat16") else min(longest, NARROW["dtype"])
        header = len(NARROW_LABELS.get(key, label))
        return max(header, min(longest, CONTENT_MAX[key]), 1)
    if narrow and key in NARROW:
        return NARROW[key]
    if key in WIDTHS:
        return WIDTHS[key]
    return max(DEFAULT_MIN_WIDTH, cell_len(label))


DEFAULT_MIN_WIDTH = 6
RELEASE = "release"
"""The Release column (issue 42): shown only where the run names a runtime's release
(``content`` says how wide, 0 where it names none), so other runs' tables keep their room."""
RELEASE_MAX = len("2025.10.0 vs 2024.6.0")


def _config(width: int, content: Mapping[str, int] | None
            ) -> tuple[list[str], dict[str, int]]:
    """The columns shown and their widths (details aside): the richest configuration whose
    columns fit, else the last one's."""
    keys = [c.key for c in COLUMNS if c.key != RELEASE or (content or {}).get(RELEASE)]
    shown: list[str] = []
    widths: dict[str, int] = {}
    for dropped, narrow in CONFIGS:
        shown = [k for k in keys if k not in dropped]
        widths = {k: column_width(k, narrow, content) for k in shown if k != "details"}
        details = DETAILS_MIN if "details" in shown else 0
        if MARK_WIDTH + sum(widths.values()) + len(shown) - 1 + details <= width:
            break
    return shown, widths


def layout(width: int, content: Mapping[str, int] | None = None) -> list[tuple[int, int]]:
    """(column index, width) of the columns that fit ``width`` cells, sized from the run's
    values (``content``; None: not known yet)."""
    keys = [c.key for c in COLUMNS]
    shown, widths = _config(width, content)
    rest = width - MARK_WIDTH - sum(widths.values()) - (len(shown) - 1)
    if "details" in shown:
        widths["details"] = max(rest, 4)
    elif rest < 0:
        _shrink(widths, -rest)
    return [(keys.index(k), widths[k]) for k in shown]


def _shrink(widths: dict[str, int], excess: int) -> None:
    """Take ``excess`` cells from the widest content columns, down to their floors."""
    while excess > 0:
        cuttable = [k for k in FLOORS if k in widths and widths[k] > FLOORS[k]]
        if not cuttable:
            return
        widest = max(cuttable, key=lambda k: widths[k])
        widths[widest] -= 1
        excess -= 1


def header_label(key: str, width: int) -> str:
    """A column's header, its short form where the column is narrowed."""
    label = next(c.label for c in COLUMNS if c.key == key)
    short = NARROW_LABELS.get(key)
    return short if short is not None and cell_len(label) > width else label


def format_value(key: str, value: Any, width: int | None = None,
                 cuts: Mapping[str, str] | None = None) -> str:
    """A cell's text: errors in short scientific notation, short forms where narrow;
    ``cuts``: how a value of ``CUT_APART`` too long for ``width`` reads (``cut_apart``)."""
    if value is None:
        return "-"
    if key == "max_abs_error":
        v = float(value)
        if math.isnan(v):
            return "-"
        text = "0" if v == 0 else f"{v:.2e}"
        # a three-digit exponent (4.49e+307) in 8 cells: one digit less, not cut
        return f"{v:.1e}" if width is not None and len(text) > width else text
    # A name or reason from the run: its control characters shown, not sent to the terminal.
    text = for_terminal(str(value).replace("\n", " "))
    if key == "result":
        text = RESULT_WORDS.get(text, text)
    if width is not None and cell_len(text) > width:
        short = NARROW_VALUES.get(key, {}).get(str(value))
        if short is None and key == "runtime":  # a release: the Release column has its version
            short = RUNTIME_SHORT.get(str(value).partition("==")[0])
        if short is not None:
            return short
        if key == "dtype" and "→" in text:  # the input's dtype → the output's
            return "→".join(DTYPE_SHORT.get(part, part) for part in text.split("→"))
        if key == "case":
            return cut_keeping_shape(text, width)
        if key in CUT_APART:
            cut = (cuts or {}).get(str(value))
            return cut if cut is not None else cut_around(text, width, width // 2)
    return text


def cut_keeping_shape(text: str, width: int) -> str:
    """A case name cut to ``width`` in its middle, so that its trailing shape stays."""
    tail = SHAPE_TAIL.search(text)
    if tail is None or cell_len(tail.group()) + 4 > width:
        return text
    head = text[:tail.start()]
    room = width - cell_len(tail.group()) - 1
    return set_cell_size(head, room) + "…" + tail.group()


def cut_around(text: str, width: int, head: int) -> str:
    """``text`` in ``width`` cells: its first ``head`` cells, an ellipsis, then its end."""
    if cell_len(text) <= width or width < 3:
        return text
    head = max(0, min(head, width - 1))
    return set_cell_size(text, head) + "…" + _last_cells(text, width - 1 - head)


def cut_apart(values: Sequence[str], width: int) -> dict[str, str]:
    """How each of ``values`` reads in ``width`` cells: whole where it fits, else cut around
    one ellipsis at the split (the same for all) nearest the middle that keeps most of them
    apart; values that would still read the same are each shown around where they differ
    ("…nt8-dynami…", "…nt8-static…": no split of 12 cells tells those two apart)."""
    shown = {v: v for v in values if cell_len(v) <= width}
    long = sorted({v for v in values if cell_len(v) > width})
    if not long or width < 5:
        return shown | {v: cut_around(v, width, width // 2) for v in long}
    splits = sorted(range(width), key=lambda h: (abs(h - width // 2), -h))
    head = max(splits, key=lambda h: len({cut_around(v, width, h) for v in long}))
    texts = {v: cut_around(v, width, head) for v in long}
    groups: dict[str, list[str]] = {}
    for v, text in texts.items():
        groups.setdefault(text, []).append(v)
    taken = {*shown.values(), *(text for text, group in groups.items() if len(group) == 1)}
    for group in (g for g in groups.values() if len(g) > 1):
        differ = _shared_start(group)
        for v in group:
            text = _window(v, width, differ)
            if text in taken:  # (a third value): the first split no other reads as
                text = next((t for h in splits if (t := cut_around(v, width, h)) not in taken),
                            text)
            texts[v] = text
            taken.add(text)
    return shown | texts


def _shared_start(values: Sequence[str]) -> int:
    """How many first characters all of ``values`` share."""
    n = 0
    while all(len(v) > n and v[n] == values[0][n] for v in values):
        n += 1
    return n


def _window(text: str, width: int, at: int) -> str:
    """``text`` in ``width`` cells around its character ``at``, an ellipsis on each side it
    is cut."""
    room = width - 2
    start = max(1, at - room // 3)
    if start + room + 1 >= len(text):  # the end is in reach: one ellipsis, before it
        return "…" + _last_cells(text, width - 1)
    return "…" + set_cell_size(text[start:], room) + "…"


def _last_cells(text: str, cells: int) -> str:
    """The end of ``text`` that fits ``cells`` cells."""
    out = ""
    for char in reversed(text):
        if cell_len(char + out) > cells:
            break
        out = char + out
    return out


GROUPED_MIN = len("all 4 levels")
"""The grouped column's width at least: what a group covers, in words."""
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
        self.run_content: ColumnContent | None = None
        """The run's longest values and its few-valued columns' values
        (``TableQuery.content``); None until the screen has read them."""
        self._seen_widths: dict[str, int] = {}
        """The longest value of each content column among the rows loaded so far."""
        self._layout: tuple[tuple[int, int, str | None], list[tuple[int, int]],
                            dict[str, dict[str, str]]] | None = None
        """The last layout and how it cuts each ``CUT_APART`` column (``cut_apart``), by
        (width, ``_widths_version``, ``grouped_column``): every line drawn asks for it."""
        self._widths_version = 0

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
            self._measure(row)
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

    def _measure(self, row: TableRow) -> None:
        """Widen the content columns to a loaded row's values (until the run's are known;
        a grouped column holds what its group covers, not a value)."""
        for key in UNKNOWN_CONTENT:
            value = row.cells.get(key)
            if value is not None and key != self.grouped_column:
                width = cell_len(format_value(key, value))
                if width > self._seen_widths.get(key, 0):
                    self._seen_widths[key] = width
                    self._widths_version += 1

    def set_run_content(self, content: ColumnContent | None) -> None:
        """The run's longest values (None: another run, not known yet)."""
        self.run_content = content
        self._widths_version += 1
        if content is None:
            self._seen_widths.clear()
            for row in self._rows.values():
                self._measure(row)
        self.refresh()

    @property
    def content(self) -> dict[str, int] | None:
        """What the columns are sized from: the run's longest values, or the rows' so far."""
        run = self.run_content.widths if self.run_content is not None else {}
        if not self._seen_widths and not run:
            return None
        content = {k: max(self._seen_widths.get(k, 0), run.get(k, 0)) for k in UNKNOWN_CONTENT}
        content[RELEASE] = run.get(RELEASE, 0)  # the run's alone: whether it names releases
        if self.grouped_column in content:  # it says what each group covers
            content[self.grouped_column] = max(content[self.grouped_column], GROUPED_MIN)
        return content

    def columns_for(self, width: int) -> list[tuple[int, int]]:
        """The columns shown in ``width`` cells, and their widths."""
        return self._laid_out(width)[0]

    def _laid_out(self, width: int
                  ) -> tuple[list[tuple[int, int]], dict[str, dict[str, str]]]:
        """``columns_for``, and how each ``CUT_APART`` column's values read (``cut_apart``)."""
        key = (width, self._widths_version, self.grouped_column)
        if self._layout is None or self._layout[0] != key:
            columns = layout(width, self.content)
            values = self.run_content.values if self.run_content is not None else {}
            cuts = {COLUMNS[i].key: cut_apart(values.get(COLUMNS[i].key, []), w)
                    for i, w in columns if COLUMNS[i].key in CUT_APART}
            self._layout = (key, columns, cuts)
        return self._layout[1], self._layout[2]

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
        shown = [index for index, _ in self.columns_for(self.size.width - 1)]
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
            for index, width in self.columns_for(self.size.width - 1):
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
        columns = self.columns_for(width - (1 if scrollbar else 0))
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
            strip = self._row(index, columns, width - (1 if scrollbar else 0),
                              self._laid_out(width - (1 if scrollbar else 0))[1])
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

    def _row(self, index: int, columns: list[tuple[int, int]], width: int,
             cuts: dict[str, dict[str, str]]) -> Strip:
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
            text = _fit(format_value(column.key, value, w, cuts.get(column.key)), w,
                        right=column.numeric)
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
