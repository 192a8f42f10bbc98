"""The float64 shadow widens every valid model (issue 40, item 5): a ConstantOfShape
without ``value``, a Constant's ``value_float``, an operator the evaluator runs through its
function body, a schema-fixed float32 output; and where it cannot (a BitCast of float bits)
it names the operator in one sentence, as gero's own tooling, never a path's failure."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero_cli import main
from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.backends.reference_evaluator import run_releasing
from gero_runner.models import shadow

_NARROW = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _zeros_plus_x(path: Path) -> str:
    """y = x + ConstantOfShape(Shape(x)) with no ``value`` (float32 zeros by default)."""
    return save(path, [helper.make_node("Shape", ["x"], ["s"]),
                       helper.make_node("ConstantOfShape", ["s"], ["z"]),
                       helper.make_node("Add", ["x", "z"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])


def _bitcast(path: Path) -> str:
    """y = BitCast(x, to=INT32) + 0: the bits of a float32."""
    return save(path, [helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT32)],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])],
                opsets={"": 26})


def test_constant_of_shape_without_value_is_widened(tmp_path: Path) -> None:
    model = onnx.load(_zeros_plus_x(tmp_path / "z.onnx"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    (y,) = shadow.run_shadow(model, {"x": x})  # was: Input type mismatch float32 != float64
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64))


def test_constant_value_float_and_function_bodies_are_widened() -> None:
    """A Constant's value_float made float32; MeanVarianceNormalization has no NumPy kernel
    and ran onnx's float32 function body (its epsilon): both now compute in float64."""
    nodes = [helper.make_node("Constant", [], ["c"], value_float=0.1),
             helper.make_node("Add", ["x", "c"], ["a"]),
             helper.make_node("MeanVarianceNormalization", ["a"], ["y"])]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])]),
        opset_imports=[helper.make_opsetid("", 13)])
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    (y,) = shadow.run_shadow(model, {"x": x})
    a = x.astype(np.float64) + 0.1
    mean = a.mean(axis=(0, 2, 3), keepdims=True)
    std = np.sqrt(((a - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True))
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, (a - mean) / (std + 1e-9), rtol=1e-12)


def test_a_fixed_float32_output_is_cast_to_float64() -> None:
    """ai.onnx.ml's Scaler always makes float: the widened graph casts it back to float64
    before the float64 MatMul that follows (was: a type mismatch)."""
    nodes = [helper.make_node("Scaler", ["x"], ["s"], domain="ai.onnx.ml",
                              offset=[0.5, 0.5], scale=[2.0, 3.0]),
             helper.make_node("MatMul", ["s", "w"], ["y"])]
    w = numpy_helper.from_array(np.array([[1.0], [0.1]], np.float32), "w")
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])], [w]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    x = np.array([[1, 2], [3, 4]], np.float32)
    (y,) = shadow.run_shadow(model, {"x": x})
    assert y.dtype == np.float64
    expected = ((x.astype(np.float64) - 0.5) * [2.0, 3.0]) @ np.array([[1.0], [0.1]])
    np.testing.assert_allclose(y, expected, rtol=1e-6)  # Scaler's own float32 rounding


def test_a_bitcast_of_float_bits_is_named(tmp_path: Path) -> None:
    model = onnx.load(_bitcast(tmp_path / "b.onnx"))
    assert shadow.obstacles(model) == ["BitCast"]
    with pytest.raises(shadow.ShadowUnavailable,
                       match=r"^no float64 arbiter: BitCast cannot be widened"):
        shadow.widen(model)


def _as_array(value: Any) -> Any:
    if isinstance(value, onnx.TensorProto):  # float8/int4 data come as protos
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_as_array(v) for v in value]
    return value


@functools.cache
def _node_cases() -> list[Any]:
    from gero_runner.cases.onnx_backend import collect

    return [tc for tc in collect() if tc.kind == "node"]


def _widening_problem(tc: Any) -> str | None:
    """None when the case's widening runs (float outputs in float64) or names its
    operator; a sentence otherwise. A case the evaluator cannot run as it is (no Pillow,
    an operator it lacks) is outside the shadow's reach: None."""
    ins, _ = tc.data_sets[0]
    feeds = {vi.name: _as_array(x) for vi, x in zip(tc.model.graph.input, ins, strict=False)}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            run_releasing(corrected_evaluator(tc.model), feeds)
        except Exception:  # not a widening problem
            return None
        if (ops := shadow.obstacles(tc.model)):
            sentence = shadow.obstacle_sentence(ops)
            return None if sentence.startswith(f"no float64 arbiter: {ops[0]}") else sentence
        try:
            wide = shadow.widen(tc.model)
            onnx.checker.check_model(wide)
            got = run_releasing(corrected_evaluator(wide), shadow.widen_inputs(feeds))
        except Exception as e:  # the finding the test reports
            return f"{type(e).__name__}: {str(e)[:160]}"
    for o in tc.model.graph.output:
        if o.type.HasField("tensor_type") and o.type.tensor_type.elem_type in _NARROW:
            dtype = np.asarray(got[o.name]).dtype
            if dtype != np.float64:
                return f"output {o.name!r} stays {dtype}"
    return None


@pytest.mark.slow
def test_every_onnx_node_case_widens() -> None:
    """The whole onnx node suite (about 1,880 cases): each widening runs or names its
    operator (4 BitCast cases of float bits)."""
    cases = _node_cases()
    assert len(cases) > 1000
    problems = {tc.name: p for tc in cases if (p := _widening_problem(tc)) is not None}
    assert problems == {}
    named = [tc.name for tc in cases if shadow.obstacles(tc.model)]
    assert named and all("bitcast" in n for n in named)


@pytest.mark.slow
def test_a_run_keeps_its_arbiter_and_names_what_cannot_be_widened(tmp_path: Path) -> None:
    """Real processes: the ConstantOfShape model has a shadow (no model:float64-shadow row,
    every row passes); the BitCast model's shadow row names the operator, and no runtime
    path is blamed for it."""
    data = tmp_path / "d"
    common = ["--data-dir", str(data), "--jobs", "1", "--repeats", "1",
              "--backends", "onnxruntime"]
    assert main(["run", "--model", _zeros_plus_x(tmp_path / "z.onnx"), "--run-id", "z",
                 *common]) == 0
    rows = rows_of(data, "z")
    assert rows and not [r for r in rows if r["check"] == "model:float64-shadow"]
    assert {r["result"] for r in rows} == {"passed"}
    main(["run", "--model", _bitcast(tmp_path / "b.onnx"), "--run-id", "b", *common])
    shadow_rows = [r for r in rows_of(data, "b") if r["check"] == "model:float64-shadow"]
    assert len(shadow_rows) == 1
    row = shadow_rows[0]
    assert row["reason"].startswith("no float64 arbiter: BitCast cannot be widened")
    # gero's own tooling: a note on a passed row, no failure (issue 40)
    assert (row["result"], row["note"]) == ("passed", row["reason"])
    assert (row["failure_kind"], row["cause_key"]) == ("", "")
    assert row["backend"] == "float64-shadow"
