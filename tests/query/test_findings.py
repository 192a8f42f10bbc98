"""Findings: non-passed observations grouped by cause, on small real runs and fixed rows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.finding_status import GONE, NEW, STILL, findings_report
from gero.query.findings import (
    MEMBERS_TABLE,
    cache_files,
    compute_findings,
    ensure_members,
    has_members,
    non_passed_count,
)
from gero.query.source import open_source
from gero_runner.run import RunRequest, execute
from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table
from gero_runner.tolerances import Tolerances

OPS = ["Elu", "Softsign", "Max", "LayerNormalization"]


def _run(root: Path, run_id: str, ops: list[str] = OPS, **kw: Any) -> None:
    execute(RunRequest(data_root=root, ops=ops, dtypes=["float16", "float64"], repeats=1,
                       run_id=run_id, **kw))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base; tight (float16 rtol tightened); again (the base's tolerances); fewer (one op)."""
    root = tmp_path_factory.mktemp("findings")
    _run(root, "20260101-000001-aaaaaa")
    _run(root, "20260101-000002-bbbbbb",
         tolerances=Tolerances.with_overrides({"float16": 1e-6}, {"float16": 1e-7}))
    _run(root, "20260101-000003-cccccc")
    _run(root, "20260101-000004-dddddd", ops=["Max"])
    return root


@pytest.mark.slow
def test_every_non_passed_observation_is_in_exactly_one_finding(runs: Path) -> None:
    source = open_source(runs, "20260101-000001")
    findings = compute_findings(source)
    ensure_members(source)
    assert sum(f.observations for f in findings) == non_passed_count(source) > 0
    dup = source.query(f"SELECT count(*) - count(DISTINCT observation_id) FROM {MEMBERS_TABLE}")
    assert dup[0][0] == 0
    missing = source.query(f"""SELECT count(*) FROM obs WHERE result <> 'passed'
                               AND observation_id NOT IN (SELECT observation_id FROM
                               {MEMBERS_TABLE})""")
    assert missing[0][0] == 0


def test_findings_are_kept_and_read_back_by_the_next_open(runs: Path) -> None:
    first = compute_findings(open_source(runs, "20260101-000001"))
    again = open_source(runs, "20260101-000001")
    files = cache_files(again)
    assert files is not None and all(p.is_file() for p in files)
    # as JSON: a NaN figure (a failed row's percentiles) reads back as NaN, which == denies
    assert (json.dumps([f.as_dict() for f in compute_findings(again)])
            == json.dumps([f.as_dict() for f in first]))
    assert not has_members(again)  # the list alone; its members when a filter needs them
    ensure_members(again)
    rows = again.query(f"SELECT count(*) FROM {MEMBERS_TABLE}")
    assert rows[0][0] == sum(f.observations for f in first)


def test_a_missing_kernel_is_one_finding_across_operators_and_levels(runs: Path) -> None:
    findings = compute_findings(open_source(runs, "20260101-000001"))
    # (A worker crash, should one happen, is another cause: another finding.)
    execution = [f for f in findings if f.result == "execution"
                 and f.cause_key.startswith("unsupported-op:")]
    assert len(execution) == 1
    f = execution[0]
    assert f.operators == ("Elu", "Softsign") and f.dtypes == ("float64",)
    assert f.levels == ("disable_all", "basic", "extended", "all")
    assert f.outlier == "onnxruntime" and "no float64 kernel" in f.title
    assert f.representative.result == "execution"


def test_the_reference_evaluators_registered_defect_is_one_finding_across_checks(
        runs: Path) -> None:
    """The ReferenceEvaluator's float16 LayerNormalization (sums of squares in float16, its
    stash_type ignored) is a registered defect now: its analytic rows and its agreement rows
    against the corrected evaluator are one finding, the defect's (ORT agrees with float64
    there and has no row in it)."""
    findings = compute_findings(open_source(runs, "20260101-000001"))
    reference_off = [f for f in findings if f.outlier == "onnx-reference"
                     and f.operators == ("LayerNormalization",)]
    assert len(reference_off) == 1
    f = reference_off[0]
    assert f.dtypes == ("float16",) and f.kind == "defect"
    assert f.cause_key == "defect:layernorm-float16-stash"
    assert f.title.startswith("Known upstream ReferenceEvaluator defect")


