"""The fp16 variant of an already quantised graph (ddddocr's dynamic-int8 recogniser): its
quantisation stays float32 and the file is a valid graph. The converter fed
DynamicQuantizeLinear float16, which takes float32 only, and ONNX Runtime refused the file."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from gero_runner.models import variants


def _dynamic_int8_matmul() -> bytes:
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (8, 4)).astype(np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "W", "xz", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["scale"]),
        helper.make_node("Mul", ["accf", "scale"], ["m"]),
        helper.make_node("Add", ["m", "bias"], ["y"]),
    ]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "bias")]
    graph = helper.make_graph(nodes, "dq", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


def test_the_fp16_file_of_a_quantised_graph_keeps_its_quantisation_in_float32() -> None:
    model = _dynamic_int8_matmul()
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    built = variants.build(variants.FP16, model, {"x": x}, seed=0)
    proto = onnx.load_from_string(built)
    # The float parts are float16; the quantiser is fed float32.
    assert {i.name: i.data_type for i in proto.graph.initializer}["bias"] == TensorProto.FLOAT16
    session = ort.InferenceSession(built, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    (ref,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.abs(y - ref).max() <= 4e-3 * np.abs(ref).max()
