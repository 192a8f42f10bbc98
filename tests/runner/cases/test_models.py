"""Models end to end: a shipped light model, user models (batch contract, int8/fp16 gates,
parity metrics by --output-kind), and clear errors for models gero cannot take."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import classifier, rows_of, save

from gero_runner.errors import GeroError
from gero_runner.metrics import parity
from gero_runner.run import ModelOptions, RunRequest, execute
from gero_runner.storage.artifacts import load_array


def test_shipped_models_reject_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(GeroError, match="squeezenet"):
        execute(RunRequest(suite="models", ops=["lenet"], data_root=tmp_path))


@pytest.mark.slow
def test_batch_mixing_user_model_is_a_contract_issue(tmp_path: Path) -> None:
    good = classifier(tmp_path / "good.onnx")
    bad = classifier(tmp_path / "mixing.onnx", mixes_batch=True)
    record = execute(RunRequest(models=[good, bad], data_root=tmp_path / "data", repeats=1,
                                jobs=1, model_options=ModelOptions(dims=("batch=4",))))
    rows = rows_of(tmp_path / "data", record.run_id)
    partition = {(r["op_type"], r["result"]) for r in rows if r["check"] == "contract:partition"}
    assert partition == {("good", "passed"), ("mixing", "contract_issue")}
    assert {r["input_shapes"] for r in rows if r["op_type"] == "good"} == {"[4,4]"}
    shadow = [r for r in rows if r["check"] == "expected"]
    assert shadow and {r["reference"] for r in shadow} == {"float64-shadow"}
    assert all(r["result"] == "passed" for r in shadow)


@pytest.mark.slow
def test_int8_and_fp16_variants_pass_their_gates(tmp_path: Path) -> None:
    path = classifier(tmp_path / "small.onnx")
    record = execute(RunRequest(
        models=[path], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        paths="all",  # every ORT level on every file: the counts below are per path
        model_options=ModelOptions(dims=("batch=8",), task="classifier",
                                   variants=("int8-dynamic", "int8-static", "fp16"))))
    rows = rows_of(tmp_path / "data", record.run_id)
    gates = [r for r in rows if r["check"].startswith("model:int8") or
             r["check"].startswith("model:fp16")]
    kinds = {r["check"] for r in gates}
    vs_model = {"model:int8-dynamic:vs-model", "model:int8-static:vs-model",
                "model:fp16:vs-model"}
    fp16 = {"model:fp16:scaled", "model:fp16:vs-fp32"}
    assert kinds == {"model:int8-dynamic:cosine", "model:int8-dynamic:decision",
                     "model:int8-static:cosine", "model:int8-static:decision",
                     "model:fp16:precision", *fp16, *vs_model}
    # int8: every non-baseline path (3 ORT levels and the ReferenceEvaluator), both outputs
    assert all(sum(r["check"] == k for r in gates) == 8
               for k in kinds - vs_model - fp16 - {"model:fp16:precision"})
    # fp16: every path on the file (4 ORT levels and the ReferenceEvaluator) against the
    # float64 shadow of the file (rounded to float16 at each node, or exact for ORT, which
    # computes the file in float32) and against the fp32 model
    assert all(sum(r["check"] == k for r in gates) == 10 for k in fp16)
    # the variant itself (ORT all on it) against the fp32 model, on both outputs
    assert all(sum(r["check"] == k for r in gates) == 2 for k in vs_model)
    # ORT computing the file in float32 is a note on a passed row (no count, no exit
    # status), on the level whose graph it quotes (issue 40, item 9)
    (precision,) = [r for r in gates if r["check"] == "model:fp16:precision"]
    assert precision["result"] == "passed" and precision["backend"] == "onnxruntime"
    assert precision["optimization"] == "disable_all"
    assert "computes the fp16 file in float32" in precision["note"]
    failed = [(r["check"], r["backend"], r["optimization"], r["reason"]) for r in gates
              if r["result"] != "passed" and r is not precision]
    assert not failed
    yardsticks = {(r["backend"], r["reference"]) for r in gates
                  if r["check"] == "model:fp16:scaled"}
    assert yardsticks == {("onnxruntime", "fp16-exact-shadow"),
                          ("onnx-reference", "fp16-rounded-shadow")}
    cosine = json.loads(next(r["details"] for r in gates
                             if r["check"] == "model:int8-static:cosine"))
    assert cosine["need_row_cosine"] <= 0.99 and cosine["floor"]["samples"] == 17


@pytest.mark.slow
def test_output_kinds_apply_the_parity_metrics(tmp_path: Path) -> None:
    """R (3×3 rotations), t (3-vectors), keypoints (N, 4) and a confidence map."""
    nodes = [helper.make_node("Identity", ["r_in"], ["R"]),
             helper.make_node("Mul", ["t_in", "half"], ["t"]),
             helper.make_node("Identity", ["kp_in"], ["kp"]),
             helper.make_node("Sigmoid", ["c_in"], ["conf"])]
    half = numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half")
    f = TensorProto.FLOAT
    path = save(tmp_path / "pose.onnx", nodes,
                 [helper.make_tensor_value_info("r_in", f, ["batch", 3, 3]),
                  helper.make_tensor_value_info("t_in", f, ["batch", 3]),
                  helper.make_tensor_value_info("kp_in", f, [5, 4]),
                  helper.make_tensor_value_info("c_in", f, ["batch", 8])],
                 [helper.make_tensor_value_info("R", f, ["batch", 3, 3]),
                  helper.make_tensor_value_info("t", f, ["batch", 3]),
                  helper.make_tensor_value_info("kp", f, [5, 4]),
                  helper.make_tensor_value_info("conf", f, ["batch", 8])], [half])
    kinds = {"R": "rotation", "t": "translation", "kp": "keypoints", "conf": "confidence"}
    record = execute(RunRequest(models=[path], data_root=tmp_path / "data", repeats=1, jobs=1,
                                checks=(), model_options=ModelOptions(
                                    output_kinds=tuple(f"{k}={v}" for k, v in kinds.items()))))
    rows = [r for r in rows_of(tmp_path / "data", record.run_id)
            if r["check"].startswith("parity:")]
    assert {(r["output_name"], r["check"]) for r in rows} == {
        (k, f"parity:{v}") for k, v in kinds.items()}
    outputs = ["R", "t", "kp", "conf"]
    for row in rows:
        art = tmp_path / "data" / row["artifact_path"]
        actual = load_array(art, row["actual_file"])
        j = outputs.index(row["output_name"])
        truth = load_array(art, f"outputs/float64-shadow-exact/output_{j}.npy")
        want = parity.evaluate_output(kinds[row["output_name"]], truth, actual,
                                      parity.ParityTolerances())
        got = json.loads(row["details"])
        for key, value in want.figures.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, nan_ok=True), key
        assert row["result"] == ("passed" if want.passed else "divergence")
    keys = {r["check"]: json.loads(r["details"]) for r in rows}
    assert "rotation_error_deg_max" in keys["parity:rotation"]
    assert "translation_error_max" in keys["parity:translation"]
    assert keys["parity:keypoints"]["match_ratio"] == 1.0
    assert "conf_mae" in keys["parity:confidence"]


@pytest.mark.parametrize(("content", "match"), [
    (b"not a model", "not a loadable ONNX model"),
])
def test_unloadable_model_is_a_clear_error(tmp_path: Path, content: bytes, match: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    with pytest.raises(GeroError, match=match):
        execute(RunRequest(models=[str(bad)], data_root=tmp_path / "data"))


def test_unknown_dim_names_the_known_ones(tmp_path: Path) -> None:
    path = classifier(tmp_path / "m.onnx")
    with pytest.raises(GeroError, match="can be set: batch"):
        execute(RunRequest(models=[path], data_root=tmp_path / "data",
                           model_options=ModelOptions(dims=("seq=4",))))
