"""One cause, one finding, read by a real ``gero findings`` on hand-made rows written as a run
(issue 40, round 7, the bench models' verification): a runtime that cannot run the model is
one finding with its failures on the variant files; a time budget spent is a note about
gero's limit; a file off on every path no known defect explains is one finding."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

ROOT = Path(__file__).resolve().parents[3]
RUN = "20261205-070000-bbbbbb"
CASE = "model/model/float32"
OV_F32 = '{"inference_precision": "f32"}'
OV_BF16 = '{"inference_precision": "bf16"}'


def row(check: str, backend: str, level: str, result: str, reason: str = "",
        **facts: Any) -> dict[str, Any]:
    """A row of a model case as a gero of schema 5 records it (``facts``: its kind, cause
    key, scope, settings)."""
    key = f"{check}/{backend}/{level}/{facts.get('reference', '')}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": RUN,
            "suite": "model", "case_id": CASE, "op_type": "model", "case_name": "model",
            "check": check, "dtype": "float32", "input_shapes": "[1]", "output_name": "y",
            "backend": backend, "optimization": level, "reference": "onnxruntime:all",
            "rtol": 1e-5, "atol": 1e-6, "result": result, "reason": reason, "arbiter": "-",
            "artifact_path": "artifacts/ab/abcd", **facts}


def findings(root: Path, rows: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """``gero findings --format json`` of ``rows`` written as a run: its exit status and
    findings."""
    directory = root / "runs" / RUN
    directory.mkdir(parents=True)
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": RUN, "observation_id": r["observation_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": RUN, "suite": "model"}))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "gero_cli", "findings", "--data-dir",
                           str(root), "--format", "json"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, list(json.loads(done.stdout)["findings"])


def failed(check: str, backend: str, level: str, words: str, key: str, scope: str,
           settings: str = "{}") -> dict[str, Any]:
    """A path's failure as the runner records it (``PATH failed: WORDS``)."""
    file = f"{scope}:" if scope != "model" else ""
    path = f"{backend}-{level}"
    return row(check, backend, level, "execution", f"{file}{path} failed: {words}",
               failure_kind="cannot-run", cause_key=key, scope=scope, failed_path=path,
               cause=words, session_settings=settings,
               reference="onnx-reference" if scope == "model" else f"{scope}:onnxruntime:all")


@pytest.mark.slow
def test_a_runtime_that_cannot_run_the_model_is_one_finding_with_its_file_failures(
        tmp_path: Path) -> None:
    """Issue 40 D3 (silero_vad): OpenVINO refuses the If branch's Conv on the fp32 model and
    the quantizer's renamed ConvInteger on the int8-dynamic file, for the same reason; keyed
    by the operator list they were two findings. A setting that cannot run the model: its
    failures on the files are that one finding's rows. Tract, which runs the model, keeps
    its failure on the file as a finding of its own."""
    model_key = "error:RuntimeError: -- Conversion is failed for: Conv-…, ReduceMean-#"
    file_key = "error:RuntimeError: -- Conversion is failed for: ConvInteger-#"
    rows = [failed(check, "openvino", level, words, key, scope, settings)
            for level, settings in (("f32", OV_F32), ("bf16-default", OV_BF16))
            for check, scope, key, words in (
                ("agreement", "model", model_key,
                 "RuntimeError: -- Conversion is failed for: Conv-16, ReduceMean-16"),
                ("model:int8-dynamic", "int8-dynamic", file_key,
                 "RuntimeError: -- Conversion is failed for: ConvInteger-16"))]
    rows += [row("agreement", "tract", "optimized", "passed", reference="onnx-reference"),
             failed("model:int8-dynamic", "tract", "optimized",
                    "TractError: Impossible to unify U8 with I8.",
                    "error:TractError: Impossible to unify U8 with I8.", "int8-dynamic")]
    code, got = findings(tmp_path, rows)
    assert code == 1
    by_outlier = {f["outlier"]: f for f in got}
    assert sorted(by_outlier) == ["openvino", "tract"], [f["title"] for f in got]
    ov = by_outlier["openvino"]
    assert (ov["observations"], ov["scope"], ov["cause_key"]) == (4, "model", model_key)
    assert ov["title"].startswith("OpenVINO cannot run model: "), ov["title"]
    assert by_outlier["tract"]["scope"] == "int8-dynamic"


@pytest.mark.slow
def test_a_time_budget_spent_is_a_note_about_gero_not_a_runtime_failure(
        tmp_path: Path) -> None:
    """Issue 40 (magika, e9e84cedddd9): tract unoptimized ran out of its 60 s budget under
    load (it runs magika in 15 s on a quiet machine). That is gero's limit: a note keyed
    ``tooling:budget``, counted apart with gero's other limits, and no exit status."""
    words = ("tract unoptimized ran out of its 60 s budget on the model; not run on the "
             "fp16 variant and the contract graphs")
    rows = [row(check, "tract", "unoptimized", "execution",
                f"tract-unoptimized failed: {words}", failure_kind="out-of-budget",
                cause_key="", scope="model", failed_path="tract-unoptimized", cause=words,
                reference=reference)
            for check, reference in (("agreement", "onnx-reference"),
                                     ("expected", "float64-shadow"))]
    rows.append(row("agreement", "onnxruntime", "all", "passed", reference="onnx-reference"))
    code, got = findings(tmp_path, rows)
    assert code == 0, got
    assert [(f["observations"], f["cause_key"], f["cannot_assess"]) for f in got] == [
        (2, "tooling:budget", "tooling")]
    assert got[0]["title"].startswith("gero's time budget ran out before tract"), got[0]
    assert "60 s budget" in got[0]["title"]


@pytest.mark.slow
def test_a_file_off_on_every_path_no_known_defect_explains_is_one_finding(
        tmp_path: Path) -> None:
    """Issue 40 (magika int8-static): the file is off the fp32 model on ONNX Runtime and
    OpenVINO alike (its own quantisation), tract's row is its per-axis DequantizeLinear
    defect's. Since that probe took tract's row out, the file's finding was split by
    runtime; the paths no known defect explains are still every path: one finding."""
    check = "model:int8-static:vs-model"
    cosine = "row cosine 0.005951 < min(0.99, floor 1.000000) over 2 row(s)"
    defect = "defect:tract:dequantize-per-axis"
    rows = [row(check, backend, level, "divergence", cosine, failure_kind="law:vs-model",
                cause_key="", scope="int8-static", session_settings=settings,
                reference=f"fp32:{backend}:{level}", max_abs_error=0.998)
            for backend, level, settings in (("onnxruntime", "all", "{}"),
                                             ("openvino", "f32", OV_F32))]
    rows.append(row(check, "tract", "optimized", "divergence",
                    "computes per-axis DequantizeLinear wrong (a 1-node probe is 0.78 off "
                    "the spec) and the int8-static file has 3 such nodes",
                    failure_kind="defect", cause_key=defect, scope="int8-static",
                    reference="fp32:tract:optimized", max_abs_error=1.0))
    code, got = findings(tmp_path, rows)
    assert code == 1
    outliers = {f["outlier"]: (f["observations"], f["cause_key"]) for f in got}
    assert outliers == {"every path": (2, ""), "tract": (1, defect)}, [f["title"] for f in got]
    every = next(f for f in got if f["outlier"] == "every path")
    assert "int8-static file" in every["title"] and "every path" in every["title"], every
