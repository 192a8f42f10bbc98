"""ORT's levels against each other (the `levels` check), and the reference's known defects
kept off the ORT rows (issue 13, items 9 and 10)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from gero_runner.backends import reference_defects as rd
from gero_runner.case import CaseInstance
from gero_runner.checks.task import evaluate_case
from gero_runner.execution.context import RunSettings
from gero_runner.schema import DIVERGENCE, PASSED, Observation


def _decomposed_layernorm() -> bytes:
    """The nine-node LayerNorm ORT fuses into one LayerNormalization at extended/all."""
    nodes = [helper.make_node("ReduceMean", ["X"], ["m"], axes=[-1]),
             helper.make_node("Sub", ["X", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["d2"]),
             helper.make_node("ReduceMean", ["d2"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]),
             helper.make_node("Mul", ["n", "scale"], ["ns"]),
             helper.make_node("Add", ["ns", "bias"], ["Y"])]
    inits = {"two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32),
             "scale": np.ones(64, np.float32), "bias": np.zeros(64, np.float32)}
    graph = helper.make_graph(
        nodes, "ln", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 64])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


def _case(model: bytes, inputs: dict[str, np.ndarray], op: str) -> CaseInstance:
    return CaseInstance(suite="test", case_id=f"test/{op}/float32", op_type=op,
                        case_name=op, dtype="float32", seed=0, model=model, inputs=inputs)


def _rows(case: CaseInstance, tmp_path: Path) -> list[Observation]:
    return evaluate_case(case, RunSettings(data_root=str(tmp_path), repeats=1,
                                           checks=())).rows


def test_a_rewrite_induced_difference_is_a_levels_observation(tmp_path: Path) -> None:
    x = (np.random.default_rng(0).standard_normal((4, 64)) + 3e4).astype(np.float32)
    rows = [r for r in _rows(_case(_decomposed_layernorm(), {"X": x}, "LayerNorm"), tmp_path)
            if r["check"] == "levels"]
    by_level = {r["optimization"]: r for r in rows}
    assert set(by_level) == {"basic", "extended", "all"}
    assert {r["reference"] for r in rows} == {"onnxruntime:disable_all"}
    for level in ("extended", "all"):  # the fused LayerNormalization differs by ~2e-3
        assert by_level[level]["result"] == DIVERGENCE, by_level[level]["reason"]
        assert by_level[level]["max_abs_error"] > 1e-3


def test_identical_levels_pass(tmp_path: Path) -> None:
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "r",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    rows = [r for r in _rows(_case(model.SerializeToString(), {"X": x}, "Relu"), tmp_path)
            if r["check"] == "levels"]
    assert len(rows) == 3 and {r["result"] for r in rows} == {PASSED}


def test_no_ort_row_is_blamed_for_a_reference_defect(tmp_path: Path) -> None:
    """Opset-11 Softmax over axis 1 of [N, 4, 5]: the stock evaluator normalises the wrong
    thing. ORT is compared with the corrected evaluator; the stock evaluator's own row is
    labelled with the registry entry."""
    model, inputs, _ = rd.BY_KEY["softmax-opset12-axis"].repro()
    rows = _rows(_case(model.SerializeToString(), inputs, "Softmax"), tmp_path)
    ort_rows = [r for r in rows if r["backend"] == "onnxruntime"]
    assert ort_rows and {r["result"] for r in ort_rows} == {PASSED}
    assert {r["reference"] for r in ort_rows if r["check"] == "agreement"} == {
        "onnx-reference-corrected"}
    (own,) = [r for r in rows if r["backend"] == "onnx-reference"]
    assert own["result"] == DIVERGENCE
    assert own["reason"].startswith("known upstream defect softmax-opset12-axis "
                                    "(onnx/reference/ops/op_softmax.py)")
    assert json.loads(own["details"])["known_defect"][0]["key"] == "softmax-opset12-axis"


def test_a_defect_that_does_not_show_on_the_inputs_labels_nothing(tmp_path: Path) -> None:
    x = np.array([0.1, 0.5], dtype=np.float32)  # float32 Erf: stock and corrected agree
    graph = helper.make_graph([helper.make_node("Erf", ["X"], ["Y"])], "e",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    rows = _rows(_case(model.SerializeToString(), {"X": x}, "Erf"), tmp_path)
    assert {r["reference"] for r in rows if r["check"] == "agreement"} == {"onnx-reference"}
    assert not any("known upstream defect" in r["reason"] for r in rows)



def _bn_softmax(axis: int) -> onnx.ModelProto:
    """An opset-11 BatchNormalization (running mean 0, var 1) of [2, 3, 5], then a Softmax
    over ``axis``: two registry entries apply."""
    params = {"scale": np.ones(3, np.float32), "B": np.zeros(3, np.float32),
              "mean": np.zeros(3, np.float32), "var": np.ones(3, np.float32)}
    nodes = [helper.make_node("BatchNormalization", ["X", "scale", "B", "mean", "var"],
                              ["n"], epsilon=1e-5),
             helper.make_node("Softmax", ["n"], ["Y"], axis=axis)]
    graph = helper.make_graph(
        nodes, "bn_softmax", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 5])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 5])],
        initializer=[numpy_helper.from_array(v, k) for k, v in params.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=7)


def test_only_the_defects_that_show_are_named(tmp_path: Path) -> None:
    """PP-OCRv4's recogniser: an opset-11 BatchNormalization (its defect shows) and a Softmax
    over its last axis (right at any opset). The stock evaluator's rows name the
    BatchNormalization entry alone; they named both."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 3, 5)) * 2 + 3).astype(np.float32)
    model = _bn_softmax(axis=2)
    assert {d.key for d in rd.applicable(model)} == {"softmax-opset12-axis",
                                                     "batchnorm9-momentum"}
    rows = _rows(_case(model.SerializeToString(), {"X": x}, "BatchNormalization"), tmp_path)
    own = [r for r in rows if r["backend"] == "onnx-reference" and r["result"] != PASSED]
    assert own, [r["reason"] for r in rows]
    for r in own:
        assert [d["key"] for d in json.loads(r["details"])["known_defect"]] == [
            "batchnorm9-momentum"], r["reason"]
        assert "softmax-opset12-axis" not in r["reason"]


