"""Already quantised models that tests in several folders build (issue 40: the dequantized
float64 arbiter, its judge, its localize, the fp16 yardstick of a quantised file): a small
LSTM through ONNX Runtime's dynamic quantizer, and that quantizer run without its logging."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

HIDDEN, FEATURES = 8, 6


@contextmanager
def quiet_quantizer() -> Iterator[None]:
    """ONNX Runtime's quantizers log a warning per node they leave alone (to the root
    logger): the tests' output would be full of them."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


def dynamic_int8(model: onnx.ModelProto, tmp: Path, stem: str) -> Path:
    """``model`` saved as ``tmp/stem.onnx`` and quantised by ``quantize_dynamic`` (int8
    weights) to ``tmp/stem_int8.onnx``, which is returned."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src, dst = tmp / f"{stem}.onnx", tmp / f"{stem}_int8.onnx"
    onnx.save(model, str(src))
    with quiet_quantizer():
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
    return dst


def float_lstm() -> onnx.ModelProto:
    """x[3, 2, 6] -> LSTM(8) -> its last hidden state · M[8, 5] (the same weights each call)."""
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((1, 4 * HIDDEN, FEATURES)) * 0.3,
               "R": rng.standard_normal((1, 4 * HIDDEN, HIDDEN)) * 0.3,
               "B": rng.standard_normal((1, 8 * HIDDEN)) * 0.1,
               "M": rng.standard_normal((HIDDEN, 5))}
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=HIDDEN),
         helper.make_node("Squeeze", ["Yh"], ["h"]),
         helper.make_node("MatMul", ["h", "M"], ["y"])], "lstm",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 2, FEATURES])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def quantised_lstm(tmp: Path) -> Path:
    """``float_lstm`` through the dynamic quantizer (``tmp/lstm_int8.onnx``): com.microsoft
    DynamicQuantizeLSTM, DynamicQuantizeLinear, MatMulInteger."""
    return dynamic_int8(float_lstm(), tmp, "lstm")