def _stable(run: Path, run_id: str) -> dict[str, str]:
    # A worker crash (a flaky runtime under load) is a finding of its own, not of the data.
    return {f.finding_id: f.title for f in compute_findings(open_source(run, run_id))
            if "crashed" not in f.template}


def test_finding_ids_are_the_same_in_every_run(runs: Path) -> None:
    assert _stable(runs, "20260101-000001") == _stable(runs, "20260101-000003")


def test_tightened_tolerance_shows_new_and_restoring_it_shows_them_gone(runs: Path) -> None:
    tight = findings_report(runs, "20260101-000002", "20260101-000001")
    new = [f for f in tight.findings if f.status == NEW]
    assert new and all(f.status in (NEW, STILL) for f in tight.findings)
    again = findings_report(runs, "20260101-000003")  # baseline: the previous run, "tight"
    assert again.baseline_run_id == "20260101-000002-bbbbbb"
    gone = {f.finding_id for f in again.gone}
    assert {f.finding_id for f in new} <= gone
    assert all(f.status == GONE for f in again.gone)
    base = findings_report(runs, "20260101-000001")
    assert {f.finding_id for f in again.findings} == {f.finding_id for f in base.findings}


def test_cases_that_did_not_run_make_no_finding_gone(runs: Path) -> None:
    fewer = findings_report(runs, "20260101-000004", "20260101-000003")
    assert fewer.gone == []
    assert {op for f in fewer.unresolved for op in f.operators} == {
        "Elu", "Softsign", "LayerNormalization"}
    assert all(f.status == STILL for f in fewer.findings)


# Fixed rows: the arbiter decides where no float64 row failed --------------------------------

def _row(case: str, check: str, backend: str, level: str, result: str, reason: str,
         arbiter: str = "-") -> dict[str, Any]:
    key = f"{case}/{check}/{backend}/{level}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": "R",
            "suite": "synthetic", "case_id": f"synthetic/Op/{case}/float32", "op_type": "Op",
            "case_name": case, "check": check, "dtype": "float32", "input_shapes": "[2]",
            "output_name": "y", "backend": backend, "optimization": level,
            "reference": "onnx-reference" if check == "agreement" else "numpy-float64",
            "rtol": 1e-5, "atol": 1e-6, "max_abs_error": 1e-3, "result": result,
            "reason": reason, "arbiter": arbiter}


def _write(root: Path, rows: list[dict[str, Any]], run_id: str = "20260102-000000-eeeeee"
           ) -> None:
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    for r in rows:
        r["run_id"] = run_id
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": run_id, "observation_id": r["observation_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": run_id, "suite": "synthetic"}))


def test_agreement_rows_blame_the_side_float64_does_not_side_with(tmp_path: Path) -> None:
    bad = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.001"
    rows = []
    for case, arbiter in (("a", "actual"), ("b", "actual"), ("c", "reference")):
        for level in ("disable_all", "basic", "extended", "all"):
            rows.append(_row(case, "agreement", "onnxruntime", level, "divergence", bad, arbiter))
    _write(tmp_path, rows)
    findings = compute_findings(open_source(tmp_path))
    by_outlier = {f.outlier: f.cases for f in findings}
    assert by_outlier == {"onnx-reference": 2, "onnxruntime": 1}


def test_some_levels_failing_name_those_levels(tmp_path: Path) -> None:
    bad = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.001"
    rows = [_row("a", "analytic", "onnxruntime", level,
                 "divergence" if level in ("extended", "all") else "passed",
                 bad if level in ("extended", "all") else "bit-exact")
            for level in ("disable_all", "basic", "extended", "all")]
    rows.append(_row("a", "analytic", "onnx-reference", "-", "passed", "bit-exact"))
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.outlier == "onnxruntime@extended,all"
    assert f.levels == ("extended", "all")
    assert "ONNX Runtime at extended, all" in f.title


def test_nan_on_both_sides_is_one_cause_across_checks_and_operators(tmp_path: Path) -> None:
    nan = "NaN on both sides at 4 of 24 elements: NaN == NaN never passes"
    rows = []
    for op in ("a", "b"):
        for check in ("analytic", "contract:partition", "contract:permutation"):
            for level in ("disable_all", "basic", "extended", "all"):
                rows.append(_row(op, check, "onnxruntime", level, "contract_issue",
                                 f"{check.split(':')[-1]}: {nan}" if ":" in check else nan))
            rows.append(_row(op, check, "onnx-reference", "-", "contract_issue", nan))
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.family == "nan" and f.outlier == "every path" and f.observations == len(rows)


