"""Model verdicts a user can act on (issue 28): the int8-static variant calibrated on the
user's data, the fp16 yardstick, titles and blame that name the failing path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero.query.findings import compute_findings
from gero.query.source import open_source
from gero_runner.errors import GeroError
from gero_runner.run import ModelOptions, RunRequest, execute
from gero_runner.tolerances import DEFAULTS, Tolerances


def wide_mlp(path: Path) -> str:
    """x[batch, 64] -> MatMul -> Relu -> MatMul -> y[batch, 10]: static int8 ranges taken
    from N(0,1) noise clip inputs of scale 40 (row cosine 0.43), ranges from the real
    inputs do not (0.9998)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "W")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 10)).astype(np.float32), "W2")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Relu", ["h"], ["h2"]),
             helper.make_node("MatMul", ["h2", "W2"], ["y"])]
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["batch", 64])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
                [w, w2])


def _wide_inputs() -> np.ndarray:
    return (np.random.default_rng(0).standard_normal((4, 64)) * 40).astype(np.float32)


def _static_rows(tmp_path: Path, **options: Any) -> list[dict[str, Any]]:
    model = wide_mlp(tmp_path / "wide.onnx")
    record = execute(RunRequest(
        models=[model], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        backends=("onnxruntime",),
        model_options=ModelOptions(task="classifier", variants=("int8-static",), **options)))
    return [r for r in rows_of(tmp_path / "data", record.run_id)
            if r["check"] == "model:int8-static:vs-model"]


@pytest.mark.slow
def test_int8_static_is_calibrated_on_the_users_inputs(tmp_path: Path) -> None:
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=_wide_inputs())
    rows = _static_rows(tmp_path, inputs_file=str(inputs))
    assert rows and all(r["result"] == "passed" for r in rows), [r["reason"] for r in rows]
    assert all(r["reason"].startswith("calibrated on the --inputs arrays of x.npz")
               for r in rows)
    assert json.loads(rows[0]["details"])["calibration"] == "the --inputs arrays of x.npz"


@pytest.mark.slow
def test_calibration_file_with_a_sample_axis(tmp_path: Path) -> None:
    x = _wide_inputs()
    feeds, calibration = tmp_path / "x.npz", tmp_path / "calib.npz"
    np.savez(feeds, x=x)
    np.savez(calibration, x=np.stack([x, x * 0.5, x * 0.25]))  # 3 samples of [4, 64]
    rows = _static_rows(tmp_path, inputs_file=str(feeds), calibration_file=str(calibration))
    assert rows and all(r["result"] == "passed" for r in rows)
    assert all("calibrated on --calibration calib.npz (3 samples)" in r["reason"] for r in rows)


def test_uncalibrated_int8_static_says_so(tmp_path: Path) -> None:
    rows = _static_rows(tmp_path)  # seeded N(0,1) inputs, seeded N(0,1) calibration
    assert rows and all(r["reason"].startswith("uncalibrated: ") for r in rows)
    assert json.loads(rows[0]["details"])["calibration"] == "seeded N(0,1) noise"


@pytest.mark.parametrize(("arrays", "match"), [
    ({"nope": np.zeros((4, 64), np.float32)}, "name no model input"),
    ({"x": np.zeros((64,), np.float32)}, "has rank 2"),
])
def test_bad_calibration_file_is_one_sentence(tmp_path: Path, arrays: dict[str, np.ndarray],
                                              match: str) -> None:
    model = wide_mlp(tmp_path / "wide.onnx")
    calibration = tmp_path / "calib.npz"
    np.savez(calibration, **arrays)  # type: ignore[arg-type]
    with pytest.raises(GeroError, match=match):
        execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1, jobs=1,
                           model_options=ModelOptions(variants=("int8-static",),
                                                      calibration_file=str(calibration))))


