"""A malformed model is the model's finding, not a runtime's (issue 40 D6, logreg_iris): real
``gero run`` processes on a 1-node LinearClassifier that holds 12 coefficients for 3 classes
x 2 features. ``onnx.checker`` accepts it, ONNX Runtime runs it (with the first 6), the
ReferenceEvaluator refuses it ('operands could not be broadcast'): one finding about the
model, titled with the facts, holding the evaluator's failures and the float64 shadow's; no
finding blames the ReferenceEvaluator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gero_runner.storage.reader import open_run

ROOT = Path(__file__).resolve().parents[3]
KEY = "malformed:ai.onnx.ml::LinearClassifier"


def _gero(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _run(tmp: Path, coefficients: int) -> tuple[subprocess.CompletedProcess[str], Path,
                                                  list[dict[str, Any]]]:
    """`gero run` of a 1-node LinearClassifier 'lc' (3 classes, input [3, 2]) holding
    ``coefficients`` coefficients, with its fp16 file, on ONNX Runtime and the
    ReferenceEvaluator; its findings."""
    cls = helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain="ai.onnx.ml",
                           name="lc", classlabels_ints=[0, 1, 2], post_transform="SOFTMAX",
                           coefficients=np.linspace(-1, 1, coefficients).tolist(),
                           intercepts=[0.1, 0.2, 0.3])
    graph = helper.make_graph(
        [cls], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)  # the checker accepts it: sizes are no part of it
    onnx.save(model, tmp / "lc.onnx")
    np.savez(tmp / "x.npz", x=np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], np.float32))
    data = tmp / "data"
    out = _gero("run", "--model", str(tmp / "lc.onnx"), "--inputs", str(tmp / "x.npz"),
                "--variants", "fp16", "--backends", "onnxruntime,onnx-reference",
                "--jobs", "1", "--repeats", "1", "--data-dir", str(data), "-q")
    listed = _gero("findings", "--data-dir", str(data), "--format", "json")
    findings: list[dict[str, Any]] = json.loads(listed.stdout)["findings"]
    return out, data, findings


@pytest.mark.slow
def test_a_malformed_linear_classifier_is_one_finding_about_the_model(tmp_path: Path) -> None:
    out, data, findings = _run(tmp_path, coefficients=12)
    assert out.returncode == 1, out.stdout + out.stderr  # a problem found in the model
    titles = [f["title"] for f in findings]
    assert titles == [
        "lc is malformed: LinearClassifier 'lc' holds 12 coefficients for 3 classes × 2 "
        "features (the spec needs 6); ONNX Runtime runs it anyway, the ReferenceEvaluator "
        "refuses it"], titles
    assert not any(t.startswith("The ReferenceEvaluator") for t in titles), titles
    (finding,) = findings
    assert finding["result"] == "contract_issue"
    rows = open_run(data).query(
        "SELECT \"check\", backend, scope, result FROM obs WHERE cause_key = ? "
        "ORDER BY ALL", [KEY])
    # the model's row, the evaluator's failures on the model and on its fp16 file, the
    # float64 shadow and the fp16 yardstick built from it: all the model's, one finding
    assert {(c, b, s) for c, b, s, _ in rows} == {
        ("agreement", "onnx-reference", "model"),
        ("model:float64-shadow", "float64-shadow", "model"),
        ("model:fp16", "onnx-reference", "fp16"),
        ("model:fp16:scaled", "float64-shadow", "fp16"),
        ("model:structure", "model-structure", "model")}, rows
    assert finding["observations"] == len(rows)
    others = open_run(data).query(
        "SELECT count(*) FROM obs WHERE result <> 'passed' AND cause_key <> ?", [KEY])
    assert others == [(0,)]


@pytest.mark.slow
def test_a_well_formed_linear_classifier_has_no_malformed_finding(tmp_path: Path) -> None:
    out, data, findings = _run(tmp_path, coefficients=6)
    assert out.returncode == 0, out.stdout + out.stderr
    assert findings == [], [f["title"] for f in findings]
    assert open_run(data).query(
        "SELECT count(*) FROM obs WHERE \"check\" = 'model:structure' "
        "OR starts_with(cause_key, 'malformed:')") == [(0,)]
