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
