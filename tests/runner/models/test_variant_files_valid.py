"""Variant files that measure the model, not gero's builder (issue 40, H6's defects 1 and
11): the int8-static builder keeps float a tensor whose calibrated range is not finite
(an additive -inf attention mask: its Q/DQ pair at scale +inf made every value NaN), and
the fp16 file of an ai.onnx.ml-only model imports the domain of the Casts it adds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of

from gero_cli import main
from gero_runner.models import variants

NEG_INF = np.float32(-np.inf)
MASK = np.array([[0, 0, NEG_INF, NEG_INF], [0, 0, 0, NEG_INF]], np.float32)


def _masked() -> onnx.ModelProto:
    """y = Softmax(x·W + mask) · V: an additive attention mask of 0 and -inf."""
    rng = np.random.default_rng(0)
    w, v = (numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), n)
            for n in ("w", "v"))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Add", ["h", "mask"], ["scores"]),
         helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["y"])], "masked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w, v])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def _feeds() -> dict[str, np.ndarray]:
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    return {"x": x, "mask": MASK}


def _ort(model: bytes, feeds: dict[str, np.ndarray]) -> np.ndarray:
    out = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    return np.asarray(out[0], np.float64)


def test_int8_static_keeps_a_non_finite_mask_in_float() -> None:
    model = _masked().SerializeToString()
    feeds = _feeds()
    built = variants.build(variants.INT8_STATIC, model, feeds, 0,
                           variants.Calibration(samples=(feeds,), source="test"))
    quantized = onnx.load_from_string(built)
    assert not [n for n in quantized.graph.node
                if n.op_type == "QuantizeLinear" and n.input[0] == "mask"]
    assert [n for n in quantized.graph.node if n.op_type == "QuantizeLinear"]  # int8 still
    onnx.checker.check_model(quantized)
    notes = variants.build_notes(built)
    assert [n for n in notes if "'mask'" in n] == [
        "the int8-static builder kept tensor 'mask' in float, not quantised: its "
        "calibrated range is not finite (scale inf), and a quantizer over it turns every "
        "finite value into NaN"]
    got, want = _ort(built, feeds), _ort(model, feeds)
    assert np.isfinite(got).all()  # was NaN everywhere (the mask's pair at scale inf)
    cosine = float(got.ravel() @ want.ravel() / np.linalg.norm(got) / np.linalg.norm(want))
    assert cosine > 0.99


def test_a_finite_mask_is_quantised_as_before() -> None:
    model = _masked().SerializeToString()
    feeds = {**_feeds(), "mask": np.where(MASK < 0, np.float32(-1e4), np.float32(0))}
    built = variants.build(variants.INT8_STATIC, model, feeds, 0,
                           variants.Calibration(samples=(feeds,), source="test"))
    assert [n for n in onnx.load_from_string(built).graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] == "mask"]
    assert variants.build_notes(built) == []


def _ml_only() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Scaler", ["x"], ["y"], domain="ai.onnx.ml", offset=[1.0, 2.0],
                          scale=[0.5, 4.0])], "ml",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 3  # as onnxruntime's logreg_iris.onnx
    return model


def test_the_fp16_file_of_an_ml_only_model_imports_the_casts_domain() -> None:
    from onnx.reference import ReferenceEvaluator

    built = variants.build(variants.FP16, _ml_only().SerializeToString(), {}, 0)
    fp16 = onnx.load_from_string(built)
    assert [n for n in fp16.graph.node if n.op_type == "Cast" and n.domain == ""]
    onnx.checker.check_model(fp16)  # was: No opset import for domain ''
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    want = (x - [1.0, 2.0]) * [0.5, 4.0]
    (got,) = ReferenceEvaluator(fp16).run(None, {"x": x})
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3)
    np.testing.assert_allclose(_ort(built, {"x": x}), want, rtol=1e-3)


@pytest.mark.slow
def test_a_run_keeps_the_mask_float_and_says_so(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Real process: the int8-static file's rows are not NaN (khmersm's 'off the fp32
    model on every path', row cosine -0.942, was its builder's), and the run says which
    tensor stayed float."""
    path = tmp_path / "m.onnx"
    onnx.save(_masked(), str(path))
    npz = tmp_path / "in.npz"
    feeds = _feeds()
    np.savez(npz, x=feeds["x"], mask=feeds["mask"])
    data = tmp_path / "d"
    main(["run", "--model", str(path), "--inputs", str(npz), "--variants", "int8-static",
          "--backends", "onnxruntime", "--data-dir", str(data), "--jobs", "1",
          "--repeats", "1", "--run-id", "m"])
    err = capsys.readouterr().err
    assert "the int8-static builder kept tensor 'mask' in float" in err
    rows = [r for r in rows_of(data, "m") if r["check"].startswith("model:int8-static")]
    notes = [r for r in rows if r["check"] == "model:int8-static:build-note"]
    assert any("kept tensor 'mask' in float" in r["note"] for r in notes)
    judged = [r for r in rows if r not in notes]
    assert judged and not [r for r in judged if "nonfinite" in str(r.get("failure_kind"))
                           or "NaN" in str(r.get("reason"))], judged


def test_the_fp16_file_of_a_resize_given_sizes_and_empty_scales_loads() -> None:
    """paddle2onnx's Resize (SLANet): empty roi and scales Constants beside ``sizes``; the
    converter's Cast of the empty scales made ONNX Runtime refuse the file ('Either
    `sizes` or `scales` must be provided, but not both')."""
    empty = onnx.helper.make_tensor("e", TensorProto.FLOAT, [0], [])
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["roi"], value=empty),
         helper.make_node("Constant", [], ["scales"], value=empty),
         helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
        "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])],
        [numpy_helper.from_array(np.array([1, 2, 6, 6], np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    built = variants.build(variants.FP16, model.SerializeToString(), {"x": x}, 0)
    onnx.checker.check_model(onnx.load_from_string(built))
    got = _ort(built, {"x": x})  # was: the session refused the file
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))
