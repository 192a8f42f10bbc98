"""One cause, one finding, on hand-made rows written as a run (issue 40, round 5): a
registered defect is one finding whichever other defects a file hits beside it; an old run's
rows about gero's own tooling are notes, not a path's failures; a title of an output off
says its worst row's figures."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.assessable import TOOLING_NOTE, split_counts
from gero.query.finding_status import findings_report
from gero.query.findings import (
    GERO_LIMIT,
    ORDER_TABLE,
    OUTSIDE,
    VARIANT_TOOLING,
    Finding,
    Representative,
    ensure_members,
    members_sql,
)
from gero.query.findings.titles import render_title
from gero.query.source import open_source
from gero_cli import main
from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

RUN = "20261205-060000-aaaaaa"
CASE = "model/model/float32"


def model_row(check: str, backend: str, level: str, result: str, reason: str,
              **facts: Any) -> dict[str, Any]:
    """A row of a model case as a gero of schema 5 records it (``facts``: its kind, cause
    key, scope, settings)."""
    key = f"{check}/{backend}/{level}/{facts.get('session_settings', '')}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": RUN,
            "suite": "model", "case_id": CASE, "op_type": "model", "case_name": "model",
            "check": check, "dtype": "float32", "input_shapes": "[1]", "output_name": "y",
            "backend": backend, "optimization": level, "reference": "onnxruntime:all",
            "rtol": 1e-5, "atol": 1e-6, "result": result, "reason": reason, "arbiter": "-",
            "artifact_path": "artifacts/ab/abcd", **facts}


def write_run(root: Path, rows: list[dict[str, Any]]) -> None:
    directory = root / "runs" / RUN
    directory.mkdir(parents=True)
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": RUN, "observation_id": r["observation_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": RUN, "suite": "model"}))


def test_one_registered_defect_is_one_finding_on_every_file_it_shows_on(
        tmp_path: Path) -> None:
    """Issue 40 D9 (SLANet): the opset-13 files hit the evaluator's BatchNormalization and
    OneHot defects, the opset-19 int8-static file only the OneHot one. Keyed by the set of
    keys a file hits they were two findings for the OneHot defect; keyed by one defect each,
    OneHot is one finding on every file (3 rows) and BatchNormalization one (2 rows), each
    titled with its own defect; the rows are counted once."""
    both, onehot = "defect:batchnorm9-momentum,onehot-depth-tensor", "defect:onehot-depth-tensor"
    rows = [model_row(check, "onnx-reference", "-", "execution",
                      f"known upstream defect {key.removeprefix('defect:')}",
                      failure_kind="defect", cause_key=key, scope=scope,
                      failed_path="onnx-reference")
            for check, scope, key in (("expected", "model", both), ("model:fp16", "fp16", both),
                                      ("model:int8-static", "int8-static", onehot))]
    write_run(tmp_path, rows)
    report = findings_report(tmp_path)
    got = {f.cause_key: (f.observations, f.scope) for f in report.findings}
    assert got == {onehot: (3, "model"), "defect:batchnorm9-momentum": (2, "model")}
    titles = {f.cause_key: f.title for f in report.findings}
    assert titles[onehot].endswith(": onehot-depth-tensor"), titles
    assert titles["defect:batchnorm9-momentum"].endswith(": batchnorm9-momentum"), titles
    assert report.non_passed == 3  # rows, not memberships
    source = open_source(tmp_path)
    ensure_members(source)
    # each row has one rank: the explorer's table sorted by finding shows it once
    assert source.query(f"SELECT count(*), count(DISTINCT observation_id) FROM {ORDER_TABLE}"
                        ) == [(3, 3)]


def write_schema_4(root: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as the previous release wrote them (schema 4: no scope, cause_key, note,
    figures; gero's own tooling recorded as failures)."""
    write_run(root, rows)
    path = root / "runs" / RUN / "observations.parquet"
    table = pq.read_table(path)
    table = table.drop_columns(["scope", "cause_key", "note", "figures"])
    pq.write_table(table.replace_schema_metadata({"gero.schema_version": "4"}), path)


def test_an_old_runs_tooling_rows_are_notes_not_a_paths_failures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 40 D7 on a run written before the notes (logreg_iris, slanet): a variant file
    gero could not build, an output it does not compare and its float64 shadow out of its
    budget were class ``execution`` rows; read now they get ``tooling:`` cause keys, their
    findings are counted apart as notes on gero's own limits (listed last), and they change
    no exit status. A runtime's real failure beside them still does."""
    tooling = [
        model_row("model:int8-static:build", "onnxruntime", "all", "execution",
                  "building the int8-static variant failed: GeroError: the model has no "
                  "ai.onnx operators"),
        model_row("model:outputs", "onnxruntime", "all", "execution",
                  "output 'probabilities' is seq(map(int64,tensor(float32))), not a tensor: "
                  "gero compares tensor outputs only, so this one is not compared"),
        model_row("model:float64-shadow", "float64-shadow", "-", "execution",
                  "the float64 shadow could not run: it ran out of its 60 s budget "
                  "(--path-budget)"),
        model_row("agreement", "onnxruntime", "all", "passed", "bit-exact")]
    write_schema_4(tmp_path, tooling)
    source = open_source(tmp_path)
    assert source.query("SELECT count(*) FROM obs WHERE scope IS NULL") == [(4,)]
    keys = {r[0] for r in source.query(f"""SELECT cause_key FROM ({members_sql('obs')})""")}
    assert keys == {"tooling:variant-build", "tooling:tensor-outputs", "tooling:shadow"}
    report = findings_report(tmp_path)
    assert report.findings and {f.cannot_assess for f in report.findings} == {TOOLING_NOTE}
    # no runtime's: gero's shadow, its variant tooling, its output limit
    assert {f.outlier for f in report.findings} == {"float64-shadow", VARIANT_TOOLING, GERO_LIMIT}
    assert all(f.title.startswith("gero") for f in report.findings), report.findings
    assert split_counts(source).not_assessable == {TOOLING_NOTE: {"execution": 3}}
    assert main(["findings", "--data-dir", str(tmp_path)]) == 0
    assert main(["summary", "--data-dir", str(tmp_path)]) == 0
    assert "notes on gero's own tooling" in capsys.readouterr().out
    # a runtime's own failure beside the notes is a finding to act on, as before
    other = tmp_path / "other"
    write_schema_4(other, [*tooling, model_row(
        "agreement", "tract", "optimized", "execution",
        'tract-optimized failed: TractError: Failed analyse for node #1 "x" '
        "Unimplemented(LinearClassifier)")])
    assert main(["findings", "--data-dir", str(other)]) == 1
    assert main(["summary", "--data-dir", str(other)]) == 1