def test_a_contrib_op_the_evaluator_lacks_is_said_as_such(tmp_path: Path) -> None:
    """ORT's com.microsoft Gelu: the float64 shadow cannot run it whatever the inputs."""
    model = save(tmp_path / "gelu.onnx",
                 [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                 opsets={"": 17, "com.microsoft": 1})
    warnings: list[str] = []
    record = execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1,
                                jobs=1, checks=(), backends=("onnxruntime",)),
                     warn=warnings.append)
    assert not any("default inputs may not suit" in w for w in warnings), warnings
    shadow = [r for r in rows_of(tmp_path / "data", record.run_id)
              if r["check"] == "model:float64-shadow"]
    assert shadow and "has no implementation of com.microsoft Gelu" in shadow[0]["reason"]


def anchor_head(path: Path) -> str:
    """A detector head: x[1, 50, 8] (features per anchor) -> y[1, 3, 50] = (x · W)ᵀ, classes
    along axis 1 and 50 anchors along the last axis, as YOLO exports lay them out (the
    weight is MatMul's second input, where ONNX Runtime's quantizer quantises it)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "W")
    return save(path, [helper.make_node("MatMul", ["x", "W"], ["h"]),
                       helper.make_node("Transpose", ["h"], ["y"], perm=[0, 2, 1])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 50, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 50])], [w])


def test_decision_axis_scores_a_detector_along_its_class_axis(tmp_path: Path) -> None:
    model = anchor_head(tmp_path / "head.onnx")
    record = execute(RunRequest(
        models=[model], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        backends=("onnxruntime",),
        model_options=ModelOptions(task="detector", variants=("int8-dynamic",),
                                   decision_axes=("y=1",))))
    rows = {r["check"]: r for r in rows_of(tmp_path / "data", record.run_id)}
    figures = json.loads(rows["model:int8-dynamic:vs-model"]["details"])
    # one row and one decision per anchor (50), not 3 rows of 50 anchors each
    assert figures["rows"] == 50 and figures["decisions"] == 50
    assert "argmax agrees" in rows["model:noise-floor"]["reason"]


def test_decision_axis_out_of_range_is_one_sentence(tmp_path: Path) -> None:
    model = anchor_head(tmp_path / "head.onnx")
    with pytest.raises(GeroError, match="has rank 3"):
        execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1, jobs=1,
                           model_options=ModelOptions(decision_axes=("y=3",))))
    with pytest.raises(GeroError, match="unknown output"):
        execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1, jobs=1,
                           model_options=ModelOptions(decision_axes=("z=1",))))


def test_an_already_quantised_model_gets_no_int8_variants(tmp_path: Path) -> None:
    """A QDQ model: quantising it again measures nothing a user ships; the fp16 variant
    is still tried, and one warning says why the int8 ones are not."""
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, np.int8), "z")
    model = save(tmp_path / "qdq.onnx",
                 [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                  helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
                  helper.make_node("Relu", ["d"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [scale, zero])
    warnings: list[str] = []
    record = execute(RunRequest(
        models=[model], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        backends=("onnxruntime",),
        model_options=ModelOptions(variants=("int8-dynamic", "int8-static", "fp16"))),
        warn=warnings.append)
    assert any("no int8-dynamic or int8-static variant built: the model is already "
               "quantised (its graph holds 1 DequantizeLinear, 1 QuantizeLinear)" in w
               for w in warnings), warnings
    checks = {r["check"] for r in rows_of(tmp_path / "data", record.run_id)}
    assert not any(c.startswith("model:int8") for c in checks)
    assert any(c.startswith("model:fp16") for c in checks)


def test_model_outputs_are_compared_on_the_models_scale(tmp_path: Path) -> None:
    """A MatMul of 512 terms: outputs up to 286, ORT's float32 sums 3.4e-7 and the
    ReferenceEvaluator's 5e-7 scaled from float64. Element-wise 1e-5/1e-6 fails small
    elements (differences of large terms); on the output's scale
    (docs/explanation/tolerances.md) they pass."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((512, 64)).astype(np.float32), "W")
    model = save(tmp_path / "wide_sum.onnx", [helper.make_node("MatMul", ["x", "W"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])], [w])
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=(rng.standard_normal((4, 512)) * 4).astype(np.float32))
    record = execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1, jobs=1,
                                checks=(), backends=("onnxruntime",),
                                model_options=ModelOptions(inputs_file=str(inputs))))
    expected = [r for r in rows_of(tmp_path / "data", record.run_id) if r["check"] == "expected"]
    # One row per path that ran: the needed-paths plan runs ORT's unoptimised base and its
    # deployed level (basic and extended only where those two disagree) and the evaluator.
    ran = {(r["backend"], r["optimization"]) for r in expected}
    assert {("onnxruntime", "disable_all"), ("onnxruntime", "all")} <= ran
    assert any(b == "onnx-reference" for b, _ in ran), ran
    assert all(r["result"] == "passed" for r in expected), [r["reason"] for r in expected]


