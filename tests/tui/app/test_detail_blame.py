"""`B` in the evaluation detail: blame the ORT level, shown in place and stored with the
evidence, and shown again when the detail opens later."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from detail_harness import Harness, sync
from rich.console import Console
from textual.widgets import Static

from gero.query.source import open_source
from gero_runner.evidence.blame import read_blame
from gero_runner.storage.artifacts import resolve_artifact


def _text(app: Harness, selector: str) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(50):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blame-detail")
    # A fresh process: forking workers from one that has run Textual apps is not safe.
    subprocess.run([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(root),
                    "--ops", "Relu", "--dtypes", "float32", "--limit", "1", "--jobs", "1"],
                   check=True, capture_output=True)
    return root


@sync
async def test_b_blames_stores_and_shows_again(real_run: Path) -> None:
    source = open_source(real_run)
    oid, rel = source.query("SELECT observation_id, artifact_path FROM obs WHERE "
                            "artifact_path <> '' AND backend = 'onnxruntime' LIMIT 1")[0]
    app = Harness(real_run, "detail", oid)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert not app.screen.query_one("#detail-blame").display
        await pilot.press("B")
        await _settle(pilot)
        text = _text(app, "#detail-blame")
        assert text.startswith("blame: no optimisation level changes the output")
    assert read_blame(resolve_artifact(real_run, rel), oid) is not None
    again = Harness(real_run, "detail", oid)
    async with again.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert _text(again, "#detail-blame").startswith("blame (stored): no optimisation")