def test_a_variant_files_group_of_two_precisions_is_not_titled_by_the_first_rows(
        tmp_path: Path) -> None:
    """A runtime off on a variant file is one cause on all its settings (OpenVINO's
    int8-static rounding): the group holds its bf16 and its f32 rows. Its precision came
    from the first row found, so the bf16 row's made it 'OpenVINO computes float32 in
    bf16' although the f32 setting is off the same way; it comes from the rows' own
    settings: two precisions, no precision claim. A group whose rows all compute in bf16
    keeps it."""
    def cosine(setting: str, precision: str, check: str = "model:int8-static:cosine",
               result: str = "divergence") -> dict[str, Any]:
        return model_row(check, "openvino", setting, result,
                         "row cosine 0.96 < 0.99", failure_kind="law:cosine",
                         scope=check.split(":")[1], failed_path="",
                         session_settings=json.dumps({"inference_precision": precision}),
                         max_abs_error=0.1, arbiter="reference")

    rows = [cosine("bf16-default", "bf16"), cosine("f32", "f32"),
            model_row("model:int8-static:cosine", "onnxruntime", "all", "passed", "ok",
                      scope="int8-static")]
    write_run(tmp_path, rows)
    (finding,) = findings_report(tmp_path).findings
    assert (finding.outlier, finding.family, finding.observations) == (
        "openvino", "model:int8-static:cosine", 2)
    assert "bf16" not in finding.title, finding.title
    # the same rows of the bf16 setting alone: its precision, named
    alone = tmp_path / "alone"
    write_run(alone, [rows[0], rows[2]])
    (finding,) = findings_report(alone).findings
    assert finding.family == "precision" and "in bf16" in finding.title, finding.title


def _off(family: str, outlier: str, template: str, cause: str, figures: str,
         result: str = "divergence", observations: int = 3) -> Finding:
    rep = Representative("0" * 16, "c1", family, "float32", "[1, 80]", outlier, "f32",
                         "int8-static:onnxruntime:all", result, cause, 0.57, None, 1e-4, 1e-5,
                         "", cause=cause, figures=figures)
    return Finding("f" * 12, "", result, family, outlier, template, "model", observations, 1,
                   ("khmersm",), ("float32",), (), {result: observations}, 0.57, rep,
                   kind="law:cosine", scope="int8-static")


def test_an_output_off_is_titled_by_its_worst_rows_figures() -> None:
    """Issue 40 (noticed): the figures column (mismatches, elements, max |a−r|) is recorded,
    and the titles of an output off quoted the gate's sentence again; they say the worst
    row's figures where it has them, its sentence where it has none (a gero before schema
    5) or where its outputs are non-finite (the figures hold the finite ones only)."""
    cosine = ("row cosine 0.968554 < min(0.99, floor 1.000000) over 40 row(s), and further "
              "from the file computed exactly than the run's baseline")
    figures = '{"elements":80,"max_abs_error":0.5715117454528809,"mismatches":48}'
    khmersm = _off("model:int8-static:cosine", "openvino", "row cosine", cosine, figures)
    assert render_title(khmersm) == (
        "OpenVINO on the int8-static file of khmersm disagrees with ONNX Runtime (all) on that "
        "file (cosine): 48 of 80 elements off in its worst row, max |a−r| 0.572")
    one = _off("numeric", "onnxruntime", OUTSIDE, "", figures, observations=1)
    assert render_title(one) == ("ONNX Runtime's khmersm (float32) is off from float64 "
                                 "beyond tolerance: 48 of 80 elements off, max |a−r| 0.572")
    old = _off("model:int8-static:cosine", "openvino", "row cosine", cosine, "")
    assert "(cosine): worst row cosine 0.968554 < min(0.99" in render_title(old)
    # the fp32 model's gate keeps its sentence (against what: the closest path) beside them
    gate = dataclasses.replace(
        _off("model:fp32", "openvino", "fp32", "9.46x further from the float64 arbiter than "
             "ONNX Runtime", figures, observations=1), kind="law:fp32", scope="model")
    assert render_title(gate) == (
        "OpenVINO is off on khmersm (float32): 9.46x further from the float64 arbiter than "
        "ONNX Runtime; 48 of 80 elements off, max |a−r| 0.572")
    nan = "214 of 428 elements are NaN or inf on the fp16 file"
    overflow = _off("model:fp16:vs-fp32", "tract", "vs-fp32", nan, figures,
                    result="contract_issue", observations=1)
    assert render_title(overflow).endswith(": " + nan)
