"""Actual, reference and |actual − reference| side by side, one 2-d plane of an N-d tensor.

Keys move a cursor through the plane, choose which two axes are displayed, step through the
others, jump to the worst element, and `l` switches the layout (side by side, stacked, one
pane at a time: the default follows the room, so 80 columns stay readable). Out-of-tolerance
cells are drawn on red, NaN and ±inf in magenta, the cursor in reverse video; values keep the
digits their dtype can hold.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widget import Widget

from gero.query.slicing import TensorCursor
from gero.query.tensors import ElementAnalysis, Evidence, element_status, element_ulp
from gero_runner.escape import for_terminal

# Significant digits shown per dtype: float16 values print with their shortest round-trip
# form (never more than 5 digits); wider types are capped so a cell stays readable.
_PRECISION = {"float16": None, "float32": 8, "float64": 10}
MISMATCH = "bold white on dark_red"
NONFINITE = "bold magenta"
CURSOR = "reverse"


def format_element(value: Any, dtype: np.dtype[Any]) -> str:
    """A value with the digits its dtype holds (shortest round-trip repr, capped)."""
    if dtype.kind != "f":
        return str(int(value))
    x = dtype.type(value)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    precision = _PRECISION.get(dtype.name, 10)
    magnitude = abs(float(x))
    if magnitude != 0 and (magnitude >= 1e5 or magnitude < 1e-3):
        return np.format_float_scientific(x, unique=True, precision=precision, trim="-",
                                          exp_digits=1)
    return np.format_float_positional(x, unique=True, precision=precision, trim="-")


def format_difference(value: float) -> str:
    if math.isnan(value):
        return "≠"
    return "0" if value == 0 else f"{value:.1e}"


def side_label(relative: str) -> str:
    """'outputs/ort-all/output_0.npy' -> 'ort-all'; other evidence files keep their path."""
    parts = relative.removesuffix(".npy").split("/")
    if len(parts) == 3 and parts[0] == "outputs":
        return parts[1] if parts[2] == "output_0" else f"{parts[1]}[{parts[2][7:]}]"
    return "/".join(parts)


def window_text(r0: int, r1: int, n_rows: int, c0: int, c1: int, n_cols: int) -> Text:
    """Which rows and columns of the plane are on screen, and where more lie (← → ↑ ↓)."""
    text = Text()
    for name, lo, hi, n, before, after in (("rows", r0, r1, n_rows, "↑", "↓"),
                                           ("columns", c0, c1, n_cols, "←", "→")):
        if n <= 1:
            continue
        if name == "columns" and n_rows > 1:
            text.append(" · ")
        arrows = (before if lo > 0 else "") + (after if hi < n else "")
        text.append(f"{name} {lo}–{hi - 1} of {n}", style="bold" if arrows else "")
        if arrows:
            text.append(f" {arrows}", style="bold yellow")
    return text


# The keys of a view that walks a 2-d plane of an N-d tensor (this one and the Inputs view):
# each view binds them to its actions move, step, step_axis and cycle_axis.
MOVE_BINDINGS: list[BindingType] = [
    Binding("up", "move(-1, 0)", "up", show=False),
    Binding("down", "move(1, 0)", "down", show=False),
    Binding("left", "move(0, -1)", "left", show=False),
    Binding("right", "move(0, 1)", "right", show=False),
    Binding("pageup", "move(-10, 0)", show=False),
    Binding("pagedown", "move(10, 0)", show=False),
]
SLICE_BINDINGS: list[BindingType] = [
    Binding("left_square_bracket", "step(-1)", "prev slice"),
    Binding("right_square_bracket", "step(1)", "next slice"),
    Binding("s", "step_axis", "slice axis"),
    Binding("y", "cycle_axis('row')", "row axis"),
    Binding("x", "cycle_axis('col')", "col axis"),
]


STACKED_ROWS = 2
"""Rows each stacked pane needs at least: the cursor's row and one more."""
SIDE_COLUMNS = 2
"""Columns each of three panes side by side shows at least (or the plane's all); fewer,
and the difference pane gives way to the other two (its |a−r| is on the status line, the
cells outside tolerance are marked in both)."""
SIDE_MIN_WIDTH = 40
"""Cells from which two panes side by side are the default (80 columns are: one pane at a
time, or three stacked rows apiece, showed little of the plane)."""
PANE_GAP = 2
"""Cells between two panes side by side."""


