"""A variant file gero built is kept in the data root and reused by a later run on the same
model, inputs, seed and calibration (issue 41: an int8-static calibration was rebuilt on
every rerun, 0.8 s of magika's fully reused 3.6 s); what makes it differ is in its key, and a
failed build is never kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gero_runner.checks import reuse
from gero_runner.errors import GeroError
from gero_runner.models import variants as var
from gero_runner.storage.path_outputs import PathOutputs


def _matmul() -> bytes:
    w = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "mm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    build = var.build

    def counting(name: str, *args: object, **kwargs: object) -> bytes:
        calls.append(name)
        return build(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(var, "build", counting)
    return calls


def test_a_built_variant_is_reused_and_equal(tmp_path: Path, counted: list[str]) -> None:
    model, inputs = _matmul(), {"X": np.ones((2, 8), np.float32)}
    store = PathOutputs(tmp_path)
    calibration = var.Calibration(({"X": inputs["X"]},), "x.npz")
    first = reuse.variant_kept(store, var.INT8_STATIC, model, inputs, 0, calibration)
    again = reuse.variant_kept(store, var.INT8_STATIC, model, inputs, 0, calibration)
    assert first == again and counted == [var.INT8_STATIC]
    onnx.checker.check_model(onnx.load_from_string(again))
    # another seed, another calibration, another variant: built again
    reuse.variant_kept(store, var.INT8_STATIC, model, inputs, 1, calibration)
    other = var.Calibration(({"X": 2 * inputs["X"]},), "x.npz")
    reuse.variant_kept(store, var.INT8_STATIC, model, inputs, 0, other)
    reuse.variant_kept(store, var.FP16, model, inputs, 0, calibration)
    assert counted == [var.INT8_STATIC] * 3 + [var.FP16]


def test_no_reuse_builds_every_time_and_a_failure_is_not_kept(tmp_path: Path,
                                                              counted: list[str]) -> None:
    model, inputs = _matmul(), {"X": np.ones((2, 8), np.float32)}
    reuse.variant_kept(None, var.FP16, model, inputs, 0, var.Calibration())
    reuse.variant_kept(None, var.FP16, model, inputs, 0, var.Calibration())
    assert counted == [var.FP16, var.FP16]
    store = PathOutputs(tmp_path)
    for _ in range(2):
        with pytest.raises(GeroError):
            reuse.variant_kept(store, "no-such-variant", model, inputs, 0, var.Calibration())
    assert counted[2:] == ["no-such-variant"] * 2
