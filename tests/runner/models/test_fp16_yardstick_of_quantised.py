"""The fp16 yardstick of an already quantised model's fp16 file (issue 40): the file keeps
its com.microsoft DynamicQuantizeLSTM (blocked in float32), which the ReferenceEvaluator
lacks and the model's arbiter computes only dequantized (no activation rounding: not the
file's computation). The yardstick says so in one sentence (tashkeel's row quoted
"NotImplementedError: Node type 'DynamicQuantizeLSTM' from domain 'com.microsoft' is…"),
while the model's own dequantized arbiter still runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from quantised_models import quantised_lstm

from gero_runner.models import fp16_reference, shadow, variants


def test_the_fp16_yardstick_of_a_quantised_models_fp16_file_says_why_not(
        tmp_path: Path) -> None:
    model = onnx.load(str(quantised_lstm(tmp_path)))
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