_OUTSIDE = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.001"
_F32 = json.dumps({"inference_precision": "f32"})


def _case(rows: list[dict[str, Any]], case: str, op: str, dtype: str) -> list[dict[str, Any]]:
    for r in rows:
        r.update(op_type=op, dtype=dtype, case_id=f"synthetic/{op}/{case}/{dtype}")
    return rows


def _ort_passes(case: str) -> list[dict[str, Any]]:
    return [_row(case, "analytic", "onnxruntime", level, "passed", "bit-exact")
            for level in ("disable_all", "basic", "extended", "all")]


def test_a_runtime_computing_in_lower_precision_is_one_cause_per_dtype(tmp_path: Path) -> None:
    """OpenVINO's settings say it computes float64 in f32: its float64 rows of any operator
    and check (the law it then breaks too) are that one cause."""
    rows = []
    for case, op in (("a", "Abs"), ("b", "Exp"), ("c", "Sin")):
        openvino = [_row(case, "analytic", "openvino", "f32", "divergence", _OUTSIDE),
                    _row(case, "contract:partition", "openvino", "f32", "contract_issue",
                         "partition: |full − concat(parts)| = 0.1 > tol 0.001 at 2 elements")]
        for r in openvino:
            r["session_settings"] = _F32
        rows += _case(_ort_passes(case) + openvino, case, op, "float64")
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.family == "precision" and f.outlier == "openvino"
    assert f.operators == ("Abs", "Exp", "Sin") and f.observations == 6
    assert f.title.startswith("OpenVINO computes float64 in f32")


def test_a_runtime_off_without_a_lower_precision_is_one_cause_per_operator(
        tmp_path: Path) -> None:
    """tract off on two operators is two causes; the law it breaks in the same case is not a
    third."""
    rows = []
    for case, op in (("a", "Celu"), ("b", "InstanceNormalization")):
        rows += _case([
            *_ort_passes(case),
            _row(case, "analytic", "tract", "optimized", "divergence", _OUTSIDE),
            _row(case, "contract:partition", "tract", "optimized", "contract_issue",
                 "partition: |full − concat(parts)| = 0.65 > tol 2e-05 at 300 of 300 elements"),
        ], case, op, "float32")
    _write(tmp_path, rows)
    findings = compute_findings(open_source(tmp_path))
    assert sorted(f.operators for f in findings) == [("Celu",), ("InstanceNormalization",)]
    assert all(f.family == "numeric" and f.outlier == "tract" and f.observations == 2
               for f in findings)
    assert {f.title for f in findings} == {
        "Tract's Celu (float32) is off from float64 beyond tolerance",
        "Tract's InstanceNormalization (float32) is off from float64 beyond tolerance"}


def test_a_reference_defect_keeps_its_finding_beside_another_runtime(tmp_path: Path) -> None:
    """In one Erf case the ReferenceEvaluator's registered defect and OpenVINO's float32
    arithmetic are two causes: the outlier path is part of the signature."""
    defect = ("known upstream defect erf-float32-rounding (onnx/reference/ops/op_erf.py): Erf "
              "rounds its float64 results to float32 (~3e-8 error) — " + _OUTSIDE)
    openvino = [_row("a", "analytic", "openvino", "f32", "divergence", _OUTSIDE),
                _row("a", "agreement", "openvino", "f32", "divergence", _OUTSIDE, "reference")]
    for r in openvino:
        r["session_settings"] = _F32
    rows = _case(_ort_passes("a") + openvino + [
        _row("a", "analytic", "onnx-reference", "-", "divergence", defect)], "a", "Erf",
        "float64")
    _write(tmp_path, rows)
    findings = {f.outlier: f for f in compute_findings(open_source(tmp_path))}
    assert set(findings) == {"onnx-reference", "openvino"}
    assert findings["onnx-reference"].title.startswith("Known upstream ReferenceEvaluator defect")
    assert findings["onnx-reference"].observations == 1
    assert findings["openvino"].family == "precision"


