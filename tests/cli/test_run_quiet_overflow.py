"""`gero run -q` prints nothing but errors: a model whose values overflow (float32 past
3.4e38, and its fp16 file past 65504) gives rows with NaN and inf counts, not NumPy
RuntimeWarnings on stderr from the main process or a worker (issue 41's bench models
printed dozens of them from the ReferenceEvaluator)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.slow


def _overflowing(tmp: Path) -> tuple[Path, Path]:
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "X"], ["a"]),
         helper.make_node("ReduceSum", ["a"], ["Y"], keepdims=0)], "over",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    path, inputs = tmp / "over.onnx", tmp / "inputs.npz"
    onnx.save(model, str(path))
    np.savez(inputs, X=np.full((4, 8), 3e38, np.float32))
    return path, inputs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_quiet_run_of_an_overflowing_model_prints_nothing(tmp_path: Path, jobs: str) -> None:
    model, inputs = _overflowing(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--model", str(model), "--inputs",
         str(inputs), "--variants", "fp16", "--backends", "onnxruntime", "--jobs", jobs,
         "--data-dir", str(tmp_path / "data"), "-q"],
        env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr == "", done.stderr
    assert done.stdout == "", done.stdout
