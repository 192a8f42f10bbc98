"""User models: variants judged against the fp32 model, dtype-aware gates, Constant-node
weights, non-tensor outputs, and a record that says what ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from model_helpers import opts
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero_cli import main as cli_main
from gero_runner.cases.user_models import cases_for_request
from gero_runner.errors import GeroError
from gero_runner.run import RunRequest, execute
from gero_runner.storage.store import DataRoot

F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def dense(tmp: Path, name: str, *, broken_fp16: bool = False) -> str:
    """x[batch, 8] -> x·W -> ·scale -> logits[batch, 4]. Broken for float16 on purpose:
    columns 0 and 1 of W are 1e-6 of the others and their scale is 1e6, which float16
    clamps to 65504, so those logits shrink 15-fold in the fp16 variant."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    scale = np.ones(4, dtype=np.float32)
    if broken_fp16:
        w[:, :2] *= 1e-6
        scale[:2] = 1e6
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Mul", ["h", "scale"], ["logits"])]
    inits = [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(w, "W")]
    return save(tmp / f"{name}.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 8])],
                [helper.make_tensor_value_info("logits", F, ["batch", 4])], inits)


def run(tmp: Path, path: str, **options: object) -> list[dict[str, Any]]:
    record = execute(RunRequest(models=[path], data_root=tmp / "d", repeats=1, jobs=1,
                                checks=(), model_options=opts(**options)))
    return rows_of(tmp / "d", record.run_id)


def test_a_broken_fp16_variant_fails_against_the_fp32_model(tmp_path: Path) -> None:
    rows = run(tmp_path, dense(tmp_path, "broken", broken_fp16=True), dims=["batch=16"],
               task="classifier", variants=["fp16"])
    vs = [r for r in rows if r["check"] == "model:fp16:vs-model"]
    assert len(vs) == 1 and vs[0]["result"] == "divergence", vs
    assert vs[0]["backend"] == "onnxruntime" and vs[0]["reference"] == "fp32:onnxruntime:all"
    assert "row cosine" in str(vs[0]["reason"]) and "argmax agrees" in str(vs[0]["reason"])
    # It fails without a floor, so the floor that could lower its gate is measured.
    assert json.loads(str(vs[0]["details"]))["floor"]["samples"] == 17
    # Engines agree with each other on the broken file: only the new gate sees the damage.
    same_file = [r for r in rows if r["check"] == "model:fp16:scaled"
                 and r["backend"] == "onnxruntime"]
    assert same_file and all(r["result"] == "passed" for r in same_file)


def test_a_clean_variant_passes_against_the_fp32_model(tmp_path: Path) -> None:
    rows = run(tmp_path, dense(tmp_path, "clean"), dims=["batch=16"], task="classifier",
               variants=["fp16", "int8-dynamic"])
    vs = [r for r in rows if r["check"].endswith(":vs-model")]
    assert {r["check"] for r in vs} == {"model:fp16:vs-model", "model:int8-dynamic:vs-model"}
    assert all(r["result"] == "passed" for r in vs), [r["reason"] for r in vs]
    by_check = {r["check"]: r for r in vs}
    figures = json.loads(str(by_check["model:int8-dynamic:vs-model"]["details"]))
    # The run baseline's int8 floor also gates the other paths there: always measured.
    assert figures["floor"]["samples"] == 17 and "variant_vs_fp32" in figures
    # A variant that passes at 0.99 and 95 % needs no floor (one could only lower the gate).
    fp16 = by_check["model:fp16:vs-model"]
    figures = json.loads(str(fp16["details"]))
    assert figures["floor"]["samples"] == 0 and not figures["floor"]["measured"]
    assert "noise floor was not measured" in str(fp16["reason"])


