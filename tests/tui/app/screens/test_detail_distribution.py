"""The detail view shows each comparison's error distribution beside its maximum."""

from __future__ import annotations

from pathlib import Path

from conftest import static_text
from detail_data import build
from detail_harness import Harness, sync

from gero_tui.app.screens.detail import DetailScreen


@sync
async def test_the_fields_show_the_distribution(tmp_path: Path) -> None:
    ids = build(tmp_path)
    app = Harness(tmp_path, "detail", ids["divergence"])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("f")
        await pilot.pause()
        lines = static_text(app, "#fields-table", width=200).splitlines()
    section = lines.index(next(line for line in lines if line.strip() == "Error distribution"))
    shown = dict(line.split(None, 1) for line in lines[section + 1:section + 9])
    assert list(shown) == ["mean_abs_error", "median_abs_error", "p90_abs_error",
                           "p99_abs_error", "mean_scaled_error", "median_scaled_error",
                           "p90_scaled_error", "p99_scaled_error"]
    figures = {k: float(v) for k, v in shown.items()}
    assert 0 <= figures["median_abs_error"] <= figures["p99_abs_error"] <= 0.0199
