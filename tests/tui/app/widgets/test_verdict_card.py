"""The overview's verdict card: one line per runtime, one cell per file, on a fixed model run
(ONNX Runtime's int8 file off on two of its four settings, tract unable to run the fp16 file);
none on a run of the operator suites."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import settle, static_text, write_run

from gero_tui.app.app import GeroApp
from gero_tui.app.widgets.verdict_card import VerdictCard

RUN = "20260102-120000-abcdef"
LEVELS = ("disable_all", "basic", "extended", "all")


def _row(backend: str, setting: str, check: str, result: str, reference: str,
         **details: Any) -> dict[str, Any]:
    key = f"{backend}/{setting}/{check}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": RUN,
            "suite": "model", "case_id": "model/detector/x[0]=1", "op_type": "detector",
            "case_name": "detector x[0]=1", "check": check, "dtype": "float32",
            "input_shapes": "[1,8]", "output_name": "y", "backend": backend,
            "backend_version": "1", "optimization": setting, "threads": 1,
            "reference": reference, "reference_version": "1", "rtol": 1e-5, "atol": 1e-6,
            "max_abs_error": 1e-6, "result": result, "reason": f"{check}: {result}",
            "arbiter": "-", "actual_median_ms": 0.1, "reference_median_ms": 1.0,
            "repeats": 1, "seed": -1, "details": json.dumps(details)}


def _model_rows() -> list[dict[str, Any]]:
    rows = []
    for backend, settings in (("onnxruntime", LEVELS), ("tract", ("optimized",))):
        for setting in settings:
            rows.append(_row(backend, setting, "model:fp32", "passed", "float64-shadow",
                             scaled_error=1e-7, scaled_limit=1e-4))
            off = backend == "onnxruntime" and setting in ("extended", "all")
            rows.append(_row(backend, setting, "model:int8-dynamic:cosine",
                             "divergence" if off else "passed",
                             "int8-dynamic:onnxruntime:all", row_cosine=0.5 if off else 1.0,
                             need_row_cosine=0.99))
            if backend == "tract":
                rows.append(_row(backend, setting, "model:fp16", "execution",
                                 "fp16:onnxruntime:all"))
            else:
                rows.append(_row(backend, setting, "model:fp16:vs-fp32", "passed",
                                 "fp32:onnxruntime:all", scaled_error=1e-3, limit=4e-3))
    return rows


@pytest.fixture(scope="module")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verdict-card")
    write_run(root, RUN, _model_rows())
    return root


async def test_the_card_has_a_line_per_runtime_and_a_cell_per_file(model_root: Path) -> None:
    app = GeroApp(model_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(VerdictCard).display
        lines = [line.rstrip() for line in static_text(app, "#verdicts").splitlines()]
    assert lines[0].startswith("Verdict detector  12 safe · 2 off · 1 cannot run")
    assert lines[1].split() == ["fp32", "fp16", "int8-dynamic"]
    assert lines[2].split() == ["ort", "safe", "safe", "OFF", "2/4"]
    assert lines[3].split() == ["tract", "safe", "cannot", "run", "safe"]


async def test_a_run_without_models_has_no_card(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(VerdictCard).display


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_overview_with_a_card_snapshot(snap_compare: Any, model_root: Path,
                                       size: tuple[int, int]) -> None:
    assert snap_compare(GeroApp(model_root), terminal_size=size, run_before=settle)
