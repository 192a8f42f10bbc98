"""Regions side by side in one model (localize's nodes alone, one compile per side): each
region computes from the values it is given, even where another region makes the same
tensor, and a region holding a subgraph is not combined."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from gero_runner.evidence import subgraphs as sg


def _chain() -> onnx.ModelProto:
    nodes = [helper.make_node("Mul", ["x", "x"], ["a"], name="square"),
             helper.make_node("Add", ["a", "x"], ["b"], name="plus"),
             helper.make_node("Exp", ["b"], ["y"], name="exp")]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str]
         ) -> dict[str, Any]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    return dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in inputs}),
                    strict=True))


def test_each_region_computes_from_what_it_is_given() -> None:
    model = _chain()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    # 'b' from the given 'a' (deliberately not x*x), and 'a' from x: apart in one model.
    feeds = {"x": x, "a": np.array([10.0, 20.0, 30.0], np.float32)}
    built = sg.regions_model(model, [([0], "a"), ([1], "b")], feeds)
    assert built is not None
    combined, names = built
    got = _run(combined, feeds, [names["a"], names["b"]])
    alone_a = _run(sg.region_model(model, [0], ["a"], feeds), feeds, ["a"])["a"]
    alone_b = _run(sg.region_model(model, [1], ["b"], feeds), feeds, ["b"])["b"]
    np.testing.assert_array_equal(got[names["a"]], alone_a)
    np.testing.assert_array_equal(got[names["b"]], alone_b)
    np.testing.assert_array_equal(got[names["b"]], feeds["a"] + x)


def test_a_region_holding_a_subgraph_is_not_combined() -> None:
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=then)]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"c": np.array(True), "x": np.zeros(3, np.float32)}
    assert sg.regions_model(model, [([0], "y")], feeds) is None
