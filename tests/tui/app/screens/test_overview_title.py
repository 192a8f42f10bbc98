"""The overview's title line says every runtime's version: it wraps where the width is
short (at 120 columns, a run of three runtimes lost "onnx 1.23.2" off its end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import RUN_ID, fixture_rows, settle, write_run
from textual.geometry import Region
from textual.widgets import Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.overview import OverviewScreen


@pytest.fixture(scope="module")
def three_runtimes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("three-runtimes")
    write_run(root, RUN_ID, fixture_rows())
    record_path = root / "runs" / RUN_ID / "run.json"
    record = json.loads(record_path.read_text())
    record["backends"] = {"onnxruntime": "1.32.0", "openvino": "2026.4.1", "tract": "0.22.4"}
    record_path.write_text(json.dumps(record))
    return root


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_title_is_whole(three_runtimes: Path, size: tuple[int, int]) -> None:
    app = GeroApp(three_runtimes)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        title = app.screen.query_one("#title", Static)
        drawn = " ".join(strip.text.strip() for strip in title.render_lines(
            Region(0, 0, *title.outer_size)))
        line = app.title_line()
        assert "tract 0.22.4 · onnx 1.23.2" in line
        assert " ".join(drawn.split()) == " ".join(line.split())
