"""Slicing an N-d tensor into displayed planes: axes, stepping, jumping, windows."""

from __future__ import annotations

import numpy as np
import pytest

from gero.query.slicing import TensorCursor


def test_plane_step_and_axis_cycle() -> None:
    x = np.arange(24).reshape(2, 3, 4)
    c = TensorCursor(x.shape)
    assert (c.row_axis, c.col_axis, c.step_axis) == (1, 2, 0)
    assert (c.plane(x) == x[0]).all()
    c.step(1)
    assert (c.plane(x) == x[1]).all()
    c.step(1)  # wraps
    assert (c.plane(x) == x[0]).all()
    c.cycle_axis("row")  # rows=axis 2 clashes with cols: they swap
    assert (c.row_axis, c.col_axis) == (2, 1)
    assert (c.plane(x) == x[0].T).all()
    c.cycle_axis("col")  # cols -> axis 2 clashes with rows: swap back
    assert (c.row_axis, c.col_axis) == (1, 2)


def test_jump_and_clamp() -> None:
    c = TensorCursor((2, 5, 8))
    c.jump((1, 3, 6))
    assert c.original_index == (1, 3, 6)
    c.move(rows=10, cols=-20)
    assert c.original_index == (1, 4, 0)
    assert "slice axis 0: 2/2" in c.describe()


@pytest.mark.parametrize("shape", [(), (5,), (1, 1), (2, 1, 3, 1)])
def test_small_ranks(shape: tuple[int, ...]) -> None:
    x = np.arange(int(np.prod(shape))).reshape(shape)
    c = TensorCursor(shape)
    assert c.plane(x).ndim == 2
    c.cycle_axis("row")
    c.step(1)
    assert c.plane(x).ndim == 2 and len(c.original_index) == len(shape)


@pytest.mark.parametrize("position,size,visible,expected", [
    (0, 100, 10, (0, 10)), (50, 100, 10, (45, 55)), (99, 100, 10, (90, 100)),
    (2, 3, 10, (0, 3)), (0, 1, 0, (0, 1)),
])
def test_window(position: int, size: int, visible: int, expected: tuple[int, int]) -> None:
    assert TensorCursor.window(position, size, visible) == expected
