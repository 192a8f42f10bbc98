"""`L` in the detail view and on the Findings screen: the error through the graph, origins
marked, `enter` on a node its tensors side by side; the Findings screen names the origin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import gero_run, settle, static_text
from detail_harness import Harness, sync
from textual.widgets import DataTable

from gero.query.source import open_source
from gero_runner.evidence.localize import read_localization
from gero_runner.storage.artifacts import resolve_artifact
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.localize import LocalizeScreen
from gero_tui.app.widgets.tensor_view import TensorView

sys.path.insert(0, str(Path(__file__).parents[3] / "runner" / "evidence"))
from localize_models import one_pass_variance


async def _settle(pilot: Any) -> None:
    await settle(pilot, rounds=100)  # a localization runs both sides node by node


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("localize-screen")
    model = one_pass_variance(root / "one_pass_variance.onnx")
    done = gero_run(root, "--model", str(model), "--input-range", "X=29990,30010",
                    "--repeats", "1", "--backends", "onnxruntime")
    assert done.returncode == 1, done.stderr  # 1: it found the divergence
    return root


@sync
@pytest.mark.slow
async def test_l_in_the_detail_view_localizes_and_enter_opens_the_origin(
        real_run: Path) -> None:
    source = open_source(real_run)
    oid, rel = source.query("SELECT observation_id, artifact_path FROM obs WHERE \"check\" = "
                            "'model:fp32' AND optimization = 'disable_all'")[0]
    app = Harness(real_run, "detail", oid)
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot)
        await pilot.press("L")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, LocalizeScreen)
        summary = static_text(app, "#localize-summary")
        assert "the error enters at LayerNorm_0/Sub (Sub)" in summary
        table = screen.query_one(DataTable)
        assert table.row_count == 11
        cells = [str(c) for c in table.get_row("var")]
        assert "◆ origin" in cells[-1] and "█" in cells[4]
        assert screen.highlighted() == "var"  # the cursor starts on the origin
        await pilot.press("enter")
        await pilot.pause()
        node = static_text(app, "#localize-node")
        assert "◆ origin  LayerNorm_0/Sub (Sub) → var" in node
        view = screen.query_one(TensorView)
        assert view.display and view.evidence is not None
        assert view.evidence.actual.shape == (4, 1)
        await pilot.press("i")  # its first input, side by side
        await pilot.pause()
        assert "input ex2" in static_text(app, "#localize-node")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LocalizeScreen)
    assert read_localization(resolve_artifact(real_run, rel), oid) is not None


@sync
async def test_the_findings_screen_names_a_localized_origin_and_l_opens_it(
        real_run: Path) -> None:
    from gero_runner.evidence.localize import localize_observation
    from gero_runner.storage.reader import resolve_observation

    source = open_source(real_run)
    oid = source.query("SELECT observation_id FROM obs WHERE \"check\" = 'model:fp32' AND "
                       "optimization = 'disable_all'")[0][0]
    localize_observation(real_run, resolve_observation(real_run, oid))
    app = GeroApp(real_run, screen="findings")
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        # The case's only finding; its evidence holds the localization made above.
        assert "localized: origin LayerNorm_0/Sub (Sub)" in static_text(app, "#finding-detail")
        await pilot.press("L")
        await _settle(pilot)
        assert isinstance(app.screen, LocalizeScreen)
        assert app.screen.observation_id == screen.report.findings[0].representative.observation_id
        assert "error through the graph" in static_text(app, "#localize-summary")
        await pilot.press("escape")
        await _settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