def _cell_widths(actual: np.ndarray, reference: np.ndarray, ev: Evidence) -> tuple[int, int]:
    """Widths of the value cells and of the difference cells these values need."""
    shown = [format_element(v, ev.actual.dtype) for v in actual.reshape(-1)]
    shown += [format_element(v, ev.reference.dtype) for v in reference.reshape(-1)]
    d, _, _ = element_status(actual, reference, ev.atol, ev.rtol)
    diffs = [format_difference(float(v)) for v in np.asarray(d).reshape(-1)]
    return max([len(t) for t in shown] + [2]), max([len(t) for t in diffs] + [2])


def _columns_that_fit(cells: list[int], label_width: int, width: int, layout: str) -> int:
    """Columns each pane shows: side by side, the panes (cell widths ``cells``) share the
    width; otherwise each pane has it all."""
    if layout == "side":
        fixed = len(cells) * (label_width + 1) + PANE_GAP * (len(cells) - 1)
        return max(1, (width - fixed) // sum(w + 1 for w in cells))
    return max(1, (width - label_width - 1) // (max(cells) + 1))


LAYOUTS = ("side", "stacked", "actual", "reference", "difference")
LAYOUT_NAMES = {"side": "side by side", "stacked": "stacked", "actual": "actual only",
                "reference": "reference only", "difference": "difference only"}
_PANES: dict[str, tuple[str, ...]] = {
    "side": ("actual", "reference", "difference"),
    "stacked": ("actual", "reference", "difference"),
    "actual": ("actual",), "reference": ("reference",), "difference": ("difference",),
}


class TensorView(Widget, can_focus=True):
    """The side-by-side view of one observation's tensors."""

    DEFAULT_CSS = """
    TensorView { height: 1fr; padding: 0 1; }
    TensorView:focus { background: $boost; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *MOVE_BINDINGS,
        Binding("w", "worst", "worst excess",
                tooltip="The element furthest outside its tolerance"),
        Binding("W", "largest", "largest |a−r|",
                tooltip="The element with the largest |a − r| (it can be within tolerance)"),
        *SLICE_BINDINGS,
        Binding("l", "cycle_layout", "layout"),
    ]

    version: reactive[int] = reactive(0, layout=False)
    """Bumped on every cursor change so the view repaints."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.evidence: Evidence | None = None
        self.analysis: ElementAnalysis | None = None
        self.cursor: TensorCursor | None = None
        self.labels: tuple[str, str] = ("actual", "reference")
        self.message = "loading evidence…"
        self.layout_mode: str | None = None
        """One of LAYOUTS once chosen with `l`; None: by the room (see current_layout)."""
        self.auto_axes = True
        """Whether the plane's orientation follows the room (until `x` or `y` chooses)."""
        self._oriented_for: tuple[object, ...] | None = None

    def show(self, evidence: Evidence, analysis: ElementAnalysis,
             labels: tuple[str, str] | None = None) -> None:
        """Display these tensors; the cursor starts on the element furthest outside its
        tolerance (``w``), else on the largest |a − r|."""
        self.evidence, self.analysis = evidence, analysis
        self.labels = labels or (side_label(evidence.actual_file),
                                 side_label(evidence.reference_file))
        self.cursor = TensorCursor(tuple(evidence.actual.shape))
        self.auto_axes, self._oriented_for = True, None
        self.action_worst()

    def show_message(self, message: str) -> None:
        self.evidence = self.analysis = self.cursor = None
        self.message = message
        self.version += 1

    # Actions --------------------------------------------------------------------------------
    def action_move(self, rows: int, cols: int) -> None:
        if self.cursor:
            self.cursor.move(rows, cols)
            self.version += 1

    def action_step(self, delta: int) -> None:
        if self.cursor:
            self.cursor.step(delta)
            self.version += 1

    def action_step_axis(self) -> None:
        if self.cursor:
            self.cursor.next_step_axis()
            self.version += 1

    def action_cycle_axis(self, which: str) -> None:
        if self.cursor:
            self.auto_axes = False
            self.cursor.cycle_axis(which)
            self.version += 1

    def action_cycle_layout(self) -> None:
        """Side by side → stacked → actual only → reference only → difference only."""
        current = self.current_layout()
        self.layout_mode = LAYOUTS[(LAYOUTS.index(current) + 1) % len(LAYOUTS)]
        self.version += 1

    def action_worst(self) -> None:
        """The element furthest outside its tolerance (the one that fails), else the
        largest |a − r|."""
        if self.cursor and self.analysis:
            if self.analysis.worst_excess is not None:
                self.cursor.jump(self.analysis.worst_excess)
            elif self.analysis.worst:
                self.cursor.jump(self.analysis.worst[0].index)
        self.version += 1

    def action_largest(self) -> None:
        """The largest |a − r|, inside tolerance or not."""
        if self.cursor and self.analysis and self.analysis.worst:
            self.cursor.jump(self.analysis.worst[0].index)
        self.version += 1

    def jump(self, index: tuple[int, ...]) -> None:
        if self.cursor:
            self.cursor.jump(index)
            self.version += 1

    # Rendering ------------------------------------------------------------------------------
    def render(self) -> RenderableType:
        ev, an, cur = self.evidence, self.analysis, self.cursor
        if ev is None or an is None or cur is None:
            return Text(for_terminal(self.message, newlines=True))
        if ev.actual.size == 0:
            return Text(f"empty tensors (shape {list(ev.actual.shape)}): no elements to show")
        dtype, ref_dtype = ev.actual.dtype, ev.reference.dtype
        layout = self.current_layout()
        width = self.size.width - 2  # the padding
        panes = self._side_panes(ev, cur, width) if layout == "side" else _PANES[layout]
        status_lines = 2
        if layout == "stacked":
            # Each pane: its title, the column header, then its rows.
            height = max(1, (self.size.height - status_lines) // len(panes) - 2)
        else:
            height = max(1, self.size.height - status_lines - 3)
        if self.auto_axes:
            self._orient(ev, cur, panes, layout, height, width)
        a = cur.plane(ev.actual)
        r_plane = cur.plane(ev.reference)
        row_pos, col_pos = cur.index[cur.row_axis], cur.index[cur.col_axis]
        n_rows, n_cols = a.shape
        r0, r1 = TensorCursor.window(row_pos, n_rows, height)
        label_width = len(str(n_rows - 1)) + 1
        # Cell widths from the values in view only (formatting is the costly part): a first
        # guess of the columns, then the widths their values need, then the columns that fit.
        c0, c1 = TensorCursor.window(col_pos, n_cols, max(1, width // 8))
        value_width, diff_width = _cell_widths(a[r0:r1, c0:c1], r_plane[r0:r1, c0:c1], ev)
        widths_of = {"actual": value_width, "reference": value_width, "difference": diff_width}
        cells = [widths_of[p] for p in panes]
        fit = _columns_that_fit(cells, label_width, width, layout)
        c0, c1 = TensorCursor.window(col_pos, n_cols, fit)
        pane_widths = [min(label_width + 1 + (c1 - c0) * (w + 1), width) for w in cells]
        pane = max(pane_widths)
        # Differences and marks for the cells on screen only (window coordinates).
        d, bad, nonfinite = element_status(a[r0:r1, c0:c1], r_plane[r0:r1, c0:c1],
                                           ev.atol, ev.rtol)

        def pane_text(title: str, cell: object, width: int) -> Text:
            text = Text(no_wrap=True, overflow="ellipsis")
            text.append(for_terminal(title)[:pane] + "\n", style="bold")
            text.append(" " * label_width + "│")
            text.append("".join(f"{j:>{width}} " for j in range(c0, c1)) + "\n", style="dim")
            for i in range(r0, r1):
                text.append(f"{i:>{label_width}}│", style="dim")
                for j in range(c0, c1):
                    value = cell(i, j)  # type: ignore[operator]
                    style = ""
                    if bad[i - r0, j - c0]:
                        style = MISMATCH
                    elif nonfinite[i - r0, j - c0]:
                        style = NONFINITE
                    if i == row_pos and j == col_pos:
                        style = f"{style} {CURSOR}".strip()
                    text.append(f"{value:>{width}}", style=style)
                    text.append(" ")
                if i < r1 - 1:
                    text.append("\n")
            return text

        makers = {
            "actual": lambda: pane_text(self.labels[0], lambda i, j: format_element(
                a[i, j], dtype), value_width),
            "reference": lambda: pane_text(self.labels[1], lambda i, j: format_element(
                r_plane[i, j], ref_dtype), value_width),
            "difference": lambda: pane_text("|difference|", lambda i, j: format_difference(
                float(d[i - r0, j - c0])), diff_width),
        }
        rendered = [makers[p]() for p in panes]
        if len(panes) == 1:  # say which side this is
            rendered[0] = Text.assemble((f"{panes[0]}: ", "bold"), rendered[0])
        if layout == "side":
            grid = Table.grid(padding=(0, PANE_GAP))
            for w in pane_widths:
                grid.add_column(width=max(w, 12), no_wrap=True)
            grid.add_row(*rendered)
            body: RenderableType = grid
        else:
            body = Group(*rendered)
        window = window_text(r0, r1, n_rows, c0, c1, n_cols)
        return Group(body, self._status(ev, an, cur, layout, window, len(panes)))

    def _side_panes(self, ev: Evidence, cur: TensorCursor, width: int) -> tuple[str, ...]:
        """Side by side: the three panes where each shows ``SIDE_COLUMNS`` columns (or the
        plane's all), else actual and reference, two panes."""
        a, r_plane = cur.plane(ev.actual), cur.plane(ev.reference)
        n_rows, n_cols = a.shape
        sample = (slice(0, min(n_rows, 16)), slice(0, min(n_cols, 16)))
        value_width, diff_width = _cell_widths(a[sample], r_plane[sample], ev)
        label_width = len(str(n_rows - 1)) + 1
        fit = _columns_that_fit([value_width, value_width, diff_width], label_width, width,
                                "side")
        return _PANES["side"] if fit >= min(n_cols, SIDE_COLUMNS) else ("actual", "reference")

    def _orient(self, ev: Evidence, cur: TensorCursor, panes: tuple[str, ...], layout: str,
                height: int, width: int) -> None:
        """Transpose the plane where that shows more of it: a short, wide plane (3×24) fits
        the room better as 24 rows of 3 than as 3 rows of the few columns that fit."""
        room = (id(ev), tuple(cur.dims), layout, height, width)
        if room == self._oriented_for:
            return  # decided for this room: cursor moves keep the orientation
        self._oriented_for = room
        a = cur.plane(ev.actual)
        r_plane = cur.plane(ev.reference)
        n_rows, n_cols = a.shape
        if n_rows == n_cols:
            return
        sample = (slice(0, min(n_rows, 16)), slice(0, min(n_cols, 16)))
        value_width, diff_width = _cell_widths(a[sample], r_plane[sample], ev)
        widths_of = {"actual": value_width, "reference": value_width, "difference": diff_width}
        cells = [widths_of[p] for p in panes]

        def shown(rows: int, cols: int) -> int:
            fit = _columns_that_fit(cells, len(str(rows - 1)) + 1, width, layout)
            return min(rows, height) * min(cols, fit)

        if shown(n_cols, n_rows) > shown(n_rows, n_cols):
            cur.swap_axes()

    def current_layout(self) -> str:
        """The chosen layout, or by the room: side by side (three panes, or two at 80
        columns: ``_side_panes``), else stacked where each pane keeps ``STACKED_ROWS`` rows,
        else one pane (actual) at a time."""
        if self.layout_mode is not None:
            return self.layout_mode
        if self.size.width >= SIDE_MIN_WIDTH:
            return "side"
        if (self.size.height - 2) // 3 - 2 >= STACKED_ROWS:
            return "stacked"
        return "actual"

    def _status(self, ev: Evidence, an: ElementAnalysis, cur: TensorCursor,
                layout: str, window: Text | None = None, panes: int = 3) -> Text:
        index = cur.original_index
        flat_a = ev.actual[index] if index else ev.actual[()]
        flat_r = ev.reference[index] if index else ev.reference[()]
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"plane x{cur.describe()}", style="bold")
        if window is not None:
            text.append("  ")
            text.append(window)
        name = LAYOUT_NAMES[layout]
        if layout == "side" and panes == 2:
            name += " (|a−r| below)"
        text.append(f"  [l] {name}\n", style="dim")
        # The verdict first: at 80 columns the end of this line may be cut.
        d, bad, _ = element_status(np.asarray(flat_a), np.asarray(flat_r), ev.atol, ev.rtol)
        diff, mism = float(d), bool(bad)
        text.append(f"{list(index)} ")
        text.append("OUT OF TOLERANCE" if mism else "within tolerance",
                    style=MISMATCH if mism else "green")
        text.append(f"  {format_element(flat_a, ev.actual.dtype)} vs "
                    f"{format_element(flat_r, ev.reference.dtype)}  |a−r| "
                    f"{format_difference(diff)}")
        if ev.actual.dtype.kind == "f" and not math.isnan(diff):
            text.append(f"  ULP {element_ulp(flat_a, flat_r):.0f}")
        if ev.exact is not None:
            text.append(f"  float64 {float(ev.exact[index]):.12g}")
        return text
