"""Findings of real ``gero run`` processes on tiny graphs, grouped on the recorded facts
(issue 40 items 6-7): a runtime that lacks an operator of the model is one finding about the
model, its failures on the variant files members of it, its title naming the operator."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gero_runner.storage.reader import open_run

ROOT = Path(__file__).resolve().parents[3]


def _gero(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _scaler_model(path: Path) -> None:
    """A scikit-learn-like graph: an ai.onnx.ml Scaler before a MatMul (OpenVINO and tract
    have no Scaler; ONNX Runtime and the ReferenceEvaluator run it)."""
    scaler = helper.make_node("Scaler", ["x"], ["s"], domain="ai.onnx.ml",
                              scale=[2.0, 2.0, 2.0], offset=[0.5, 0.5, 0.5])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 4],
                           np.linspace(-1, 1, 12).astype(np.float32).tolist())
    graph = helper.make_graph(
        [scaler, helper.make_node("MatMul", ["s", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.slow
def test_a_runtime_lacking_a_models_operator_is_one_finding_naming_it(tmp_path: Path) -> None:
    lacking = [r for r in ("openvino", "tract") if importlib.util.find_spec(r) is not None]
    if not lacking:
        pytest.skip("neither OpenVINO nor tract is installed")
    _scaler_model(tmp_path / "scaler.onnx")
    data = tmp_path / "data"
    out = _gero("run", "--model", str(tmp_path / "scaler.onnx"), "--dim", "n=2",
                "--variants", "int8-dynamic",
                "--jobs", "1", "--repeats", "1", "--data-dir", str(data), "-q")
    assert out.returncode == 1, out.stderr
    scopes = open_run(data).query(
        "SELECT backend, list(DISTINCT scope ORDER BY scope) FROM obs "
        "WHERE cause_key = 'unsupported-op:ai.onnx.ml::Scaler' GROUP BY backend")
    assert dict(scopes) == {r: ["int8-dynamic", "model"] for r in lacking}
    listed = json.loads(_gero("findings", "--data-dir", str(data), "--format", "json").stdout)
    lacks = [f for f in listed["findings"] if f["cause_key"].startswith("unsupported-op:")]
    assert sorted(f["outlier"] for f in lacks) == sorted(lacking)  # one each, files included
    for f in lacks:
        assert f["scope"] == "model"
        assert f["title"].split(" [")[0].endswith(
            "cannot run scaler: it does not implement ai.onnx.ml.Scaler"), f["title"]


def _malformed_classifier(path: Path) -> None:
    """logreg_iris's shape (onnxruntime's own dataset, issue 40): a LinearClassifier holding
    12 coefficients for 3 classes of 2 declared features (ONNX Runtime uses 6 of them, the
    ReferenceEvaluator refuses: 'operands could not be broadcast'), then a ZipMap whose
    seq(map) output gero does not compare."""
    cls = helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain="ai.onnx.ml",
                           classlabels_ints=[0, 1, 2], post_transform="SOFTMAX",
                           coefficients=np.linspace(-1, 1, 12).tolist(),
                           intercepts=[0.1, 0.2, 0.3], multi_class=1)
    zipmap = helper.make_node("ZipMap", ["p"], ["probabilities"], domain="ai.onnx.ml",
                              classlabels_int64s=[0, 1, 2])
    seq = helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])))
    graph = helper.make_graph(
        [cls, zipmap], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, [3]),
         helper.make_value_info("probabilities", seq)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.slow
def test_geros_own_limits_are_no_runtimes_failure_and_one_evaluator_error_is_one_finding(
        tmp_path: Path) -> None:
    """Issue 40 items 9-10 (logreg_iris): the seq(map) output ONNX Runtime computed is gero's
    limit, titled so, not 'ONNX Runtime cannot run model'; the ReferenceEvaluator's error, which
    the float64 shadow and the fp16 yardstick meet too, is one finding (it was three), with no
    output's dtype in its title."""
    model = tmp_path / "logreg.onnx"
    _malformed_classifier(model)
    np.savez(tmp_path / "x.npz", x=np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], np.float32))
    data = tmp_path / "data"
    out = _gero("run", "--model", str(model), "--inputs", str(tmp_path / "x.npz"),
                "--variants", "fp16", "--backends", "onnxruntime,onnx-reference",
                "--jobs", "1", "--repeats", "1", "--data-dir", str(data), "-q")
    assert out.returncode == 1, out.stderr
    listed = _gero("findings", "--data-dir", str(data), "--format", "json")
    findings = json.loads(listed.stdout)["findings"]
    titles = [f["title"] for f in findings]
    limit = [f for f in findings if f["outlier"] == "gero"]
    assert [f["title"] for f in limit] == [
        "gero does not compare an output of logreg (its limit, not a runtime's failure): "
        "output 'probabilities' is seq(map(int64,tensor(float32))), not a tensor"], titles
    assert not any(t.startswith("ONNX Runtime cannot run") for t in titles), titles
    broadcast = [f for f in findings if "could not be broadcast" in f["title"]]
    assert len(broadcast) == 1, titles
    assert broadcast[0]["outlier"] == "onnx-reference"
    assert broadcast[0]["title"].startswith("The ReferenceEvaluator cannot run logreg: ")
    assert broadcast[0]["observations"] >= 3  # its path, the shadow, the fp16 yardstick
