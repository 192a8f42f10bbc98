"""The fp16 yardstick of an already quantised model's fp16 file (issue 40): the file keeps
its com.microsoft DynamicQuantizeLSTM (blocked in float32), which the ReferenceEvaluator
lacks and the model's arbiter computes only dequantized (no activation rounding: not the
file's computation). The yardstick says so in one sentence (tashkeel's row quoted
"NotImplementedError: Node type 'DynamicQuantizeLSTM' from domain 'com.microsoft' is…"),
while the model's own dequantized arbiter still runs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from gero_runner.models import fp16_reference, shadow, variants


def _quantised_lstm(tmp: Path) -> onnx.ModelProto:
    """x[3, 2, 6] -> LSTM(8) -> its last hidden state · M[8, 5], quantize_dynamic'd."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((1, 32, 6)) * 0.3,
               "R": rng.standard_normal((1, 32, 8)) * 0.3,
               "B": rng.standard_normal((1, 64)) * 0.1, "M": rng.standard_normal((8, 5))}
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=8),
         helper.make_node("Squeeze", ["Yh"], ["h"]),
         helper.make_node("MatMul", ["h", "M"], ["y"])], "lstm",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 2, 6])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    src, dst = tmp / "lstm.onnx", tmp / "lstm_int8.onnx"
    onnx.save(model, str(src))
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
    finally:
        logging.disable(previous)
    return onnx.load(str(dst))


def test_the_fp16_yardstick_of_a_quantised_models_fp16_file_says_why_not(
        tmp_path: Path) -> None:
    model = _quantised_lstm(tmp_path)
    assert shadow.needs_dequantizing(model) == ["DynamicQuantizeLSTM"]
    x = np.random.default_rng(1).standard_normal((3, 2, 6)).astype(np.float32)
    fp16 = variants.build(variants.FP16, model.SerializeToString(), {"x": x}, 0)
    assert any(n.op_type == "DynamicQuantizeLSTM" for n in onnx.load_from_string(fp16).graph.node)
    with pytest.raises(shadow.ShadowUnavailable) as rounded:
        fp16_reference.rounded_shadow(fp16, {"x": x})
    with pytest.raises(shadow.ShadowUnavailable) as exact:
        shadow.run_shadow(onnx.load_from_string(fp16), {"x": x})
    for e in (rounded, exact):
        assert str(e.value).startswith(
            "no exact float64 computation of com.microsoft DynamicQuantizeLSTM: the "
            "ReferenceEvaluator has none, and the model's arbiter computes it with the int8 "
            "weights dequantized")
    arbiter = np.asarray(shadow.run_shadow_traced(model, {"x": x}).outputs["y"])
    assert arbiter.dtype == np.float64 and np.isfinite(arbiter).all()
