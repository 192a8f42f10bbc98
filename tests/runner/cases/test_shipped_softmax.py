"""The opset <= 12 Softmax correction on a shipped model's tail (issue 40, item 11):
squeezenet ends Conv 1x1 -> Relu -> GlobalAveragePool -> Softmax (opset 9, no axis: the
input coerced to 2-D at axis 1, so the 1000 classes of each example are normalised). The
corrected ReferenceEvaluator, ONNX Runtime and an independent NumPy computation agree; the
stock evaluator (axis -1 over a size-1 axis: 1 everywhere) does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from shared_helpers import rows_of

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.cases import shipped_models
from gero_runner.run import RunRequest, execute

CLASSES = 1000


def _tail() -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((CLASSES, 8, 1, 1)) * 0.5).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["g"]),
         helper.make_node("Softmax", ["g"], ["y"])], "tail",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CLASSES, 1, 1])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    x = rng.standard_normal((1, 8, 3, 3)).astype(np.float32)
    return model, x, w


def _numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The tail in float64 by hand: a 1x1 convolution is a product over channels."""
    c = np.einsum("oi,nihw->nohw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
    g = np.maximum(c, 0).mean(axis=(2, 3))  # (1, 1000)
    e = np.exp(g - g.max(axis=1, keepdims=True))
    y: np.ndarray = (e / e.sum(axis=1, keepdims=True)).reshape(1, CLASSES, 1, 1)
    return y


def test_corrected_evaluator_and_ort_agree_with_numpy_on_the_tail() -> None:
    model, x, w = _tail()
    expected = _numpy(x, w)
    (fixed,) = corrected_evaluator(model).run(None, {"x": x})
    (stock,) = ReferenceEvaluator(model).run(None, {"x": x})
    (rt,) = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(fixed, expected, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(rt, expected, rtol=1e-5, atol=1e-9)
    assert np.allclose(stock, 1.0)  # the defect the correction is for


@pytest.mark.slow
def test_squeezenet_corrected_reference_matches_the_shipped_outputs(tmp_path: Path) -> None:
    """Real run of the models suite: the corrected evaluator is bit-exact with the shipped
    outputs (which sum to 1 over the 1000 classes: opset 9's Softmax), and ONNX Runtime's
    levels agree with it; only the stock evaluator's rows diverge, naming the defect."""
    light = shipped_models.data_dir() / "light"
    shipped = numpy_helper.to_array(onnx.load_tensor(str(light / "light_squeezenet_output_0.pb")))
    np.testing.assert_allclose(shipped.astype(np.float64).sum(axis=1), 1.0, rtol=1e-6)
    record = execute(RunRequest(suite="models", ops=["squeezenet"], backends=("onnxruntime",),
                                data_root=tmp_path, repeats=1, jobs=1))
    rows = rows_of(tmp_path, record.run_id)
    corrected = [r for r in rows if r["backend"] == "onnx-reference-corrected"]
    assert corrected and all(r["result"] == "passed" and r["scaled_error"] == 0
                             for r in corrected)
    ort_rows = [r for r in rows if r["backend"] == "onnxruntime"]
    assert ort_rows and {r["result"] for r in ort_rows} == {"passed"}
    stock = [r for r in rows if r["backend"] == "onnx-reference" and r["result"] != "passed"]
    assert stock and all("softmax-opset12-axis" in r["cause_key"] for r in stock)