def test_chained_runtime_errors_are_named_by_their_root_cause(tmp_path: Path) -> None:
    """tract's errors differ in node numbers, names, operators and element types; the root
    cause (the chain's last line) is one finding across operators and settings."""
    def tract(node: int, name: str, op: str, dtype: str, setting: str) -> str:
        return (f"tract-{setting} failed: TractError: Evaluating #{node} \"{name}\" {op}\n\n"
                f"Caused by:\n    0: Running legacy eval\n    1: {op} does not support {dtype}")
    rows = []
    for case, op, dtype in (("a", "Erf", "F64"), ("b", "Abs", "F64"), ("c", "Round", "F16")):
        rows += _case([_row(case, "agreement", "tract", setting, "execution",
                            tract(i + 1, f"Y{i}", op, dtype, setting))
                       for i, setting in enumerate(("optimized", "unoptimized"))], case, op,
                      "float64")
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.outlier == "tract" and f.operators == ("Abs", "Erf", "Round")
    assert f.template == "PATH failed: TractError: OP does not support T"


def test_a_runtime_that_drops_nan_is_not_the_nan_fed_cause(tmp_path: Path) -> None:
    """NaN on both sides at some elements and a finite value where the other side is NaN:
    the runtime does not propagate NaN (its own finding), the rest is NaN fed to every path."""
    nan = "NaN on both sides at 4 of 32 elements (NaN == NaN never passes)"
    rows = _case([_row("a", "analytic", "onnxruntime", level, "contract_issue", nan)
                  for level in ("disable_all", "basic", "extended", "all")]
                 + [_row("a", "analytic", "openvino", "f32", "contract_issue",
                         "NaN on both sides at 3 of 32 elements (NaN == NaN never passes); "
                         "reference is NaN at 1 of 32 elements where actual is 1")],
                 "a", "Max", "float32")
    _write(tmp_path, rows)
    findings = {f.family: f for f in compute_findings(open_source(tmp_path))}
    assert set(findings) == {"nan", "non-finite"}
    assert findings["nan"].observations == 4
    assert findings["non-finite"].outlier == "openvino"
    assert findings["non-finite"].title.startswith("OpenVINO gives finite values where")


@pytest.mark.slow
def test_a_finding_is_gone_only_where_its_cases_ran_again_and_passed(tmp_path: Path) -> None:
    """The same slots failing for another reason do not make the baseline's finding gone."""
    levels = ("disable_all", "basic", "extended", "all")
    overflow = "actual is +inf at 1 of 8 elements where reference is 1"
    for run_id, result, reason in (("20260102-000001-aaaaaa", "divergence", _OUTSIDE),
                                   ("20260102-000002-bbbbbb", "contract_issue", overflow),
                                   ("20260102-000003-cccccc", "passed", "bit-exact")):
        rows = [_row("a", "analytic", "onnxruntime", level, result, reason) for level in levels]
        for r in rows:  # each run's own observations
            key = r["observation_id"] + run_id
            r["observation_id"] = hashlib.sha256(key.encode()).hexdigest()
        _write(tmp_path, rows, run_id)
    other_cause = findings_report(tmp_path, "20260102-000002", "20260102-000001")
    assert other_cause.gone == [] and len(other_cause.unresolved) == 1
    assert [f.status for f in other_cause.findings] == [NEW]
    fixed = findings_report(tmp_path, "20260102-000003", "20260102-000001")
    assert [f.finding_id for f in fixed.gone] == [f.finding_id for f in other_cause.unresolved]


# Model cases: a variant file's failures name the path that failed ------------------------

def _model_row(check: str, backend: str, level: str, result: str, reason: str,
               reference: str) -> dict[str, Any]:
    row = _row("m", check, backend, level, result, reason)
    row.update(suite="model", case_id="model/magika/bytes=[2,2048]", op_type="magika",
               reference=reference, dtype="int32")
    return row


def test_a_path_failing_on_a_variant_file_is_named_not_the_variant(tmp_path: Path) -> None:
    """tract and the ReferenceEvaluator failing on the fp16 and int8-static files: titled
    after them ("tract cannot run … on the fp16 file"), never "Fp16 cannot run"; one
    cause across the two files."""
    tract = "TractError: Evaluating #3 \"Conv_0\" Conv\n\nCaused by:\n    0: Unsupported F16"
    rows = [
        _model_row("model:fp16", "tract", "optimized", "execution",
                   f"fp16:tract-optimized failed: {tract}", "fp16:onnxruntime:all"),
        _model_row("model:int8-static", "tract", "optimized", "execution",
                   f"int8-static:tract-optimized failed: {tract}",
                   "int8-static:onnxruntime:all"),
        _model_row("model:fp16", "onnx-reference", "-", "execution",
                   "fp16:onnx-reference failed: RuntimeError: no float16 Einsum",
                   "fp16:onnxruntime:all"),
        _model_row("model:fp16", "onnxruntime", "all", "passed", "ok", "fp32:onnxruntime:all"),
    ]
    _write(tmp_path, rows)
    findings = {f.outlier: f for f in compute_findings(open_source(tmp_path))}
    assert set(findings) == {"tract", "onnx-reference"}
    assert findings["tract"].observations == 2  # one finding across both files
    # no dtype: int32 is the model's output's, not the failing operator's (issue 40)
    assert findings["tract"].title.startswith("Tract cannot run magika on the fp16 and "
                                              "int8-static files: ")
    assert findings["onnx-reference"].title.startswith(
        "The ReferenceEvaluator cannot run magika on the fp16 file")