def test_the_floored_bound_is_named_in_the_reason() -> None:
    from gero_runner.classify import classify
    from gero_runner.metrics.compare import compare

    r = np.array([100.0, 0.5, -0.01])
    a = r + np.array([0.0, 0.0, 0.5])  # 0.5 off: beyond 1e-5·max(|r|, 1)
    cmp = compare(a, r, 1e-5, 1e-6, rel_floor=1e-2)
    assert cmp.finite_mismatch == 1
    assert "rtol=1e-05·max(|r|, 0.01·max|r|)" in classify(cmp, 1e-5, 1e-6)[1]
    near = r + np.array([0.0, 0.0, 5e-6])  # within 1e-5·1 at the small element
    assert compare(near, r, 1e-5, 1e-6, rel_floor=1e-2).finite_mismatch == 0
    assert compare(near, r, 1e-5, 1e-6).finite_mismatch == 1
    scaled = compare(a, r, 1e-5, 1e-6, rel_floor=1.0)  # 0.5 > 1e-5·100: still off
    assert "rtol=1e-05·max|r| (the output's scale)" in classify(scaled, 1e-5, 1e-6)[1]


def test_without_float64_every_fp32_row_names_its_arbiter(tmp_path: Path) -> None:
    """The float64 shadow cannot run a contrib op: ONNX Runtime all arbitrates, and every
    model:fp32 row says so and why, instead of quietly becoming the truth."""
    model = save(tmp_path / "gelu.onnx",
                 [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                 opsets={"": 17, "com.microsoft": 1})
    record = execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1,
                                jobs=1, checks=(), backends=("onnxruntime",)))
    fp32 = [r for r in rows_of(tmp_path / "data", record.run_id) if r["check"] == "model:fp32"]
    assert fp32 and all(r["reference"] == "onnxruntime:all" for r in fp32)
    assert all(r["reason"].startswith("against onnxruntime:all, the arbiter: no float64 "
                                      "shadow (the ReferenceEvaluator has no implementation "
                                      "of com.microsoft Gelu") for r in fp32)


def test_the_fp32_gate_takes_the_noise_floor_into_account() -> None:
    """A model whose own 1e-7 input noise moves it 5e-4 (scaled): a path 3e-4 off is inside
    that floor and blamed for nothing; 6e-4 is outside it."""
    import math

    from gero_runner.metrics import model_level as ml

    floor = ml.Floor(0.9999, math.nan, 4, 4, 5e-4, 1e-3, 17)
    inside = ml.OutputStats(3e-4, 1e-3, 0.99999, 4, math.nan, 4, 4, True)
    gate = ml.fp32_gate(inside, floor, False)
    assert gate.passed and "noise floor" in gate.reason
    outside = ml.OutputStats(6e-4, 1e-3, 0.99999, 4, math.nan, 4, 4, True)
    assert not ml.fp32_gate(outside, floor, False).passed


