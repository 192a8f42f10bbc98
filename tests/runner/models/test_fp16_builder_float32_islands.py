"""The fp16 builder keeps an int8 graph's dequantisation arithmetic in float32 (frspell: the
Cast of an int32 MatMulInteger accumulator of 309502 to float16 was inf, and gero reported
the builder's overflow as the file's), and refuses a model with no float32 tensor (a
float64 TreeEnsemble's "fp16 file" was the model again, and its rows passed as fp16)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.errors import GeroError
from gero_runner.models import variants
from gero_runner.models.fp16_reference import rounded_shadow


def _accumulating_int8_matmul(k: int = 8) -> onnx.ModelProto:
    """ORT's dynamic int8 MatMul (DynamicQuantizeLinear, MatMulInteger, Cast, scale Mul,
    bias Add); with x = 1 everywhere and W = 127 the int32 sums are 255 · 127 · k."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "W", "xz", "wz"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["scale"]),
        helper.make_node("Mul", ["accf", "scale"], ["m"]),
        helper.make_node("Add", ["m", "bias"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.full((k, 4), 127, np.int8), "W"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
             numpy_helper.from_array(np.linspace(-1, 1, 4).astype(np.float32), "bias")]
    graph = helper.make_graph(
        nodes, "dq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


def test_an_int32_accumulator_past_65504_is_dequantised_in_float32() -> None:
    """255 · 127 · 8 = 259080 > 65504: cast to float16 it was inf on every engine that
    honours float16 (the ReferenceEvaluator, the per-node float16 yardstick); now the Cast
    and the scale Mul stay float32 and only their product (20.3) becomes float16."""
    model = _accumulating_int8_matmul()
    x = np.ones((2, 8), np.float32)
    built = variants.build(variants.FP16, model.SerializeToString(), {"x": x}, seed=0)
    proto = onnx.load_from_string(built)
    cast = next(n for n in proto.graph.node if n.op_type == "Cast" and n.input[0] == "acc")
    assert helper.get_attribute_value(cast.attribute[0]) == TensorProto.FLOAT
    readers = [n for n in proto.graph.node if cast.output[0] in n.input]
    assert [n.op_type for n in readers] == ["Mul"]  # no float16 round trip in between
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert want.max() > 20
    (declared,) = corrected_evaluator(proto).run(None, {"x": x})
    assert np.isfinite(declared).all()
    np.testing.assert_allclose(declared, want, rtol=2e-3)
    (yardstick,) = rounded_shadow(built, {"x": x})
    np.testing.assert_allclose(yardstick, want, rtol=2e-3)
    notes = variants.build_notes(built)
    assert len(notes) == 1 and "float32" in notes[0] and "65504" in notes[0]


def test_a_float_model_without_int32_casts_is_converted_as_before() -> None:
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "sf"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert variants.dequantisation_nodes(model) == []
    built = variants.build(variants.FP16, model.SerializeToString(), {}, seed=0)
    assert variants.build_notes(built) == []
    # The int64 shape is cast to float16, as the converter does (it fits).
    cast = next(n for n in onnx.load_from_string(built).graph.node if n.input == ["s"])
    assert helper.get_attribute_value(cast.attribute[0]) == TensorProto.FLOAT16


def _float64_tree() -> onnx.ModelProto:
    """A one-split TreeEnsemble (ai.onnx.ml 5) in float64 alone, like atspm's."""
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", aggregate_function=1,
        n_targets=1, post_transform=0, tree_roots=[0], nodes_featureids=[0],
        nodes_modes=numpy_helper.from_array(np.array([0], np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.5])),
        nodes_truenodeids=[0], nodes_trueleafs=[1], nodes_falsenodeids=[1],
        nodes_falseleafs=[1], leaf_targetids=[0, 0],
        leaf_weights=numpy_helper.from_array(np.array([1.0, 2.0])))
    graph = helper.make_graph(
        [node], "tree", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, ["n", 1])],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, ["n", 1])])
    return helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])


def test_a_model_with_no_float32_tensor_gets_no_fp16_file() -> None:
    model = _float64_tree()
    onnx.checker.check_model(model)
    assert not variants.has_float32_tensor(model)
    with pytest.raises(GeroError, match="nothing to convert: no float32 tensor"):
        variants.build(variants.FP16, model.SerializeToString(), {}, seed=0)
    # An int8 graph's float32 input, scales and bias are something to convert.
    assert variants.has_float32_tensor(_accumulating_int8_matmul())


@pytest.mark.slow
def test_gero_run_builds_no_fp16_file_of_a_float64_model(tmp_path: Path) -> None:
    """Real process: the fp16 file of a float64 TreeEnsemble is not built, with the
    builder's reason (was: the model again, and three fp16 rows passed on it)."""
    from gero_cli import main

    path = tmp_path / "tree.onnx"
    onnx.save(_float64_tree(), str(path))
    data = tmp_path / "d"
    main(["run", "--model", str(path), "--input-range", "X=0,1", "--data-dir", str(data),
          "--jobs", "1", "--repeats", "1", "--backends", "onnxruntime", "--variants", "fp16",
          "--run-id", "t"])
    fp16 = [r for r in rows_of(data, "t") if r["check"].startswith("model:fp16")]
    assert [r["check"] for r in fp16] == ["model:fp16:build"]
    # A verdict about gero's tooling: a note on a passed row, as the int8 builders' refusal
    # of an ai.onnx.ml-only model is.
    assert fp16[0]["reason"].startswith("building the fp16 variant failed")
    assert "nothing to convert: no float32 tensor" in fp16[0]["reason"]


@pytest.mark.slow
def test_gero_run_finds_no_overflow_in_the_fp16_file_of_an_int8_matmul(
        tmp_path: Path) -> None:
    """Real process: the fp16 file of a dynamic-int8 MatMul whose int32 sums pass 65504
    has no NaN/inf row (was 'the fp16 file overflows float16 computed as it declares'),
    and its build note says what the builder kept in float32."""
    from gero_cli import main

    path = tmp_path / "dq.onnx"
    onnx.save(_accumulating_int8_matmul(), str(path))
    np.savez(tmp_path / "in.npz", x=np.ones((2, 8), np.float32))
    data = tmp_path / "d"
    main(["run", "--model", str(path), "--inputs", str(tmp_path / "in.npz"), "--data-dir",
          str(data), "--jobs", "1", "--repeats", "1", "--backends", "onnxruntime",
          "--variants", "fp16", "--run-id", "q"])
    fp16 = [r for r in rows_of(data, "q") if r["check"].startswith("model:fp16")]
    notes = [r["note"] for r in fp16 if r["check"] == "model:fp16:build-note"]
    assert len(notes) == 1 and "float32" in notes[0]
    judged = [r for r in fp16 if not r["check"].endswith(("build-note", "build"))]
    assert judged
    assert not [r for r in judged if "inf" in (r["reason"] or "").lower().split()
                or "overflow" in (r["reason"] or "")]