def test_a_variant_gero_could_not_build_blames_its_tooling(tmp_path: Path) -> None:
    rows = [_model_row("model:int8-static:build", "onnxruntime", "all", "execution",
                       "building the int8-static variant failed: KeyError: 'conv_0.w'",
                       "int8-static:onnxruntime:all")]
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.outlier == "variant-tooling"
    assert f.title.startswith("gero's variant tooling could not build the int8-static file")
    assert "ONNX Runtime" not in f.title


def test_a_runtime_widening_an_fp16_file_is_named_as_such(tmp_path: Path) -> None:
    reason = ("ONNX Runtime computes the fp16 file in float32 at 147 of its 150 float16 nodes "
              "(Conv 32, HardSwish 28): its CPU kernels widen them, with 2 Casts in its "
              "graph where the file has 2")
    _write(tmp_path, [_model_row("model:fp16:precision", "onnxruntime", "all", "execution",
                                 reason, "fp16 file")])
    (f,) = compute_findings(open_source(tmp_path))
    assert f.title.startswith("ONNX Runtime computes the fp16 file of magika in float32, "
                              "wider than it declares: at 147 of its 150 float16 nodes"), f.title
    assert f.title.count("in float32") == 1, f.title
    assert "cannot run" not in f.title


def test_variant_file_disagreements_are_causes_of_their_own(tmp_path: Path) -> None:
    """A model off from float64 on every path (one cause), ORT disable_all against all on
    the fp16 file, and OpenVINO against ORT on the int8-static file: three findings, not
    one 'every path' that swallows the two variant-file disagreements."""
    off = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.001"
    rows = [_model_row("expected", b, lvl, "divergence", off, "float64-shadow")
            for b, lvl in (("onnxruntime", "all"), ("openvino", "f32"))]
    rows += [
        _model_row("model:fp16:scaled", "onnxruntime", "disable_all", "divergence",
                   "scaled error against the fp16 file computed exactly 9e-3 > 0.004",
                   "fp16-exact-shadow"),
        _model_row("model:fp16:scaled", "openvino", "f32", "passed", "ok", "fp16-exact-shadow"),
        _model_row("model:int8-static:cosine", "openvino", "f32", "divergence",
                   "row cosine 0.8 < min(0.99, floor 0.999) over 4 row(s)",
                   "int8-static:onnxruntime:all"),
        _model_row("model:int8-static:cosine", "onnxruntime", "disable_all", "passed", "ok",
                   "int8-static:onnxruntime:all"),
    ]
    _write(tmp_path, rows)
    findings = compute_findings(open_source(tmp_path))
    assert sorted((f.family, f.outlier) for f in findings) == [
        ("model:fp16:scaled", "onnxruntime"), ("model:int8-static:cosine", "openvino"),
        ("numeric", "every path")]


def test_every_path_needs_every_path_off_the_same_way(tmp_path: Path) -> None:
    off = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.001"
    nan = "actual is NaN at 2 of 8 elements where the reference is finite"
    rows = [_model_row("expected", "onnxruntime", "all", "divergence", off, "float64-shadow"),
            _model_row("expected", "openvino", "f32", "contract_issue", nan, "float64-shadow")]
    _write(tmp_path, rows)
    outliers = {f.outlier for f in compute_findings(open_source(tmp_path))}
    assert outliers == {"onnxruntime", "openvino"}


