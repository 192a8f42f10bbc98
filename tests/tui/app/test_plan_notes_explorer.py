"""The explorer shows what the needed-paths plan did not run (with why) under the overview's
verdict card, and a row's note in its detail view; both count in no class (issue 41)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import settle, static_text, write_run
from table_helpers import open_table

from gero_tui.app.app import GeroApp
from gero_tui.app.widgets.verdict_card import VerdictCard

RUN = "20261205-041000-abc123"
ARTIFACT = "artifacts/aa/aabbccddeeff001122334455"
NOTE = ("ONNX Runtime computes the fp16 file in float32 at 2 of its 2 float16 nodes "
        "(Div 1, MatMul 1)")
WHY = ("not needed: tract optimized is within its gates against float64-shadow, so its "
       "optimiser is not at fault (--paths all runs it)")


def _row(check: str, backend: str, optimization: str, note: str) -> dict[str, Any]:
    return {"observation_id": hashlib.sha256(f"{check}/{backend}".encode()).hexdigest(),
            "run_id": RUN, "suite": "model", "case_id": "model/dense/static,inputs=in.npz",
            "op_type": "dense", "case_name": "model inputs=in.npz", "check": check,
            "dtype": "float32", "input_shapes": "[2,8]", "output_name": "y",
            "backend": backend, "backend_version": "1", "optimization": optimization,
            "threads": 1, "reference": "float64-shadow", "reference_version": "1",
            "rtol": 1e-4, "atol": 1e-4, "max_abs_error": 0.0, "scaled_error": 0.0,
            "result": "passed", "arbiter": "-", "reason": "within the gate",
            "artifact_path": ARTIFACT, "note": note, "repeats": 1, "seed": 0,
            "actual_median_ms": 0.01, "reference_median_ms": None}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plan-notes")
    write_run(root, RUN, [_row("model:fp32", "tract", "optimized", ""),
                          _row("model:fp16:precision", "onnxruntime", "all", NOTE)])
    evidence = root / ARTIFACT
    evidence.mkdir(parents=True)
    (evidence / "plan.json").write_text(json.dumps(
        {"paths": "needed", "ran": ["tract-optimized"],
         "not_run": {"tract-unoptimized": WHY}, "ran_on_variants": {}}))
    return root


@pytest.mark.slow
async def test_overview_lists_the_settings_not_run_and_the_notes(root: Path) -> None:
    app = GeroApp(root)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        card = app.screen.query_one(VerdictCard)
        assert card.display
        text = static_text(app, "#verdicts")
        assert ("not run (not needed): tract unoptimized on dense — tract optimized is "
                "within its gates") in " ".join(text.split()), text
        assert "note on dense: ONNX Runtime computes the fp16 file in float32" in text, text


@pytest.mark.slow
async def test_detail_shows_the_row_note(root: Path) -> None:
    app = GeroApp(root, screen="evaluations")
    async with app.run_test(size=(160, 50)) as pilot:
        await open_table(pilot)
        app.open_detail(_row("model:fp16:precision", "onnxruntime", "all", NOTE)
                        ["observation_id"])
        await settle(pilot)
        text = " ".join(static_text(app, "#detail-title").split())
        assert f"note: {NOTE}" in text, text