@pytest.mark.slow
def test_findings_and_summary_say_when_a_verdict_rests_on_seeded_inputs(
        tmp_path: Path) -> None:
    """A model whose float64 shadow cannot run (a finding whatever it is fed), fed gero's
    N(0,1) defaults: its finding and the summary say the verdict rests on seeded noise;
    fed the user's arrays, they do not."""
    import gero
    from gero.query.summary import summary_dict

    model = save(tmp_path / "gelu.onnx",
                 [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                 opsets={"": 17, "com.microsoft": 1})
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8))
    seen: dict[bool, Any] = {}
    for given in (False, True):
        run = gero.run(models=[model], data_dir=tmp_path / f"data{given}", repeats=1, jobs=1,
                       contracts=False, backends=["onnxruntime"],
                       inputs_file=str(inputs) if given else None)
        with run:
            seen[given] = (run.findings(), summary_dict(run.reader))
    findings, summary = seen[False]
    assert findings and all(f.seeded_inputs and "seeded default inputs" in f.title
                            for f in findings)
    assert summary["seeded_inputs"][0]["model"] == "gelu"
    assert "standard normal (default)" in summary["seeded_inputs"][0]["inputs"]
    findings, summary = seen[True]
    assert findings and not any(f.seeded_inputs for f in findings)
    assert not summary["seeded_inputs"]


def test_an_output_whose_declared_shape_is_wrong_is_flagged(tmp_path: Path) -> None:
    """ddddocr declares [1, seqlen] and produces [22, 1, 8210]: here [1, 'n'] and [2, 4]."""
    model = save(tmp_path / "liar.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])])
    warnings: list[str] = []
    execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1, jobs=1,
                       checks=(), backends=("onnxruntime",)), warn=warnings.append)
    assert any("output 'y' is declared [1, 'n'] but the model produces [2, 4]" in w
               for w in warnings), warnings


@pytest.mark.slow
def test_model_outputs_take_seed_002s_float32_bound(tmp_path: Path) -> None:
    """(x + 2000) − 2000 in float32 rounds x to 1.2e-4: ~2e-5 of the output's scale on every
    path against float64. The fp32 model gate is 1e-4 scaled (ONNX Runtime's own
    levels differ by up to 2e-5 on a real text detector): no path is blamed for it. A user's
    --rtol float32 still decides."""
    c = numpy_helper.from_array(np.array(2000.0, np.float32), "c")
    model = save(tmp_path / "cancel.onnx", [helper.make_node("Add", ["x", "c"], ["s"]),
                                            helper.make_node("Sub", ["s", "c"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 256])], [c])

    def expected_rows(tolerances: Tolerances = DEFAULTS) -> list[dict[str, object]]:
        record = execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1,
                                    jobs=1, checks=(), backends=("onnxruntime",),
                                    tolerances=tolerances))
        rows = [r for r in rows_of(tmp_path / "data", record.run_id)
                if r["check"] == "expected"]
        assert rows
        return rows

    rows = expected_rows()
    assert all(r["result"] == "passed" for r in rows), [r["reason"] for r in rows]
    assert {r["rtol"] for r in rows} == {1e-4}
    strict = expected_rows(tolerances=Tolerances.parse(rtol=["float32=1e-6"]))
    assert all(r["result"] == "divergence" for r in strict), [r["reason"] for r in strict]


