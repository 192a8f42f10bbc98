"""An already quantised model with com.microsoft operators gets a float64 arbiter (issue
40, item 3): DynamicQuantizeLSTM becomes an LSTM with its int8 weights dequantized,
MatMulInteger (A - a0)·(B - b0) in float64, DynamicQuantizeLinear the identity; the int8
file's own exact shadow (``run_shadow``) keeps its integer parts as they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from quantised_models import FEATURES, float_lstm, quantised_lstm, quiet_quantizer
from shared_helpers import rows_of

from gero_cli import main
from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.backends.reference_evaluator import run_releasing
from gero_runner.models import shadow


def test_the_shadow_computes_the_dequantized_model_in_float64(tmp_path: Path) -> None:
    model = onnx.load(str(quantised_lstm(tmp_path)))
    assert shadow.needs_dequantizing(model) == ["DynamicQuantizeLSTM"]
    assert {n.op_type for n in model.graph.node} >= {"DynamicQuantizeLSTM", "MatMulInteger",
                                                      "DynamicQuantizeLinear"}
    x = np.random.default_rng(1).standard_normal((3, 2, FEATURES)).astype(np.float32)
    got = shadow.run_shadow_traced(model, {"x": x}).outputs["y"]
    # Independently: the float model with its weights dequantized by hand, in float64.
    q = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}

    def dq(name: str) -> np.ndarray:
        return (q[f"{name}_quantized"] - q[f"{name}_zero_point"]) * q[f"{name}_scale"]

    by_hand = float_lstm()
    for t in by_hand.graph.initializer:
        if t.name in ("W", "R"):  # DynamicQuantizeLSTM holds them [dir, rows, 4H]
            t.CopyFrom(numpy_helper.from_array(dq(t.name).transpose(0, 2, 1), t.name))
        elif t.name == "M":
            t.CopyFrom(numpy_helper.from_array(dq("M"), "M"))
    (expected,) = shadow.run_shadow(by_hand, {"x": x})
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_a_model_of_ai_onnx_integer_ops_keeps_its_exact_shadow() -> None:
    """Only a model with a com.microsoft quantised operator is dequantized: MatMulInteger
    alone is run as it is (the int8 file's exact computation)."""
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [1, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [1, 1])],
        [numpy_helper.from_array(np.array([[3], [4]], np.uint8), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert shadow.needs_dequantizing(model) == []
    (y,) = shadow.run_shadow(model, {"a": np.array([[1, 2]], np.uint8)})
    assert y.dtype == np.int32 and y.tolist() == [[11]]


@pytest.mark.slow
def test_a_run_has_a_float64_arbiter_for_the_int8_lstm(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """Real process: no 'no float64 arbiter' row (was: the ReferenceEvaluator has no
    com.microsoft DynamicQuantizeLSTM), ORT is judged against the float64 shadow, and the
    run says what that arbiter computes."""
    data = tmp_path / "d"
    main(["run", "--model", str(quantised_lstm(tmp_path)), "--backends", "onnxruntime",
          "--data-dir", str(data), "--jobs", "1", "--repeats", "1", "--run-id", "q"])
    assert "the float64 arbiter computes com.microsoft DynamicQuantizeLSTM with the int8 " \
           "weights dequantized" in capsys.readouterr().err
    rows = rows_of(data, "q")
    assert not [r for r in rows if r["check"] == "model:float64-shadow"]
    fp32 = [r for r in rows if r["check"] == "model:fp32" and r["backend"] == "onnxruntime"]
    assert fp32 and {r["reference"] for r in fp32} == {"float64-shadow"}


def _qoperator_model(tmp: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Conv, Add, Mul, Sigmoid, LeakyRelu, GlobalAveragePool quantised by ONNX Runtime in
    QOperator format: com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid,
    QLinearLeakyRelu, QLinearGlobalAveragePool around an ai.onnx QLinearConv."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
         helper.make_node("Add", ["c", "b"], ["a"]), helper.make_node("Mul", ["a", "c"], ["m"]),
         helper.make_node("Sigmoid", ["m"], ["s"]),
         helper.make_node("LeakyRelu", ["a"], ["r"], alpha=0.1),
         helper.make_node("Add", ["s", "r"], ["t"]),
         helper.make_node("GlobalAveragePool", ["t"], ["y"])], "q",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 4, 4]),
         helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [1, 4, 4, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 1, 1])],
        [numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.save(model, str(tmp / "q.onnx"))
    feeds = [{"x": rng.standard_normal((1, 3, 4, 4)).astype(np.float32),
              "b": rng.standard_normal((1, 4, 4, 4)).astype(np.float32)} for _ in range(4)]

    class Reader:
        def __init__(self) -> None:
            self.left = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.left, None)

    with quiet_quantizer():
        quantize_static(str(tmp / "q.onnx"), str(tmp / "q_int8.onnx"), Reader(),
                        quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
    return onnx.load(str(tmp / "q_int8.onnx")), feeds[0]


@pytest.mark.slow
def test_qlinear_contrib_operators_are_computed_exactly(tmp_path: Path) -> None:
    """Each QLinear operator as dequantize → float operator → quantize in float64: the
    shadow equals ONNX Runtime's own int8 result (was: no implementation of QLinearAdd)."""
    import onnxruntime as ort

    model, feeds = _qoperator_model(tmp_path)
    ops = {n.op_type for n in model.graph.node if n.domain == shadow.MS_DOMAIN}
    assert ops == {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
                   "QLinearGlobalAveragePool"}
    (got,) = shadow.run_shadow(model, feeds)
    (rt,) = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, feeds)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, rt, rtol=1e-6, atol=1e-7)  # ORT's float32 output


