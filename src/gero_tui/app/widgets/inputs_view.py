"""The inputs of an observation's case: what every path was fed, one input at a time.

Each input is shown as a 2-d plane with the side-by-side view's keys (arrows, ``[ ]``, ``s``,
``y``, ``x``); ``o`` shows the next input. An input that broadcasts to the output (the same
shape, or a mask of size-1 axes) follows the side-by-side cursor: opening this view puts
its cursor on the element paired with the output element shown there (the worst one, at
first), so a −1e4 mask entry or a tie under a TopK is one key away.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from rich.console import Group, RenderableType
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widget import Widget

from gero.query.slicing import TensorCursor, broadcast_index
from gero.query.tensors import CaseInput
from gero_runner.escape import for_terminal
from gero_tui.app.widgets.tensor_view import (
    CURSOR,
    MOVE_BINDINGS,
    NONFINITE,
    SLICE_BINDINGS,
    format_element,
    window_text,
)

PAIRED = "bold black on yellow"
"""The input element paired with the output element under the side-by-side cursor."""


def summary_text(x: np.ndarray) -> str:
    """Range and non-finite counts of a whole input (what a glance at the plane can miss)."""
    if x.size == 0:
        return "empty"
    if x.dtype.kind not in "fiub":
        return f"{x.size:,} values"
    values = x.astype(np.float64, copy=False)
    finite = np.isfinite(values)
    parts = []
    if finite.any():
        shown = values[finite]
        parts.append(f"min {format_element(shown.min(), x.dtype)} · "
                     f"max {format_element(shown.max(), x.dtype)}")
        distinct = np.unique(shown[: 1 << 16]).size
        if distinct < min(shown.size, 1 << 16):
            parts.append(f"{distinct:,} distinct" + (" (of the first 65,536)"
                                                     if shown.size > 1 << 16 else ""))
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    if nan or inf:
        parts.append(f"NaN {nan:,} · ±inf {inf:,}")
    return " · ".join(parts)


class InputsView(Widget, can_focus=True):
    """The detail view's Inputs tab."""

    DEFAULT_CSS = """
    InputsView { height: 1fr; padding: 0 1; }
    InputsView:focus { background: $boost; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *MOVE_BINDINGS,
        Binding("o", "next_input", "next input"),
        *SLICE_BINDINGS,
    ]

    version: reactive[int] = reactive(0, layout=False)
    """Bumped on every change so the view repaints."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.inputs: tuple[CaseInput, ...] = ()
        self.cursors: list[TensorCursor] = []
        self.selected = 0
        self.fed = ""
        """The runner's words for what a user model was fed (``inputs fed``), if any."""
        self.message = "loading inputs…"
        self.paired: list[tuple[int, ...] | None] = []
        """Per input, its element paired with the output element followed (or None)."""
        self.output_index: tuple[int, ...] | None = None

    def show(self, inputs: tuple[CaseInput, ...], fed: str = "") -> None:
        self.inputs, self.fed = inputs, fed
        self.cursors = [TensorCursor(tuple(i.array.shape)) for i in inputs]
        self.paired = [None] * len(inputs)
        self.selected = 0
        self.message = "" if inputs else "this case has no inputs (its model takes none)"
        self.version += 1

    def show_message(self, message: str, fed: str = "") -> None:
        self.inputs, self.cursors, self.paired, self.fed = (), [], [], fed
        self.message = message
        self.version += 1

    def follow(self, output: TensorCursor | None, output_shape: tuple[int, ...]) -> None:
        """Put each input's cursor on the element paired with the output element under
        ``output`` (the side-by-side cursor), in the same orientation where ranks match."""
        if output is None:
            return
        index = output.original_index
        self.output_index = index
        for k, case_input in enumerate(self.inputs):
            shape = tuple(case_input.array.shape)
            paired = broadcast_index(index, output_shape, shape)
            self.paired[k] = paired
            cursor = self.cursors[k]
            if paired is None:
                continue
            if len(shape) == len(output_shape) and len(shape) >= 2:
                cursor.row_axis, cursor.col_axis = output.row_axis, output.col_axis
                free = cursor.free_axes()
                cursor.step_axis = output.step_axis if output.step_axis in free else (
                    free[0] if free else -1)
            cursor.jump(paired)
        self.version += 1

    # Actions --------------------------------------------------------------------------------
    def _cursor(self) -> TensorCursor | None:
        return self.cursors[self.selected] if self.cursors else None

    def action_move(self, rows: int, cols: int) -> None:
        if (cursor := self._cursor()) is not None:
            cursor.move(rows, cols)
            self.version += 1

    def action_step(self, delta: int) -> None:
        if (cursor := self._cursor()) is not None:
            cursor.step(delta)
            self.version += 1

    def action_step_axis(self) -> None:
        if (cursor := self._cursor()) is not None:
            cursor.next_step_axis()
            self.version += 1

    def action_cycle_axis(self, which: str) -> None:
        if (cursor := self._cursor()) is not None:
            cursor.cycle_axis(which)
            self.version += 1

    def action_next_input(self) -> None:
        if self.inputs:
            self.selected = (self.selected + 1) % len(self.inputs)
            self.version += 1

    # Rendering ------------------------------------------------------------------------------
    def render(self) -> RenderableType:
        head = Text(no_wrap=True, overflow="ellipsis")
        if self.fed:
            head.append("inputs fed: ", style="bold")
            head.append(for_terminal(self.fed) + "\n")
        if not self.inputs:
            head.append(for_terminal(self.message, newlines=True))
            return head
        for k, case_input in enumerate(self.inputs):
            x = case_input.array
            mark = "▶ " if k == self.selected else "  "
            head.append(mark, style="bold yellow")
            head.append(for_terminal(case_input.name), style="bold" if k == self.selected else "")
            head.append(f" {x.dtype} {list(x.shape)}  ", style="dim")
            head.append(summary_text(x) + "\n")
        if len(self.inputs) > 1:
            head.append(f"o: next input ({len(self.inputs)})\n", style="dim")
        lines = head.plain.count("\n")
        return Group(head, self._plane(max(1, self.size.height - lines - 5)))

    def _plane(self, height: int) -> RenderableType:
        case_input = self.inputs[self.selected]
        cursor = self.cursors[self.selected]
        x = case_input.array
        if x.size == 0:
            return Text(f"empty tensor (shape {list(x.shape)})")
        plane = cursor.plane(x)
        n_rows, n_cols = plane.shape
        row_pos, col_pos = cursor.index[cursor.row_axis], cursor.index[cursor.col_axis]
        r0, r1 = TensorCursor.window(row_pos, n_rows, height)
        c0, c1 = TensorCursor.window(col_pos, n_cols, max(1, (self.size.width - 2) // 8))
        cells = [[format_element(plane[i, j], x.dtype) for j in range(c0, c1)]
                 for i in range(r0, r1)]
        width = max([len(c) for row in cells for c in row] + [2])
        label_width = len(str(n_rows - 1)) + 1
        fit = max(1, (self.size.width - 2 - label_width - 1) // (width + 1))
        if fit < c1 - c0:
            c0, c1 = TensorCursor.window(col_pos, n_cols, fit)
            cells = [[format_element(plane[i, j], x.dtype) for j in range(c0, c1)]
                     for i in range(r0, r1)]
        paired = self.paired[self.selected]
        paired_cell = None
        if paired is not None and self._in_plane(cursor, paired):
            full = (0,) * (len(cursor.dims) - len(paired)) + paired
            paired_cell = (full[cursor.row_axis], full[cursor.col_axis])
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(" " * label_width + "│")
        text.append("".join(f"{j:>{width}} " for j in range(c0, c1)) + "\n", style="dim")
        for i in range(r0, r1):
            text.append(f"{i:>{label_width}}│", style="dim")
            for j in range(c0, c1):
                value = cells[i - r0][j - c0]
                style = NONFINITE if value in ("nan", "inf", "-inf") else ""
                if (i, j) == paired_cell:
                    style = PAIRED
                if i == row_pos and j == col_pos:
                    style = f"{style} {CURSOR}".strip()
                text.append(f"{value:>{width}}", style=style)
                text.append(" ")
            text.append("\n")
        text.append(window_text(r0, r1, n_rows, c0, c1, n_cols))
        return Group(text, self._status(case_input, cursor))

    @staticmethod
    def _in_plane(cursor: TensorCursor, index: tuple[int, ...]) -> bool:
        full = (0,) * (len(cursor.dims) - len(index)) + index
        return all(full[k] == cursor.index[k] for k in cursor.free_axes())

    def _status(self, case_input: CaseInput, cursor: TensorCursor) -> Text:
        x = case_input.array
        index = cursor.original_index
        value = x[index] if index else x[()]
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"\n{for_terminal(case_input.name)}{cursor.describe()}", style="bold")
        text.append(f"\n{list(index)} = {format_element(value, x.dtype)}")
        paired = self.paired[self.selected]
        out = self.output_index
        if paired is not None and out is not None:
            text.append("  ■", style=PAIRED)
            text.append(f" fed to output {list(out)}", style="dim")
        elif out is not None:
            text.append("  (not element-wise with the output)", style="dim")
        if x.dtype.kind == "f" and math.isnan(float(value)):
            text.append("  NaN", style=NONFINITE)
        return text
