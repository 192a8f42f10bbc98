"""One cause, one finding, on hand-made rows written as a run (issue 40, round 5): a
registered defect is one finding whichever other defects a file hits beside it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gero.query.finding_status import findings_report
from gero.query.findings import ORDER_TABLE, ensure_members
from gero.query.source import open_source
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
            **facts}


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
