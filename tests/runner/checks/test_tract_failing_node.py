"""A failure whose error names the node it failed on is keyed and titled by that node's
operator and dtype (issue 40, D8): tract 0.22 cannot take in a float16 LayerNormalization or
Gemm ("Translating node #48 "NAME" LayerNorm ToTypedTranslator", caused by "Output mismatch
after rewiring expansion…"); its title quoted only that root cause, so two operators of two
models both named model.onnx were one finding id, and neither title named its operator.

Real ``gero run`` processes on one-node models; tract itself runs the fp32 model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from gero_processes import gero
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows

from gero_runner.execution.context import node_op
from gero_runner.facts import error_key, failing_node, failure_facts, node_of_key

TRACT_LN = ('TractError: Translating node #48 "/embeddings/LayerNorm/LayerNormalization" '
            "LayerNorm ToTypedTranslator\n\nCaused by:\n    Output mismatch after rewiring "
            "expansion for output #0: expected 2,16,384,F16 got 2,16,384,F32")


def _one_node(folder: Path, node: onnx.NodeProto, width: int, out: int,
              weights: list[onnx.TensorProto]) -> tuple[Path, Path]:
    folder.mkdir()
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, width])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, out])], weights)
    path, inputs = folder / "model.onnx", folder / "inputs.npz"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), str(path))
    np.savez(inputs, X=np.linspace(-2, 2, 2 * width, dtype=np.float32).reshape(2, width))
    return path, inputs


def _layer_norm(folder: Path) -> tuple[Path, Path]:
    return _one_node(folder, helper.make_node("LayerNormalization", ["X", "s", "b"], ["Y"],
                                              name="ln", axis=-1), 4, 4,
                     [numpy_helper.from_array(np.ones(4, np.float32), "s"),
                      numpy_helper.from_array(np.zeros(4, np.float32), "b")])


def _gemm(folder: Path) -> tuple[Path, Path]:
    return _one_node(folder, helper.make_node("Gemm", ["X", "W", "c"], ["Y"], name="gemm",
                                              transB=1), 4, 3,
                     [numpy_helper.from_array(
                         np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "W"),
                      numpy_helper.from_array(np.zeros(3, np.float32), "c")])


def _run(tmp: Path, made: tuple[Path, Path]) -> tuple[list[dict[str, Any]],
                                                       list[dict[str, Any]]]:
    model, inputs = made
    root = tmp / "data"
    done = gero("run", "--model", str(model), "--inputs", str(inputs), "--variants", "fp16",
                "--backends", "onnxruntime,tract", "--no-contracts", "--jobs", "1",
                "--data-dir", str(root), "-q")
    assert done.returncode == 1, done.stderr  # found something
    listed = gero("findings", "--data-dir", str(root), "--format", "json")
    assert listed.returncode == 1, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)["findings"]
    return obs_rows(root), found


def _tract_finding(found: list[dict[str, Any]]) -> dict[str, Any]:
    (finding,) = [f for f in found if f["title"].startswith("Tract ")]
    return finding


@pytest.mark.slow
def test_tracts_failure_on_a_float16_node_names_its_operator_and_dtype(tmp_path: Path) -> None:
    pytest.importorskip("tract", reason="tract is not installed (pip install 'gero[tract]')")
    rows, found = _run(tmp_path / "ln", _layer_norm(tmp_path / "ln_model"))
    failed = [r for r in rows if r["backend"] == "tract" and r["result"] != "passed"]
    assert {(r["check"], r["scope"], r["failure_kind"]) for r in failed} == {
        ("model:fp16", "fp16", "cannot-run")}, failed
    assert {r["cause_key"] for r in failed} == {
        "error:[float16 ai.onnx::LayerNormalization] TractError: Output mismatch after "
        "rewiring expansion for output #: expected …,T got …,T"}
    # tract runs the fp32 model's float32 LayerNormalization
    assert {r["result"] for r in rows if r["backend"] == "tract"
            and r["check"] == "model:fp32"} == {"passed"}
    ln = _tract_finding(found)
    assert ln["title"].startswith(
        "Tract cannot run float16 LayerNormalization on the fp16 file of model: TractError: "
        "Output mismatch after rewiring expansion"), ln["title"]

    _, found = _run(tmp_path / "gemm", _gemm(tmp_path / "gemm_model"))
    gemm = _tract_finding(found)
    assert gemm["title"].startswith(
        "Tract cannot run float16 Gemm on the fp16 file of model: TractError: Output "
        "mismatch after rewiring expansion"), gemm["title"]
    # the same root cause on another operator is another cause (both were 76ca88bc8afc)
    assert gemm["finding_id"] != ln["finding_id"]


def test_the_node_an_error_names_leads_its_cause_key() -> None:
    assert failing_node(TRACT_LN) == "/embeddings/LayerNorm/LayerNormalization"
    assert failing_node("TractError: Undetermined symbol in expression: sequence_length") == ""
    node = ("float16", "ai.onnx", "LayerNormalization")
    kind, key = failure_facts("TractError: Output mismatch after rewiring expansion for "
                              "output #0: expected 2,16,384,F16 got 2,16,384,F32", TRACT_LN,
                              None, node)
    assert (kind, key) == ("cannot-run", "error:[float16 ai.onnx::LayerNormalization] "
                           "TractError: Output mismatch after rewiring expansion for output "
                           "#: expected …,T got …,T")
    assert node_of_key(key) == node
    assert node_of_key(error_key("TractError: Output mismatch")) is None
    # a node on another operator, or at another dtype, is another key
    assert error_key("TractError: x", ("float16", "ai.onnx", "Gemm")) != error_key(
        "TractError: x", ("float32", "ai.onnx", "Gemm"))


def test_the_node_is_read_in_the_graph_the_path_ran(tmp_path: Path) -> None:
    model, _ = _layer_norm(tmp_path / "m")
    proto = onnx.load(str(model))
    assert node_op(proto.SerializeToString(), "ln") == (
        "float32", "ai.onnx", "LayerNormalization")
    # the fp16 file's node reads float16 from a Cast whose output no value_info declares
    proto.graph.node.insert(0, helper.make_node("Cast", ["X"], ["x16"], to=TensorProto.FLOAT16))
    proto.graph.node[1].input[0] = "x16"
    assert node_op(proto.SerializeToString(), "ln") == (
        "float16", "ai.onnx", "LayerNormalization")
    assert node_op(proto.SerializeToString(), "absent") is None
