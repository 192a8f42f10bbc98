"""The int8-static builder warns when it quantises a tensor over a non-finite or
near-FLT_MAX range (issue 40, item 5): an additive attention mask of 0 and -3.4e38 gets
scale 1.33e36, and the file says so, naming the tensor; a run prints it and records it as
a note on the variant's rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of

from gero_cli import main
from gero_runner.models import variants

MASK = np.array([[0, 0, -3.4e38, -3.4e38], [0, 0, 0, -3.4e38]], np.float32)


def _masked(path: Path) -> str:
    """y = Softmax(x·W + mask): an additive attention mask."""
    w = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Add", ["h", "mask"], ["scores"]),
         helper.make_node("Softmax", ["scores"], ["y"], axis=-1)], "masked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return str(path)


def _build(path: str, mask: np.ndarray) -> bytes:
    feeds = {"x": np.ones((2, 4), np.float32), "mask": mask}
    return variants.build(variants.INT8_STATIC, Path(path).read_bytes(), feeds, 0,
                          variants.Calibration(samples=(feeds,), source="test"))


def test_the_file_names_a_tensor_quantised_over_a_flt_max_range(tmp_path: Path) -> None:
    notes = variants.build_notes(_build(_masked(tmp_path / "m.onnx"), MASK))
    mask = [n for n in notes if "'mask'" in n]
    assert len(mask) == 1
    assert mask[0].startswith("the int8-static builder put tensor 'mask' through a "
                              "quantizer over a near-FLT_MAX range")
    assert "[-3.4e+38, 0] (scale 1.33e+36)" in mask[0]


def test_a_finite_mask_says_nothing(tmp_path: Path) -> None:
    finite = np.where(MASK < 0, np.float32(-1e4), np.float32(0))
    assert variants.build_notes(_build(_masked(tmp_path / "m.onnx"), finite)) == []


def test_a_non_finite_scale_is_named() -> None:
    """Read from the file: a QuantizeLinear whose scale is inf."""
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(np.inf, np.float32), "s"),
         numpy_helper.from_array(np.array(0, np.int8), "z")])
    (note,) = variants.huge_ranges("int8-static", helper.make_model(graph))
    assert "tensor 'x'" in note and "a non-finite range" in note


@pytest.mark.slow
def test_a_run_prints_and_records_the_warning(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _masked(tmp_path / "m.onnx")
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.ones((2, 4), np.float32), mask=MASK)
    data = tmp_path / "d"
    main(["run", "--model", path, "--inputs", str(npz), "--variants", "int8-static",
          "--backends", "onnxruntime", "--data-dir", str(data), "--jobs", "1",
          "--repeats", "1", "--run-id", "m"])
    err = capsys.readouterr().err
    assert "gero: warning: m: the int8-static builder put tensor 'mask' through a " \
           "quantizer over a near-FLT_MAX range" in err
    notes = [r for r in rows_of(data, "m") if r["check"] == "model:int8-static:build-note"]
    assert any("'mask'" in r["note"] for r in notes)
    assert {r["result"] for r in notes} == {"passed"}