def test_a_stock_evaluator_failure_from_a_known_defect_is_named_as_the_defect(
        tmp_path: Path) -> None:
    """magika's file-type classifier: GlobalMaxPool of [N, C, L] reduces the wrong axes in
    onnx's evaluator, and a later op then fails with an AxisError. The corrected evaluator
    runs it: the stock path's execution row names the registry entry (it read as 'the
    ReferenceEvaluator cannot run model: AxisError')."""
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    model = save(tmp_path / "gmp.onnx",
                 [helper.make_node("GlobalMaxPool", ["x"], ["p"]),
                  helper.make_node("Squeeze", ["p", "axes"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [axes])
    record = execute(RunRequest(models=[model], data_root=tmp_path / "data", repeats=1,
                                jobs=1, checks=(), backends=("onnxruntime",)))
    failed = [r for r in rows_of(tmp_path / "data", record.run_id)
              if r["result"] == "execution"]
    assert failed and all(r["backend"] == "onnx-reference" for r in failed), failed
    assert all("known upstream defect globalmaxpool-rank" in r["reason"] for r in failed)


def test_the_same_defect_is_named_on_the_variant_files(tmp_path: Path) -> None:
    """The GlobalMaxPool failure on magika's fp16 and int8 files read 'the ReferenceEvaluator
    cannot run the fp16 variant': the corrected evaluator runs each file, so each row names
    the entry, and the findings make one defect of them."""
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 4))
                                .astype(np.float32), "W")
    model = save(tmp_path / "gmp.onnx",
                 [helper.make_node("GlobalMaxPool", ["x"], ["p"]),
                  helper.make_node("Squeeze", ["p", "axes"], ["s"]),
                  helper.make_node("MatMul", ["s", "W"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [axes, w])
    record = execute(RunRequest(
        models=[model], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        backends=("onnxruntime",),
        model_options=ModelOptions(variants=("fp16", "int8-dynamic"))))
    rows = rows_of(tmp_path / "data", record.run_id)
    failed = [r for r in rows if r["result"] == "execution" and r["backend"] == "onnx-reference"]
    assert {r["check"] for r in failed} == {"expected", "model:fp16", "model:int8-dynamic"}
    assert all("known upstream defect globalmaxpool-rank" in r["reason"] for r in failed), [
        r["reason"] for r in failed]
    titles = [f.title for f in compute_findings(open_source(tmp_path / "data", record.run_id))
              if "ReferenceEvaluator" in f.title]
    assert len(titles) == 1 and titles[0].startswith(
        "Known upstream ReferenceEvaluator defect"), titles


def test_a_defect_the_variant_file_keeps_is_named_on_its_rows(tmp_path: Path) -> None:
    """PicoDet's int8-dynamic and fp16 files keep its opset-13 BatchNormalization with
    momentum: the stock evaluator's rows on those files were 'off' with no cause named. The
    corrected evaluator runs each such file too, and the rows name the defect."""
    rng = np.random.default_rng(0)
    params = [numpy_helper.from_array(v, k) for k, v in {
        "scale": np.ones(3, np.float32), "B": np.zeros(3, np.float32),
        "mean": np.zeros(3, np.float32), "var": np.ones(3, np.float32),
        "W": rng.standard_normal((3, 5)).astype(np.float32)}.items()]
    model = save(tmp_path / "bn.onnx",
                 [helper.make_node("BatchNormalization", ["x", "scale", "B", "mean", "var"],
                                   ["n"], epsilon=1e-5, momentum=0.1),
                  helper.make_node("MatMul", ["n", "W"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 5])], params,
                 opsets={"": 13})
    # Far from the running statistics, which the stock operator blends 1:9 with the batch's.
    x = (rng.standard_normal((8, 3)) * 0.5 + np.array([20.0, -30.0, 5.0])).astype(np.float32)
    np.savez(tmp_path / "x.npz", x=x)
    record = execute(RunRequest(
        models=[model], data_root=tmp_path / "data", repeats=1, jobs=1, checks=(),
        backends=("onnxruntime",),
        model_options=ModelOptions(variants=("int8-dynamic",),
                                   inputs_file=str(tmp_path / "x.npz"))))
    rows = rows_of(tmp_path / "data", record.run_id)
    on_file = [r for r in rows if r["backend"] == "onnx-reference"
               and r["check"].startswith("model:int8-dynamic") and r["result"] != "passed"]
    assert on_file, [(r["check"], r["backend"], r["result"]) for r in rows]
    assert all("known upstream defect batchnorm9-momentum" in r["reason"] for r in on_file), [
        r["reason"] for r in on_file]
