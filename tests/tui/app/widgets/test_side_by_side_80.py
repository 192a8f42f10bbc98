"""At 80 columns "side by side" shows panes side by side: the detail's tensors at 80×24
were stacked three rows a pane, and under a taller header (a model's reason, an arbiter
line) one pane alone (actual)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from detail_data import build
from detail_harness import Harness, sync
from rich.console import Console
from textual.app import App, ComposeResult

from gero.query.tensors import Evidence, analyse
from gero_tui.app.widgets.tensor_view import TensorView


def _drawn(view: TensorView, width: int) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(view.render())
    return console.export_text().splitlines()


@sync
async def test_the_detail_at_80x24_shows_the_panes_side_by_side(tmp_path: Path) -> None:
    ids = build(tmp_path)
    app = Harness(tmp_path, "detail", ids["divergence"])
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(5):
            await app.workers.wait_for_complete()
            await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        view = app.screen.query_one(TensorView)
        assert view.current_layout() == "side"
        titles = _drawn(view, 80)[0]
        assert "ort-all" in titles and "onnx-reference" in titles, titles


class _ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TensorView()


@sync
async def test_wide_values_in_a_short_view_keep_two_panes() -> None:
    """float32 values of 12 characters in 80 columns and 12 rows (a detail under a header
    of several lines): actual and reference side by side, their |a − r| below."""
    rng = np.random.default_rng(1)
    reference = (rng.standard_normal((4, 10)) * 1e-3).astype(np.float32)
    actual = reference + np.float32(1e-6)
    evidence = Evidence(Path("."), actual, reference, None, "outputs/ov-f32/output_0.npy",
                        "outputs/onnx-reference/output_0.npy", 1e-4, 1e-6)
    app = _ViewApp()
    async with app.run_test(size=(80, 12)) as pilot:
        view = app.query_one(TensorView)
        view.show(evidence, analyse(evidence))
        await pilot.pause()
        assert view.current_layout() == "side"
        lines = _drawn(view, 80)
        assert "ov-f32" in lines[0] and "onnx-reference" in lines[0], lines[0]
        assert "|difference|" not in "\n".join(lines)
        assert any("|a−r| " in line for line in lines), "the cursor's |a − r| is said"
        # The panes keep the view's height: a row of each pane on each line.
        assert sum(line.count("│") == 2 for line in lines) >= 6
