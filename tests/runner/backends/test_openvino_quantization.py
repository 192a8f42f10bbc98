"""OpenVINO's default path quantizes the activations of MatMuls with int8 weights at run
time (DYNAMIC_QUANTIZATION_GROUP_SIZE 32): the int8 MiniLM's error was named 'computes
float32 in bf16', the smaller half (0.0021 of its 0.0075 off float64)."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gero_runner.backends.openvino import DEFAULT, F32, _settings
from gero_runner.evidence.localization import Side
from gero_runner.evidence.localize.bounds import RUNTIME
from gero_runner.evidence.localize.observation import _precision_cause, precision_before

# Not importorskip: importing OpenVINO while collecting makes every later fork_workers test
# in that xdist worker start its children from a fork server (tests/conftest.py).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                reason="OpenVINO is not installed")


def _matmul(weights: str) -> onnx.ModelProto:
    """x @ W, W int8 dequantized in the graph (``weights`` 'int8') or float32 ('float')."""
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 127, (64, 32)).astype(np.int8)
    if weights == "int8":
        nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["w"]),
                 helper.make_node("MatMul", ["x", "w"], ["y"])]
        inits = [numpy_helper.from_array(q, "q"),
                 numpy_helper.from_array(np.array(0.01, np.float32), "s"),
                 numpy_helper.from_array(np.array(0, np.int8), "z")]
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        inits = [numpy_helper.from_array(q.astype(np.float32) * 0.01, "w")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 64])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 32])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _side(hint: str, precision: str) -> Side:
    return Side(f"openvino:{precision}-{hint}", RUNTIME, "openvino",
                _settings(hint, precision, 1), "model.onnx")


@pytest.mark.slow
def test_precision_cause_names_the_dynamic_quantization_the_compiled_model_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GERO_CACHE_DIR", "off")
    cause = _precision_cause(_side(DEFAULT, "bf16"), 0.03, _matmul("int8"))
    assert cause.startswith("openvino:bf16-default computes float32 in bf16 (its inference "
                            "precision) and quantizes the activations of its 1 MatMul with "
                            "int8 weights to 8 bits at run time (dynamic quantization, group "
                            "size 32): ")
    # Float weights: nothing is quantized, the precision alone is named.
    plain = _precision_cause(_side(DEFAULT, "bf16"), 0.03, _matmul("float"))
    assert plain.startswith("openvino:bf16-default computes float32 in bf16 (its inference "
                            "precision): ")
    # The cause of an origin whose error entered before it names it too.
    before = precision_before(_side(DEFAULT, "bf16"), _matmul("int8"))
    assert "and quantizes the activations of its 1 MatMul with int8 weights" in before, before
    # gero's f32 path turns the quantization off (group size 0): its compiled model says so.
    from gero_runner.backends.openvino import RUNTIME as OV

    model = _matmul("int8").SerializeToString()
    assert OV.run_time_quantization(model, _settings(F32, F32, 1)) == ""
    assert "group size 32" in OV.run_time_quantization(
        model, {**_settings(F32, F32, 1), "plugin_default": F32})


@pytest.mark.slow
def test_a_levels_row_names_the_quantization_beside_the_precision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The int8 MiniLM's levels row, bf16-default against f32, said 'the precision is the one
    difference between the two settings'; gero's f32 also turns the quantization off."""
    from dataclasses import replace
    from types import SimpleNamespace
    from typing import Any, cast

    from gero_runner.case import CaseInstance
    from gero_runner.checks.model import fewer_bits_level_rows
    from gero_runner.execution import evaluate
    from gero_runner.execution.context import PathResult

    monkeypatch.setenv("GERO_CACHE_DIR", "off")
    case = CaseInstance("model", "model/m", "model", "m", "float32", 0,
                        _matmul("int8").SerializeToString(), {})

    def path(level: str, hint: str, precision: str, y: np.ndarray) -> PathResult:
        p = PathResult(f"openvino-{level}", "openvino", "1", level, 1,
                       _settings(hint, precision, 1))
        p.outputs = [y]
        return p

    y = np.ones((2, 32), np.float32)
    paths = {p.name: p for p in (path("f32", F32, F32, y),
                                 path("bf16-default", DEFAULT, "bf16", y + 0.1))}
    ctx = cast(Any, SimpleNamespace(case=case, paths=paths, output_names=["y"]))
    row = replace(evaluate.execution_rows(case, "x")[0], check="levels", result="divergence",
                  backend="openvino", optimization="bf16-default", reference="openvino:f32",
                  output_name="y", dtype="float32")
    got = fewer_bits_level_rows(ctx, [row])[0]
    assert got.arbiter == "reference"
    assert got.reason.startswith(
        "OpenVINO at bf16-default computes float32 in bf16 (its inference precision) and "
        "quantizes the activations of its 1 MatMul with int8 weights to 8 bits at run time "
        "(dynamic quantization, group size 32), against its own openvino:f32 computing as the "
        "graph declares: these are the two differences"), got.reason