def test_int8_dynamic_takes_weights_from_constant_nodes(tmp_path: Path) -> None:
    """A Conv with bias whose weights are Constant nodes, as Paddle exports them: ONNX
    Runtime's quantizer stops at it ("Expected w to be an initializer") unless they are
    promoted to initializers first."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),
             helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b, "b")),
             helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
    path = save(tmp_path / "paddle.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 3, 8, 8])],
                [helper.make_tensor_value_info("y", F, ["batch", 4, 8, 8])])
    rows = run(tmp_path, path, variants=["int8-dynamic"])
    failed = [r["reason"] for r in rows if r["check"] == "model:int8-dynamic"]
    assert not failed
    (vs,) = [r for r in rows if r["check"] == "model:int8-dynamic:vs-model"]
    assert vs["result"] == "passed", vs["reason"]


def test_a_clean_fp16_model_passes_its_fp32_gate(tmp_path: Path) -> None:
    """fp16 MatMul then Relu·1.5: rounding to float16 is its only error (≈ 2^-11 scaled)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float16), "W")
    k = numpy_helper.from_array(np.array(1.5, dtype=np.float16), "k")
    path = save(tmp_path / "half.onnx",
                [helper.make_node("MatMul", ["x", "W"], ["h"]),
                 helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("Mul", ["r", "k"], ["y"])],
                [helper.make_tensor_value_info("x", F16, ["batch", 16])],
                [helper.make_tensor_value_info("y", F16, ["batch", 16])], [w, k])
    rows = run(tmp_path, path)
    gates = [r for r in rows if r["check"] == "model:fp32"]
    assert gates and all(r["result"] == "passed" for r in gates), [r["reason"] for r in gates]
    assert all("≤ 0.004" in str(r["reason"]) for r in gates)
    assert all(json.loads(str(r["details"]))["scaled_error"] > 1e-4 for r in gates)


def zipmap_classifier(tmp: Path) -> str:
    """LinearClassifier -> label (int64 tensor) and a ZipMap of the probabilities."""
    ml = "ai.onnx.ml"
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain=ml,
                              classlabels_ints=[0, 1, 2],
                              coefficients=[0.5, -1.0, 1.0, 0.2, -0.3, 0.8],
                              intercepts=[0.1, 0.0, -0.1], post_transform="SOFTMAX"),
             helper.make_node("ZipMap", ["scores"], ["probabilities"], domain=ml,
                              classlabels_int64s=[0, 1, 2])]
    seq = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(F, [])))
    return save(tmp / "zipmap.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 2])],
                [helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
                 helper.make_value_info("probabilities", seq)], opsets={"": 17, ml: 1})


def test_a_zipmap_output_is_one_named_row_and_the_label_is_compared(tmp_path: Path) -> None:
    rows = run(tmp_path, zipmap_classifier(tmp_path), dims=["batch=4"])
    outputs = [r for r in rows if r["check"] == "model:outputs"]
    assert len(outputs) == 1 and outputs[0]["result"] == "passed"  # gero's limit: a note
    assert outputs[0]["note"] == outputs[0]["reason"]
    assert outputs[0]["output_name"] == "probabilities"
    assert "seq(map(int64,tensor(float32)))" in str(outputs[0]["reason"])
    label = [r for r in rows if r["output_name"] == "label" and r["check"] == "agreement"]
    # one row on each setting the plan ran (--paths needed: ORT disable_all and all)
    ran = {r["optimization"] for r in rows if r["check"] == "agreement"}
    assert sorted(r["optimization"] for r in label) == sorted(ran) and len(ran) >= 2
    assert all(r["result"] == "passed" for r in label)
    assert not any("pickle" in str(r["reason"]) for r in rows)


def test_a_decision_task_on_a_regressor_is_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("ReduceSum", ["x", "ax"], ["y"], keepdims=1)]
    ax = numpy_helper.from_array(np.array([1], dtype=np.int64), "ax")
    path = save(tmp_path / "reg.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 3])],
                [helper.make_tensor_value_info("y", F, ["batch", 1])], [ax])
    with pytest.raises(GeroError, match=r"no float output has one .*y \[2, 1\]"):
        cases_for_request(RunRequest(models=[path], model_options=opts(task="classifier")))