def test_every_path_means_every_setting_of_every_runtime(tmp_path: Path) -> None:
    """PicoDet's fp16 file: ORT basic/extended/all, OpenVINO bf16 and the ReferenceEvaluator
    fail vs-fp32 while ORT disable_all and OpenVINO f32 pass. It was 'every path' (every
    runtime had a failing setting); each runtime is its own finding, titled by the path and
    the file it ran."""
    off = "scaled error against the fp32 model 0.0064 > 0.0062"
    rows = [_model_row("model:fp16:vs-fp32", "onnxruntime", lvl, "divergence", off,
                       "fp32:onnxruntime:all") for lvl in ("basic", "extended", "all")]
    rows += [
        _model_row("model:fp16:vs-fp32", "onnxruntime", "disable_all", "passed", "ok",
                   "fp32:onnxruntime:all"),
        _model_row("model:fp16:vs-fp32", "openvino", "f32", "passed", "ok",
                   "fp32:onnxruntime:all"),
        _model_row("model:fp16:vs-fp32", "openvino", "bf16-default", "divergence", off,
                   "fp32:onnxruntime:all"),
        _model_row("model:fp16:vs-fp32", "onnx-reference", "-", "divergence", off,
                   "fp32:onnxruntime:all"),
    ]
    _write(tmp_path, rows)
    findings = compute_findings(open_source(tmp_path))
    assert "every path" not in {f.outlier for f in findings}
    titles = sorted(f.title for f in findings)
    assert any(t.startswith("ONNX Runtime at basic, extended, all on the fp16 file of ")
               and " is off the fp32 model: " in t for t in titles), titles
    assert any(t.startswith("The ReferenceEvaluator on the fp16 file of ") for t in titles)


