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

from gero_tui.app.widgets.tensor_view import TensorView
from gero_tui.query.tensors import Evidence, analyse


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
