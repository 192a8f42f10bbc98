"""A model whose operators sit in the branches of an If (silero-vad: its whole network, the
weights as Constant nodes) is quantised there; a quantizer that quantises nothing is a build
failure that says why, never an 'int8' file that is the fp32 model again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from model_helpers import opts
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero_runner.models import variants as var
from gero_runner.run import RunRequest, execute


def branchy(tmp: Path, outer: bool = False) -> str:
    """y = x·W16 when sr == 16000, else x·W8; each weight a Constant node in its branch, or
    (``outer``) an initializer of the main graph that the branch reads (silero-vad's op18
    file)."""
    rng = np.random.default_rng(0)
    weights = []

    def branch(name: str) -> onnx.GraphProto:
        w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32),
                                    f"{name}_w")
        nodes = [helper.make_node("MatMul", ["x", f"{name}_w"], [f"{name}_y"])]
        if outer:
            weights.append(w)
        else:
            nodes.insert(0, helper.make_node("Constant", [], [f"{name}_w"], value=w))
        return helper.make_graph(
            nodes, name, [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, ["N", 8])])

    sixteen = numpy_helper.from_array(np.array(16000, dtype=np.int64), "k")
    nodes = [helper.make_node("Constant", [], ["k"], value=sixteen),
             helper.make_node("Equal", ["sr", "k"], ["is16"]),
             helper.make_node("If", ["is16"], ["y"], then_branch=branch("then"),
                              else_branch=branch("else"))]
    return save(tmp / "branchy.onnx", nodes,
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
                 helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], weights)


@pytest.mark.parametrize("outer", [False, True])
def test_int8_dynamic_quantises_inside_if_branches(tmp_path: Path, outer: bool) -> None:
    model = Path(branchy(tmp_path, outer)).read_bytes()
    inputs: dict[str, np.ndarray] = {"x": np.ones((4, 8), np.float32),
                                     "sr": np.array(16000, np.int64)}
    built = onnx.load_from_string(var.build("int8-dynamic", model, inputs, 0))
    assert var.quantised_nodes(built.graph) >= 2  # one MatMulInteger (or fused op) per branch
    assert var.quantised_nodes(onnx.load_from_string(model).graph) == 0


@pytest.mark.slow
def test_a_static_quantizer_that_quantises_nothing_is_a_build_row(tmp_path: Path) -> None:
    path = branchy(tmp_path)
    feeds = tmp_path / "x.npz"
    np.savez(feeds, x=np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32),
             sr=np.array(16000, np.int64))
    record = execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1,
                                checks=(), backends=("onnxruntime",),
                                model_options=opts(inputs_file=str(feeds),
                                                   variants=["int8-static", "int8-dynamic"])))
    rows = rows_of(tmp_path / "d", record.run_id)
    build = [r for r in rows if r["check"] == "model:int8-static:build"]
    assert len(build) == 1 and build[0]["result"] == "passed"  # gero's builder: a note
    assert "quantised no operator" in str(build[0]["reason"])
    assert "If/Loop/Scan bodies" in str(build[0]["reason"])
    assert not [r for r in rows if r["check"].startswith("model:int8-static:")
                and r["check"] != "model:int8-static:build"]
    # int8-dynamic was quantised in the branches: its file is not the fp32 model again.
    dynamic = [r for r in rows if r["check"] == "model:int8-dynamic:vs-model"]
    assert dynamic and not any("bit-identical" in str(r["reason"]) for r in dynamic)


def test_toposort_orders_what_if_bodies_read_in_every_graph() -> None:
    """The quantizer wrote silero-vad's main graph with an If before the node whose output
    its body reads; ONNX Runtime sorts, the ReferenceEvaluator runs the file's order."""
    def body(name: str, reads: str) -> onnx.GraphProto:
        inner = helper.make_graph(
            [helper.make_node("Identity", [f"{name}_t"], [f"{name}_u"])], f"{name}_in", [],
            [helper.make_tensor_value_info(f"{name}_u", TensorProto.FLOAT, [1])])
        # the nested If reads t, made after it in this body
        return helper.make_graph(
            [helper.make_node("If", ["c"], [f"{name}_y"], then_branch=inner,
                              else_branch=inner),
             helper.make_node("Neg", [reads], [f"{name}_t"])], name, [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [1])])

    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=body("a", "v"),
                          else_branch=body("b", "v")),
         helper.make_node("Abs", ["x"], ["v"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    var.toposort(graph)
    assert [n.op_type for n in graph.node] == ["Abs", "If"]
    then = graph.node[1].attribute[0].g if graph.node[1].attribute[0].name == "then_branch" \
        else graph.node[1].attribute[1].g
    assert [n.op_type for n in then.node] == ["Neg", "If"]
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    from onnx.reference import ReferenceEvaluator

    outputs: Any = ReferenceEvaluator(model).run(None, {"x": np.array([-2.0], np.float32),
                                                        "c": np.array(True)})
    assert outputs[0].tolist() == [-2.0]
