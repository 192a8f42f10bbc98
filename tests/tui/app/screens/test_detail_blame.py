"""`B` in the evaluation detail: blame the ORT level, shown in place and stored with the
evidence, and shown again when the detail opens later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import gero_run, settle, static_text
from detail_harness import Harness, sync

from gero.query.source import open_source
from gero_runner.evidence.blame import read_blame
from gero_runner.storage.artifacts import resolve_artifact


async def _settle(pilot: Any) -> None:
    await settle(pilot, rounds=50)  # blame runs every level


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blame-detail")
    done = gero_run(root, "--ops", "Relu", "--dtypes", "float32", "--limit", "1")
    assert done.returncode == 0, done.stderr
    return root


@sync
@pytest.mark.slow
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
        text = static_text(app, "#detail-blame")
        assert text.startswith("blame: no optimisation level changes the output")
    assert read_blame(resolve_artifact(real_run, rel), oid) is not None
    again = Harness(real_run, "detail", oid)
    async with again.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert static_text(again, "#detail-blame").startswith("blame (stored): no optimisation")