def test_a_reference_failure_is_a_row_under_the_reference(tmp_path: Path) -> None:
    """com.microsoft Gelu: ONNX Runtime runs it, the ReferenceEvaluator has no kernel."""
    path = save(tmp_path / "gelu.onnx",
                [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                [helper.make_tensor_value_info("x", F, ["batch", 3])],
                [helper.make_tensor_value_info("y", F, ["batch", 3])],
                opsets={"": 17, "com.microsoft": 1})
    rows = run(tmp_path, path)
    failing = [(r["check"], r["backend"]) for r in rows if r["result"] == "execution"]
    assert ("agreement", "onnx-reference") in failing
    noted = [(r["check"], r["backend"]) for r in rows if r["note"]]
    assert ("model:float64-shadow", "float64-shadow") in noted  # gero's yardstick: a note
    assert not any(backend == "onnxruntime" for _, backend in failing), failing
    assert sum(r["check"] == "agreement" for r in rows) == 1


def test_the_run_record_names_the_model_suite_and_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = dense(tmp_path, "named")
    record = execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1,
                                checks=()))
    stored = DataRoot(tmp_path / "d").read_run(record.run_id)
    assert stored["suite"] == "model" and stored["models"] == [str(Path(path).resolve())]
    assert cli_main(["summary", "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "suite model" in out and f"model: {Path(path).resolve()}" in out


def test_the_summary_keeps_long_case_and_check_names_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = dense(tmp_path / "", "a_model_name_longer_than_twenty_eight_characters",
                 broken_fp16=True)
    execute(RunRequest(models=[path], data_root=tmp_path / "d", repeats=1, jobs=1, checks=(),
                       model_options=opts(dims=["batch=16"], variants=["fp16"])))
    assert cli_main(["summary", "--data-dir", str(tmp_path / "d")]) == 1  # fp16: a finding
    line = next(t for t in capsys.readouterr().out.splitlines()
                if "model:fp16:vs-model" in t and "a_model_name" in t)
    assert "characters model:fp16:vs-model" in " ".join(line.split())


def test_a_regressor_variant_is_gated_on_scaled_error(tmp_path: Path) -> None:
    """Rows of one element: a cosine compares only signs, so the scaled error decides."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Mul", ["h", "k"], ["y"])]
    w = numpy_helper.from_array(np.full((4, 1), 1e5, dtype=np.float32), "W")
    k = numpy_helper.from_array(np.array([1e-5], dtype=np.float32), "k")
    path = save(tmp_path / "reg.onnx", nodes,
                [helper.make_tensor_value_info("x", F, ["batch", 4])],
                [helper.make_tensor_value_info("y", F, ["batch", 1])], [w, k])
    rows = run(tmp_path, path, dims=["batch=8"], variants=["fp16"])
    # ONNX Runtime's row (the file's own float16 overflow, computed as declared, is a row of
    # the float64 shadow's beside it)
    (vs,) = [r for r in rows if r["check"] == "model:fp16:vs-model"
             and r["backend"] == "onnxruntime"]
    # fp16 clamps the weight 1e5 to 65504: every value shrinks by a third, keeping its sign
    assert vs["result"] == "divergence" and "rows of one element" in str(vs["reason"])


def test_a_variant_that_quantises_nothing_says_so(tmp_path: Path) -> None:
    """A file the quantizer left as it was is the fp32 model again: a build row, not an
    int8 verdict that passes because nothing changed."""
    path = save(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", F, ["batch", 4])],
                [helper.make_tensor_value_info("y", F, ["batch", 4])])
    rows = run(tmp_path, path, variants=["int8-dynamic"])
    (build,) = [r for r in rows if r["check"] == "model:int8-dynamic:build"]
    assert build["result"] == "passed" and build["note"] == build["reason"]  # gero's builder
    assert "quantised no operator" in str(build["reason"])
    assert not [r for r in rows if r["check"] == "model:int8-dynamic:vs-model"]


def test_quantising_a_model_of_ml_operators_only_is_one_sentence(tmp_path: Path) -> None:
    rows = run(tmp_path, zipmap_classifier(tmp_path), variants=["int8-dynamic"])
    (failed,) = [r for r in rows if r["check"] == "model:int8-dynamic:build"]
    assert failed["result"] == "passed" and "no ai.onnx operators" in str(failed["note"])


def test_the_fp16_variant_of_a_model_with_an_if_runs_on_the_reference(tmp_path: Path) -> None:
    """The converter's input Casts are read inside the If bodies: they must come first."""
    def branch(name: str, factor: float) -> onnx.GraphProto:
        k = numpy_helper.from_array(np.array(factor, dtype=np.float32), f"k_{name}")
        return helper.make_graph([helper.make_node("Mul", ["x", f"k_{name}"], [f"y_{name}"])],
                                 name, [], [helper.make_tensor_value_info(f"y_{name}", F, None)],
                                 [k])
    zero = numpy_helper.from_array(np.array(0, dtype=np.int64), "zero")
    path = save(tmp_path / "if.onnx",
                [helper.make_node("Greater", ["sr", "zero"], ["pos"]),
                 helper.make_node("If", ["pos"], ["y"], then_branch=branch("a", 2.0),
                                  else_branch=branch("b", 3.0))],
                [helper.make_tensor_value_info("x", F, ["batch", 4]),
                 helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                [helper.make_tensor_value_info("y", F, ["batch", 4])], [zero])
    rows = run(tmp_path, path, variants=["fp16"], input_values=["sr=1"])
    assert not [r["reason"] for r in rows if r["result"] == "execution"]
    assert any(r["check"] == "model:fp16:scaled" and r["backend"] == "onnx-reference"
               for r in rows)


def test_task_classifier_takes_a_zipmap_classifiers_integer_label(tmp_path: Path) -> None:
    """scikit-learn's classifier decides through its int64 label (the probabilities are a
    ZipMap): --task classifier is accepted, and the label is compared exactly."""
    rows = run(tmp_path, zipmap_classifier(tmp_path), dims=["batch=4"], task="classifier")
    label = [r for r in rows if r["output_name"] == "label" and r["check"] == "agreement"]
    ran = {r["optimization"] for r in rows if r["check"] == "agreement"}
    assert sorted(r["optimization"] for r in label) == sorted(ran) and len(ran) >= 2
    assert all(r["result"] == "passed" for r in label)


def test_a_failed_fp16_yardstick_names_the_shadow_not_a_runtime(tmp_path: Path) -> None:
    """The fp16 file's float64 shadow cannot run com.microsoft Gelu: its row is the
    shadow's, and no ONNX Runtime row says it cannot run (it ran the file)."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 3))
                                .astype(np.float32), "W")
    path = save(tmp_path / "gelu.onnx",
                [helper.make_node("MatMul", ["x", "W"], ["h"]),
                 helper.make_node("Gelu", ["h"], ["y"], domain="com.microsoft")],
                [helper.make_tensor_value_info("x", F, ["batch", 3])],
                [helper.make_tensor_value_info("y", F, ["batch", 3])], [w],
                opsets={"": 17, "com.microsoft": 1})
    rows = run(tmp_path, path, variants=["fp16"])
    yard = [r for r in rows if r["check"] == "model:fp16:scaled" and r["note"]]
    assert yard and all(r["backend"] == "float64-shadow" for r in yard), [
        (r["backend"], r["reason"]) for r in yard]
    assert all(r["result"] == "passed" for r in yard)  # gero's yardstick: a note
    assert "could not run on the fp16 file" in str(yard[0]["note"])
    assert not [r["reason"] for r in rows if r["backend"] == "onnxruntime"
                and r["result"] == "execution" and r["check"] != "model:fp16:precision"]
