"""The int8-static calibration session runs in priority-based order: ONNX Runtime's default
order kept every activation of a CNN alive at once (1.39 GB on PP-OCRv4's detector), and
the order must change nothing but that."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from gero_runner.models import variants


def _cnn() -> bytes:
    """Six 3x3 convolutions with ReLUs: a chain of activations to calibrate."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(6):
        w = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


def test_priority_order_builds_the_same_file_and_is_what_the_calibrator_uses(
        monkeypatch: Any) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import calibrate

    original = calibrate.CalibraterBase.create_inference_session
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 4, 16, 16)).astype(np.float32)}
    calibration = variants.Calibration((feeds,), "feeds")
    orders = []
    created = ort.InferenceSession.__init__

    def spy(self: Any, path: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
        if sess_options is not None:
            orders.append(sess_options.execution_order)
        created(self, path, sess_options, *args, **kwargs)

    monkeypatch.setattr(ort.InferenceSession, "__init__", spy)
    ours = variants.build(variants.INT8_STATIC, _cnn(), feeds, 0, calibration)
    assert orders == [ort.ExecutionOrder.PRIORITY_BASED]
    assert calibrate.CalibraterBase.create_inference_session is original  # for this call only
    # The calibrator's own session again, as ONNX Runtime creates it: the same bytes.
    monkeypatch.setattr(variants, "_calibration_in_priority_order",
                        lambda: __import__("contextlib").nullcontext())
    stock = variants.build(variants.INT8_STATIC, _cnn(), feeds, 0, calibration)
    assert ours == stock
