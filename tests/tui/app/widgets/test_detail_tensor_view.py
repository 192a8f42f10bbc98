"""The side-by-side view on unusual tensors: empty, 0-d, 1-d integer, boolean; every key and
layout renders without an error."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from detail_harness import sync
from rich.console import Console
from textual.app import App, ComposeResult

from gero.query.tensors import Evidence, analyse
from gero_tui.app.widgets.tensor_view import TensorView


class _ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


@pytest.mark.parametrize("shape,dtype,expected", [
    ((0, 3), np.float32, "empty tensors (shape [0, 3])"),
    ((2, 0, 4), np.float16, "empty tensors (shape [2, 0, 4])"),
    ((), np.float32, "[] OUT OF TOLERANCE"),
    ((7,), np.int64, "[0] OUT OF TOLERANCE"),
    ((3, 4), np.bool_, "[0, 0] OUT OF TOLERANCE"),
])
@sync
async def test_unusual_tensors_render(shape: tuple[int, ...], dtype: type[np.generic],
                                      expected: str) -> None:
    actual, reference = np.ones(shape, dtype), np.zeros(shape, dtype)
    evidence = Evidence(Path("."), actual, reference, None, "outputs/a/output_0.npy",
                        "outputs/b/output_0.npy", 1e-5, 1e-6)
    app = _ViewApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(TensorView)
        view.show(evidence, analyse(evidence))
        view.focus()
        for key in ("l", "right", "down", "right_square_bracket", "y", "x", "s", "w", "l"):
            await pilot.press(key)
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(view.render())
        assert expected in console.export_text()


@pytest.mark.parametrize("size,shown_cols,transposed", [
    ((120, 40), 3, True),  # 3x24 fits better as 24 rows of 3: every element on screen
    ((80, 24), 2, True),  # side by side, three narrow panes: 24 rows of 2 of the 3 columns
])
@sync
@pytest.mark.slow
async def test_plane_orientation_and_columns_follow_the_room(
        size: tuple[int, int], shown_cols: int, transposed: bool) -> None:
    rng = np.random.default_rng(0)
    reference = rng.standard_normal((2, 3, 24)).astype(np.float16)
    actual = (reference + np.float16(0.01)).astype(np.float16)
    evidence = Evidence(Path("."), actual, reference, None, "outputs/a/output_0.npy",
                        "outputs/b/output_0.npy", 5e-3, 5e-4)
    app = _ViewApp()
    async with app.run_test(size=size) as pilot:
        view = app.query_one(TensorView)
        view.show(evidence, analyse(evidence))
        view.jump((0, 0, 0))  # the plane from its first row and column
        view.focus()
        await pilot.pause()
        console = Console(width=size[0], record=True, file=io.StringIO())
        console.print(view.render())
        text = console.export_text()
        cursor = view.cursor
        assert cursor is not None
        assert (cursor.row_axis, cursor.col_axis) == ((2, 1) if transposed else (1, 2))
        header = next(line for line in text.splitlines() if "│" in line and " 0 " in line)
        assert header.split("│")[1].split() == [str(i) for i in range(shown_cols)]
        # The cursor stays in view: to the far corner, whose cell is then drawn.
        for _ in range(30):
            await pilot.press("down", "right")
        assert list(cursor.original_index)[1:] == [2, 23]
        console = Console(width=size[0], record=True, file=io.StringIO())
        console.print(view.render())
        last = " 23│" if transposed else " 23"
        assert last in console.export_text()
        # `x`/`y` choose the axes; the room no longer does.
        await pilot.press("y")
        assert not view.auto_axes


@sync
async def test_w_jumps_to_the_worst_excess_and_W_to_the_largest_difference() -> None:
    """A large |a − r| inside a tolerance that grows with |r| (a float16
    BatchNormalization row) is not the element that fails."""
    reference = np.array([[1000.0, 0.001, 2.0]], np.float32)
    actual = np.array([[1000.5, 0.01, 2.0]], np.float32)
    evidence = Evidence(Path("."), actual, reference, None, "outputs/a/output_0.npy",
                        "outputs/b/output_0.npy", 1e-3, 1e-3)
    analysis = analyse(evidence)
    assert analysis.worst[0].index == (0, 0) and analysis.worst[0].within
    assert analysis.worst_excess == (0, 1)
    app = _ViewApp()
    async with app.run_test(size=(120, 24)) as pilot:
        view = app.query_one(TensorView)
        view.show(evidence, analysis)
        view.focus()
        assert view.cursor is not None and view.cursor.original_index == (0, 1)
        await pilot.press("W")
        assert view.cursor.original_index == (0, 0)
        await pilot.press("w")
        assert view.cursor.original_index == (0, 1)
    within = Evidence(Path("."), reference + np.float32(1e-4), reference, None,
                      "outputs/a/output_0.npy", "outputs/b/output_0.npy", 1e-3, 1e-3)
    assert analyse(within).worst_excess is None