def test_without_float64_a_model_disagreement_blames_neither_side(tmp_path: Path) -> None:
    """A model whose float64 shadow did not run (it timed out): OpenVINO off from the
    ReferenceEvaluator, ONNX Runtime not; with nothing to side with, neither is blamed."""
    off = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·max|r| (the output's scale)"
    rows = [_model_row("agreement", "openvino", "f32", "divergence", off, "onnx-reference"),
            _model_row("agreement", "onnxruntime", "all", "passed", "ok", "onnx-reference")]
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.outlier == "onnx-reference vs openvino"
    assert f.title.startswith("The ReferenceEvaluator and OpenVINO disagree on magika (int32) "
                              "with no float64 arbiter")


def test_a_defect_is_one_finding_across_the_model_and_its_variant_files(tmp_path: Path) -> None:
    """PicoDet: the BatchNormalization momentum defect named on the model's rows and on the
    fp16 and int8-dynamic files' rows. The entry's description holds an apostrophe ("the
    batch's own statistics"), which the templates mask up to the next one, so each row's own
    figures stayed in its kind: three findings for one defect."""
    from gero_runner.backends.reference_defects import BY_KEY

    label = BY_KEY["batchnorm9-momentum"].label()
    rows = [
        # against the float64 shadow, so its arbiter names the path (issue 40, item 3)
        {**_model_row("model:fp32", "onnx-reference", "-", "divergence",
                      f"{label} — scaled error 3.44 > 0.0001 (the output's scale)",
                      "float64-shadow"), "arbiter": "reference"},
        _model_row("model:fp16:scaled", "onnx-reference", "-", "divergence",
                   f"{label} — scaled error against the fp16 file's float64 shadow 1.48 > "
                   "0.0135 (1.5× the 0.009 that the file's two correct computations are apart)",
                   "fp16-rounded-shadow"),
        # further from the file computed exactly than the run's baseline: the path is off
        {**_model_row("model:int8-dynamic:cosine", "onnx-reference", "-", "divergence",
                      f"{label} — row cosine 0.128 < min(0.99, floor 1.000000) over 7600 "
                      "row(s)", "int8-dynamic:onnxruntime:all"), "arbiter": "reference"},
    ]
    _write(tmp_path, rows)
    found = compute_findings(open_source(tmp_path))
    assert len(found) == 1, [(f.family, f.outlier, f.template) for f in found]
    (f,) = found
    assert f.observations == 3 and f.title.startswith("Known upstream ReferenceEvaluator defect")
    # no dtype: int32 is the model's output's, not the defect's operator's (issue 40)
    assert f.title.endswith("defect (magika): batchnorm9-momentum"), f.title


def test_an_int8_static_title_gives_the_figures_not_the_calibration(tmp_path: Path) -> None:
    """The int8-static verdict's first clause says where its ranges came from; the title
    gives what failed (PicoDet: 'The int8-static file … is off the fp32 model on every path:
    calibrated on the --inputs arrays of inputs.npz')."""
    reason = ("calibrated on the --inputs arrays of x.npz; row cosine 0.13 < min(0.99, floor "
              "1.000000) over 4 row(s)")
    rows = [_model_row("model:int8-static:vs-model", b, lvl, "divergence", reason,
                       f"fp32:{b}:{lvl}") for b, lvl in (("onnxruntime", "all"),
                                                        ("openvino", "f32"))]
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    # the representative's own figures (its cause), said to be the worst row's (issue 39)
    assert f.title.startswith("The int8-static file of magika is off the fp32 model on every "
                              "path: worst row cosine 0.13 < min(0.99"), f.title
    assert "calibrated" not in f.title


def test_a_variant_judged_against_the_model_is_the_subject_of_its_title(tmp_path: Path) -> None:
    """silero-vad's int8-dynamic file, off the fp32 model on the one runtime that runs it:
    the file is what failed, not ONNX Runtime ('ONNX Runtime on the int8-dynamic file … is
    off' sent users after the runtime)."""
    reason = "scaled error 0.472 > 0.0315 (rows of one element: a cosine only compares their signs)"
    rows = [_model_row("model:int8-dynamic:vs-model", "onnxruntime", "all", "divergence",
                       reason, "fp32:onnxruntime:all"),
            _model_row("model:int8-dynamic:vs-model", "openvino", "f32", "passed", "ok",
                       "fp32:openvino:f32")]
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.title.startswith("The int8-dynamic file of magika is off the fp32 model on "
                              "ONNX Runtime: scaled error 0.472 > 0.0315"), f.title


def test_a_runtimes_fault_on_a_variant_file_is_one_finding(tmp_path: Path) -> None:
    """ddddocr's detector: OpenVINO disagrees with ONNX Runtime on the int8-static file
    (0.567) and so its own int8-static verdict fails too (0.545 against its fp32 model): one
    cause, one finding titled by the disagreement. The file off on every runtime stays a
    finding of its own."""
    cos = "row cosine 0.567339 < min(0.99, floor 0.996109) over 3549 row(s)"
    vs = ("calibrated on the --inputs arrays of x.npz; row cosine 0.544857 < min(0.99, "
          "floor 1.000000) over 3549 row(s)")
    # the file computed exactly sides with ONNX Runtime: OpenVINO is the one off
    rows = [{**_model_row("model:int8-static:cosine", "openvino", lvl, "divergence", cos,
                          "int8-static:onnxruntime:all"), "arbiter": "reference"}
            for lvl in ("f32", "bf16-default")]
    rows += [_model_row("model:int8-static:vs-model", "openvino", "f32", "divergence", vs,
                        "fp32:openvino:f32"),
             _model_row("model:int8-static:vs-model", "onnxruntime", "all", "passed", "ok",
                        "fp32:onnxruntime:all"),
             _model_row("model:int8-static:cosine", "onnxruntime", "disable_all", "passed",
                        "ok", "int8-static:onnxruntime:all")]
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.observations == 3 and f.outlier == "openvino"
    # its headline is its own (cosine) row's, which names the baseline it disagrees with
    assert f.title.startswith("OpenVINO on the int8-static file of magika disagrees with "
                              "ONNX Runtime (all) on that file (cosine)"), f.title


def test_a_file_off_the_same_ways_on_every_runtime_is_one_every_path_finding(
        tmp_path: Path) -> None:
    """silero-vad's int8-dynamic file: on both runtimes a scaled error on its probability
    and a cosine on its state. Each runtime off in the same kinds is one cause, 'every
    path', not one finding per runtime."""
    scaled = "scaled error 0.472 > 0.0315 (rows of one element: a cosine only compares their signs)"
    cosine = "row cosine 0.605847 < min(0.99, floor 1.000000) over 16 row(s)"
    rows = []
    for backend, level in (("onnxruntime", "all"), ("openvino", "f32")):
        for out, reason in (("output", scaled), ("stateN", cosine)):
            row = _model_row("model:int8-dynamic:vs-model", backend, level, "divergence",
                             reason, f"fp32:{backend}:{level}")
            row["output_name"] = out
            rows.append(row)
    _write(tmp_path, rows)
    (f,) = compute_findings(open_source(tmp_path))
    assert f.outlier == "every path" and f.observations == 4, f.title
