"""A cursor through an N-d tensor shown as 2-d planes: two displayed axes, the others fixed.

Headless state for the side-by-side view: which axes are the plane's rows and columns, where
the cursor is (a full index), and the window of the plane that fits the screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TensorCursor:
    """Position in a tensor of ``shape``. Tensors of rank < 2 are shown as one row."""

    shape: tuple[int, ...]
    row_axis: int = 0
    col_axis: int = 1
    index: list[int] = field(default_factory=list)
    step_axis: int = 0
    """The fixed axis that ``step`` moves along (cycled by ``next_step_axis``)."""

    def __post_init__(self) -> None:
        self._pad = max(0, 2 - len(self.shape))
        self.dims: tuple[int, ...] = (1,) * self._pad + tuple(self.shape)
        rank = len(self.dims)
        if not self.index:
            self.index = [0] * rank
        self.row_axis, self.col_axis = rank - 2, rank - 1
        free = self.free_axes()
        self.step_axis = free[0] if free else -1

    # Axes -----------------------------------------------------------------------------------
    def free_axes(self) -> list[int]:
        """Axes not displayed: the plane is taken at ``index`` along each of them."""
        return [k for k in range(len(self.dims)) if k not in (self.row_axis, self.col_axis)]

    def cycle_axis(self, which: str) -> None:
        """Show the next axis as rows (``which='row'``) or columns; swaps if they would clash."""
        rank = len(self.dims)
        if rank - self._pad < 2:
            return
        current = self.row_axis if which == "row" else self.col_axis
        other = self.col_axis if which == "row" else self.row_axis
        new = (current + 1) % rank
        while new < self._pad:
            new = (new + 1) % rank
        if new == other:
            other = current
        if which == "row":
            self.row_axis, self.col_axis = new, other
        else:
            self.col_axis, self.row_axis = new, other
        free = self.free_axes()
        if self.step_axis not in free:
            self.step_axis = free[0] if free else -1

    def swap_axes(self) -> None:
        """Show the plane transposed: the row axis as columns and the column axis as rows."""
        if len(self.dims) - self._pad >= 2:
            self.row_axis, self.col_axis = self.col_axis, self.row_axis

    def next_step_axis(self) -> None:
        free = self.free_axes()
        if free:
            self.step_axis = free[(free.index(self.step_axis) + 1) % len(free)
                                  if self.step_axis in free else 0]

    # Movement -------------------------------------------------------------------------------
    def move(self, rows: int = 0, cols: int = 0) -> None:
        self._set(self.row_axis, self.index[self.row_axis] + rows)
        self._set(self.col_axis, self.index[self.col_axis] + cols)

    def step(self, delta: int) -> None:
        """Move the plane along the step axis (wraps around, like paging through slices)."""
        if self.step_axis >= 0:
            size = self.dims[self.step_axis]
            self.index[self.step_axis] = (self.index[self.step_axis] + delta) % size

    def jump(self, original_index: tuple[int, ...]) -> None:
        """Put the cursor on an element given by its index in the original tensor."""
        full = (0,) * self._pad + tuple(original_index)
        for axis, i in enumerate(full):
            self._set(axis, i)

    def _set(self, axis: int, value: int) -> None:
        self.index[axis] = min(max(value, 0), self.dims[axis] - 1)

    # Reading --------------------------------------------------------------------------------
    @property
    def original_index(self) -> tuple[int, ...]:
        return tuple(self.index[self._pad:])

    def plane(self, x: np.ndarray) -> np.ndarray:
        """The 2-d plane through the cursor: rows along row_axis, columns along col_axis."""
        full = x.reshape(self.dims)
        selector: list[int | slice] = [
            slice(None) if k in (self.row_axis, self.col_axis) else self.index[k]
            for k in range(len(self.dims))
        ]
        plane = full[tuple(selector)]
        return plane.T if self.row_axis > self.col_axis else plane

    @staticmethod
    def window(position: int, size: int, visible: int) -> tuple[int, int]:
        """[start, stop) of ``visible`` items out of ``size`` that keeps ``position`` in view,
        centred where possible."""
        visible = max(1, min(visible, size))
        start = min(max(position - visible // 2, 0), size - visible)
        return start, start + visible

    def describe(self) -> str:
        """e.g. 'x[2, :, 0, :]  rows=axis 1  cols=axis 3  step axis 0 (2/4)'."""
        parts = [":" if k in (self.row_axis, self.col_axis) else str(self.index[k])
                 for k in range(self._pad, len(self.dims))]
        text = f"[{', '.join(parts)}]"
        rank = len(self.dims) - self._pad
        if rank >= 2:
            text += f"  rows=axis {self.row_axis - self._pad} cols=axis {self.col_axis - self._pad}"
        if self.step_axis >= 0:
            axis = self.step_axis
            text += (f"  slice axis {axis - self._pad}: "
                     f"{self.index[axis] + 1}/{self.dims[axis]}")
        return text


def broadcast_index(index: tuple[int, ...], output_shape: tuple[int, ...],
                    input_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The element of an input that numpy broadcasting pairs with the output element
    ``index`` (axes aligned on the right, size-1 axes at 0); None when the shapes do not
    broadcast that way (a MatMul, a Reshape: no element of the input is "the" one)."""
    if len(input_shape) > len(output_shape) or len(index) != len(output_shape):
        return None
    lead = len(output_shape) - len(input_shape)
    picked = []
    for size, out_size, i in zip(input_shape, output_shape[lead:], index[lead:], strict=True):
        if size == out_size:
            picked.append(i)
        elif size == 1:
            picked.append(0)
        else:
            return None
    return tuple(picked)