def _old_dynamic_conv(w: np.ndarray, b: np.ndarray) -> onnx.ModelProto:
    """A dynamic Conv as older ONNX Runtime quantizers wrote it (ddddocr's int8 model):
    the bias quantised at run time, Floor(b / (x_scale·w_scale)) as int32, added to
    ConvInteger's int32 sum, the sum cast and scaled."""
    scale = float(np.abs(w).max() / 127)
    wq = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    n = helper.make_node
    nodes = [n("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             n("Mul", ["xs", "ws"], ["s"]), n("Div", ["b", "s"], ["bd"]),
             n("Floor", ["bd"], ["bf"]), n("Cast", ["bf"], ["bi"], to=onnx.TensorProto.INT32),
             n("Reshape", ["bi", "shape"], ["br"]),
             n("ConvInteger", ["xq", "wq", "xz", "wz"], ["c"], kernel_shape=[3, 3]),
             n("Add", ["c", "br"], ["cb"]), n("Cast", ["cb"], ["cf"], to=onnx.TensorProto.FLOAT),
             n("Mul", ["cf", "s"], ["y"])]
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(scale, np.float32), "ws"),
             numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array([1, -1, 1, 1], np.int64), "shape")]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 3, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def test_conv_integer_and_its_run_time_bias_are_dequantized() -> None:
    """Dequantized, the shadow equals the float Conv with the weights dequantized by hand
    and the bias as it is (the evaluator's own ConvInteger would truncate the identity's
    float activations to integers; the bias's Cast to int32 would not add to float64)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    quantised = _old_dynamic_conv(w, b)
    wq = numpy_helper.to_array(next(t for t in quantised.graph.initializer if t.name == "wq"))
    ws = numpy_helper.to_array(next(t for t in quantised.graph.initializer if t.name == "ws"))
    by_hand = helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3])], "conv",
        [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, [1, 4, 3, 3])],
        [numpy_helper.from_array(wq.astype(np.float64) * float(ws), "w"),
         numpy_helper.from_array(b.astype(np.float64), "b")]),
        opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    (expected,) = ReferenceEvaluator(by_hand).run(None, {"x": x.astype(np.float64)})
    assert isinstance(expected, np.ndarray)
    wide = shadow.widen(quantised, dequantize=True)
    got = run_releasing(corrected_evaluator(wide), shadow.widen_inputs({"x": x}))["y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
