"""Issue 40 round 4: localize against the dequantized float64 arbiter of an already quantised
model compares only the tensors both sides compute with the same meaning (tashkeel: the
arbiter computes DynamicQuantizeLinear as the identity, so the scale product
'/attention/W/MatMul_quant_scales_mul' and MatMulInteger's accumulator differ by
construction and were named origins at '898 %' and '10515 %' of the final error); an
origin whose share is far over the final error is not named; a node that only moves data
is a carrier, never an amplifier (khmersm: 'Squeeze, Gather and Gather after it magnify
it')."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest
from evidence_helpers import model_rows, row_where
from onnx import TensorProto, helper, numpy_helper
from quantised_models import quantised_lstm

from gero_runner.evidence.localization import NodeFinding, Side
from gero_runner.evidence.localize import judge as judge_module
from gero_runner.evidence.localize import localize_observation
from gero_runner.evidence.localize.bounds import DEQUANTIZED, SHADOW, SHADOW_KIND
from gero_runner.evidence.localize.search import dequantized_meanings
from gero_runner.evidence.localize.sides import run_side


def _quantised_matmul() -> onnx.ModelProto:
    """x → DynamicQuantizeLinear → MatMulInteger(int8 W) → Cast → Mul by a_scale·w_scale:
    the pattern ORT's dynamic quantizer writes (tashkeel's attention)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-127, 128, (4, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(np.array(0.02, np.float32), "w_scale"),
             numpy_helper.from_array(np.array(0, np.int8), "w_zero")]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "x_scale", "x_zero"]),
        helper.make_node("MatMulInteger", ["xq", "W", "x_zero", "w_zero"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x_scale", "w_scale"], ["scales_mul"], name="scales_mul"),
        helper.make_node("Mul", ["acc_f", "scales_mul"], ["y0"], name="dequantize"),
        helper.make_node("Relu", ["y0"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "qmm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_the_quantisation_tensors_are_the_ones_the_shadow_means_otherwise() -> None:
    """The integers, the scales, their product and the accumulator's Cast: not compared; the
    Mul that dequantizes (an accumulator times a scale) and what follows are."""
    unlike = dequantized_meanings(_quantised_matmul().graph)
    assert unlike == {"xq", "x_scale", "x_zero", "acc", "acc_f", "scales_mul"}


def test_a_region_cut_from_a_dequantized_model_is_computed_dequantized() -> None:
    """The region (DynamicQuantizeLinear … the dequantizing Mul) has no com.microsoft
    operator: told so, the shadow computes it as the whole model's shadow did (no rounding
    of x); before, a region alone quantized x while the trace did not."""
    model = _quantised_matmul()
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    w = numpy_helper.to_array(model.graph.initializer[0]).astype(np.float64) * float(
        np.float32(0.02))
    exact = np.maximum(x.astype(np.float64) @ w, 0)
    told = Side(SHADOW, SHADOW_KIND, SHADOW, {DEQUANTIZED: True}, "model.onnx")
    got = run_side(told, model, {"x": x}, ["y"])["y"]
    assert np.allclose(got, exact, rtol=1e-12, atol=1e-12)
    plain = Side(SHADOW, SHADOW_KIND, SHADOW, {}, "model.onnx")
    quantised = run_side(plain, model, {"x": x}, ["y"])["y"]
    assert not np.allclose(quantised, exact, rtol=1e-6, atol=1e-6)


def _finding(tensor: str, op: str, local: float, share: float | None) -> NodeFinding:
    return NodeFinding(tensor, op, tensor, [f"{op} '{tensor}'"], {}, 0.0, local, local, 1e-6,
                       math.inf, share)


def test_an_origin_over_the_final_error_is_not_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """judge's last step on measured shares: 8.98× the final error is a different quantity
    (the scale product), dropped with a note; 0.9× stays the origin."""
    origins = [_finding("scales_mul", "Mul", 0.99, None), _finding("y0", "Mul", 0.1, None)]
    shares = {"scales_mul": 8.98, "y0": 0.9}
    s: Any = SimpleNamespace(notes=[], b=SimpleNamespace(label="float64-shadow"),
                             share=lambda t, v, f: shares[t], position={"scales_mul": 0, "y0": 1})
    kept = judge_module._measured_origins(s, origins, {"scales_mul": np.zeros(1),
                                                     "y0": np.zeros(1)}, 0.11)
    assert [o.tensor for o in kept] == ["y0"]
    assert any("scales_mul (Mul)" in n and "8.98× the final error" in n for n in s.notes)


@pytest.mark.parametrize("op", sorted(judge_module.DATA_MOVEMENT))
def test_a_node_that_moves_data_is_a_carrier(op: str) -> None:
    """khmersm's Gather 'gain' of 10 was the scaled error's denominator changing (a slice
    with a smaller max|r|): a data-movement node carries; a Mul with the same gain amplifies."""
    assert judge_module.carrying_role(op, 0.065, 0.0065) == "carrier"
    assert judge_module.carrying_role("Mul", 0.065, 0.0065) == "amplifier"
    assert judge_module.carrying_role("Mul", 0.005, 0.0065) == "carrier"


@pytest.mark.slow
def test_localize_of_a_quantised_model_against_its_arbiter_skips_the_quantisation_tensors(
        tmp_path: Path) -> None:
    """In a run: ORT's dynamic quantizer's LSTM + MatMul (com.microsoft DynamicQuantizeLSTM,
    so the arbiter is dequantized); the model:fp32 row against the float64 arbiter traces
    the float tensors (the LSTM's, the dequantized MatMul's output) and none of the
    integers, scales or their product (were compared: MatMulInteger's accumulator, the
    scales' Mul)."""
    root = tmp_path / "d"
    model_path = quantised_lstm(tmp_path)
    rows = model_rows(root, model_path)
    row = row_where(rows, check="model:fp32", backend="onnxruntime", reference="float64-shadow")
    loc, _ = localize_observation(root, row)
    graph = onnx.load(str(model_path)).graph
    unlike = dequantized_meanings(graph)
    made = {t: n for n in graph.node for t in n.output}
    # The scale product, the accumulator and its Cast are among the tensors not compared.
    assert {made[t].op_type for t in unlike} == {"DynamicQuantizeLinear", "Mul",
                                                 "MatMulInteger", "Cast"}
    compared = {t.name for t in loc.tensors}
    assert "y" in compared and compared & {"Y", "Yh", "h"}
    assert not compared & unlike
    assert any("quantisation tensors" in n for n in loc.notes)