def test_each_defect_that_shows_is_named() -> None:
    """Both entries show where both nodes are wrong on their inputs (Softmax at opset 11
    over axis 1 of a rank-3 tensor)."""
    x = (np.arange(30, dtype=np.float32).reshape(2, 3, 5) / 10 + 3)
    model = _bn_softmax(axis=1)
    assert set(rd.shown(model, {"X": x})) == {"softmax-opset12-axis", "batchnorm9-momentum"}
    x_zero = np.zeros((2, 3, 5), np.float32)  # batch statistics 0 and 0: BN is right
    assert rd.shown(model, {"X": x_zero}) == ("softmax-opset12-axis",)


def _batchnorm9(path: Path) -> np.ndarray:
    """An opset-9 BatchNormalization (running mean 0, var 1) saved at ``path``, and an input
    whose batch variance is 1 + 4e-5: the stock evaluator's blend of the batch's statistics
    moves its output by ~1e-6 relative, inside float32's default tolerance, outside
    rtol=1e-7."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 2, 4))
    x = (x - x.mean(axis=(0, 2), keepdims=True)) / x.std(axis=(0, 2), keepdims=True)
    params = {"scale": np.ones(2, np.float32), "B": np.zeros(2, np.float32),
              "mean": np.zeros(2, np.float32), "var": np.ones(2, np.float32)}
    node = helper.make_node("BatchNormalization", ["X", "scale", "B", "mean", "var"], ["Y"],
                            epsilon=1e-5)
    graph = helper.make_graph(
        [node], "bn9", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [8, 2, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [8, 2, 4])],
        initializer=[numpy_helper.from_array(v, k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=7)
    path.write_bytes(model.SerializeToString())
    scaled: np.ndarray = (x * 1.00002).astype(np.float32)
    return scaled


def test_the_corrected_evaluator_is_chosen_at_the_run_s_tolerances(tmp_path: Path) -> None:
    """Whether the runtimes are compared with the corrected evaluator is decided at the
    run's tolerances: with --rtol float32=1e-7 the BatchNormalization-9 defect stays on the
    stock evaluator's row (it was decided at the defaults, so ORT's rows were compared with
    the defective output and diverged)."""
    import gero

    model = tmp_path / "bn9.onnx"
    np.savez(tmp_path / "x.npz", X=_batchnorm9(model))
    with gero.run(models=[model], inputs_file=tmp_path / "x.npz", rtol={"float32": 1e-7},
                  backends=["onnxruntime"], contracts=False, data_dir=tmp_path / "data",
                  jobs=1, repeats=1) as run:
        rows = run.observations('"check" = \'agreement\'').to_pylist()
    ort_rows = [r for r in rows if r["backend"] == "onnxruntime"]
    assert ort_rows and {r["rtol"] for r in ort_rows} == {1e-7}
    assert {(r["reference"], r["result"]) for r in ort_rows} == {
        ("onnx-reference-corrected", PASSED)}
    (own,) = [r for r in rows if r["backend"] == "onnx-reference"]
    assert own["result"] == DIVERGENCE
    assert own["reason"].startswith("known upstream defect batchnorm9-momentum")
