"""Small ONNX models for the API tests: a sound classifier and one that mixes its batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def classifier(path: Path, *, mixes_batch: bool = False) -> Path:
    """x[batch, 4] -> tanh(x·W1 + b) -> ·W2 -> logits[batch, 3], probs (softmax).

    With ``mixes_batch`` the hidden layer subtracts the batch mean: each example's output
    depends on the others, which the batch partition law catches (a broken model).
    """
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array((rng.standard_normal((4, 4)) * 0.5).astype(np.float32), "W1")
    w2 = numpy_helper.from_array((rng.standard_normal((4, 3)) * 0.5).astype(np.float32), "W2")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["h2"]),
             helper.make_node("Tanh", ["h2"], ["h3"])]
    if mixes_batch:
        nodes += [helper.make_node("ReduceMean", ["h3"], ["m"], axes=[0], keepdims=1),
                  helper.make_node("Sub", ["h3", "m"], ["h4"])]
    else:
        nodes += [helper.make_node("Identity", ["h3"], ["h4"])]
    nodes += [helper.make_node("MatMul", ["h4", "W2"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
        [w1, w2, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
