"""What cannot be assessed by construction (NaN in, NaN out; an operator a runtime does not
implement) is told from the rows' own columns, counted apart, and listed after a runtime's
wrong numbers; the four result classes stay as the runner wrote them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.assessable import (
    NAN,
    NOT_IMPLEMENTED,
    TOOLING_NOTE,
    split_counts,
    unassessable_sql,
)
from gero.query.findings import ORDER_TABLE, compute_findings, ensure_members
from gero.query.source import open_source
from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

_NAN_REASON = "NaN on both sides at 4 of 24 elements (NaN == NaN never passes)"
_ORT_MISSING = ("ort-{level} failed: NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED "
                ": Could not find an implementation for Elu(6) node with name ''")


def _classify(**row: Any) -> str:
    columns = {"result": "contract_issue", "check": "agreement", "reason": "", "details": "{}",
               "nan_actual": 0, "nan_reference": 0, "mismatch_count": 0, "cause_key": None,
               **row}
    names = ", ".join(f'? AS "{k}"' for k in columns)
    got = duckdb.connect().execute(
        f"SELECT {unassessable_sql()} FROM (SELECT {names}) AS obs",
        list(columns.values())).fetchall()
    return str(got[0][0])


@pytest.mark.parametrize(("row", "why"), [
    # NaN on the same positions of both sides, nothing else: the reason is not read
    ({"nan_actual": 4, "nan_reference": 4, "mismatch_count": 4, "reason": "anything"}, NAN),
    ({"check": "contract:partition", "nan_actual": 2, "nan_reference": 2, "mismatch_count": 2},
     NAN),
    # NaN on both sides, and a finite value where the other side is NaN: the runtime's own
    ({"nan_actual": 3, "nan_reference": 4, "mismatch_count": 4, "reason": _NAN_REASON}, ""),
    # NaN on both sides, and finite pairs out of tolerance: the numbers are wrong too
    ({"nan_actual": 4, "nan_reference": 4, "mismatch_count": 9, "reason": _NAN_REASON}, ""),
    # a NaN-only row that passed (a passed row is never set apart)
    ({"result": "passed", "nan_actual": 4, "nan_reference": 4, "mismatch_count": 4}, ""),
    # a determinism law over identical hashes that did not pass: NaN in them
    ({"check": "contract:determinism", "details": json.dumps({"deterministic": True})}, NAN),
    ({"check": "contract:determinism", "details": json.dumps({"deterministic": False})}, ""),
    ({"check": "contract:determinism", "details": "{}"}, ""),
    ({"result": "execution", "reason": _ORT_MISSING.format(level="all")}, NOT_IMPLEMENTED),
    ({"result": "execution", "reason": 'tract-optimized failed: TractError: Translating node '
      '#1 "Y" Unimplemented(LpNormalization) ToTypedTranslator'}, NOT_IMPLEMENTED),
    ({"result": "execution", "reason": "tract-optimized failed: TractError: Evaluating #1 "
      '"Y" Abs\n\nCaused by:\n    0: Running legacy eval\n    1: Abs does not support F64'},
     NOT_IMPLEMENTED),
    ({"result": "execution", "reason": "openvino-f32 failed: not supported: OpenVINO takes no "
      "string tensors"}, NOT_IMPLEMENTED),
    # a crash, a runtime exception: a runtime's own failure, to act on
    ({"result": "execution", "reason": "worker crashed (SIGSEGV) while onnxruntime all ran"},
     ""),
    ({"result": "execution", "reason": "ort-all failed: RuntimeException: [ONNXRuntimeError] : "
      "6 : RUNTIME_EXCEPTION : Non-zero status code"}, ""),
    ({"result": "divergence", "mismatch_count": 3,
      "reason": "3 of 8 elements outside atol=1e-06"}, ""),
    # a row of schema 5: its recorded cause key is read, never its sentence
    ({"result": "execution", "reason": "any sentence",
      "cause_key": "unsupported-op:ai.onnx.ml::LinearClassifier"}, NOT_IMPLEMENTED),
    ({"result": "execution", "reason": "any sentence",
      "cause_key": "error:TractError: OP does not support T"}, NOT_IMPLEMENTED),
    ({"result": "execution", "reason": "any sentence",
      "cause_key": "error:not supported: OpenVINO takes no string tensors"}, NOT_IMPLEMENTED),
    ({"result": "execution", "reason": _ORT_MISSING.format(level="all"),
      "cause_key": "error:RuntimeException: boom"}, ""),
    # gero's own tooling (a time budget, a yardstick) is no operator a runtime lacks: a note
    # a gero before the notes recorded as a failure, read from its key or its check
    ({"result": "execution", "reason": "tract-optimized failed: Unimplemented(X)",
      "cause_key": "tooling:shadow"}, TOOLING_NOTE),
    ({"result": "execution", "check": "model:fp16:build",
      "reason": "building the fp16 variant failed: it ran out of its 60 s budget"},
     TOOLING_NOTE),
])
def test_the_predicate_reads_what_the_row_carries(row: dict[str, Any], why: str) -> None:
    assert _classify(**row) == why


def _row(case: str, check: str, backend: str, level: str, result: str, reason: str,
         op: str = "Op", **figures: Any) -> dict[str, Any]:
    key = f"{op}/{case}/{check}/{backend}/{level}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": "R",
            "suite": "synthetic", "case_id": f"synthetic/{op}/{case}/float32", "op_type": op,
            "case_name": case, "check": check, "dtype": "float32", "input_shapes": "[2]",
            "output_name": "y", "backend": backend, "optimization": level,
            "reference": "onnx-reference" if check == "agreement" else "numpy-float64",
            "rtol": 1e-5, "atol": 1e-6, "max_abs_error": 1e-3, "result": result,
            "reason": reason, "arbiter": "-", **figures}


def _write(root: Path, rows: list[dict[str, Any]]) -> None:
    run_id = "20260102-000000-eeeeee"
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    for r in rows:
        r["run_id"] = run_id
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": run_id, "observation_id": r["observation_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": run_id, "suite": "synthetic"}))


_LEVELS = ("disable_all", "basic", "extended", "all")
_OUTSIDE = "3 of 8 elements outside atol=1e-06 + rtol=1e-05·|r|; max |a−r| = 0.4"


def _mixed_run(root: Path) -> None:
    """Many NaN-fed rows and many missing kernels (the larger causes), one small divergence
    of ONNX Runtime and one small law it breaks."""
    nan: dict[str, Any] = {"nan_actual": 4, "nan_reference": 4, "mismatch_count": 4}
    rows = [_row(c, check, "onnxruntime", level, "contract_issue", _NAN_REASON, "Max", **nan)
            for c in ("a", "b", "c") for check in ("analytic", "contract:partition")
            for level in _LEVELS]
    rows += [_row(c, "analytic", "onnx-reference", "-", "contract_issue", _NAN_REASON, "Max",
                  **nan) for c in ("a", "b", "c")]
    rows += [_row(c, "analytic", "onnxruntime", level, "execution",
                  _ORT_MISSING.format(level=level), "Elu")
             for c in ("a", "b", "c", "d") for level in _LEVELS]
    rows += [_row("a", "analytic", "onnxruntime", level, "divergence", _OUTSIDE, "Softmax",
                  mismatch_count=3) for level in ("extended", "all")]
    rows += [_row("a", "analytic", "onnxruntime", level, "passed", "bit-exact", "Softmax")
             for level in ("disable_all", "basic")]
    rows += [_row("a", "contract:probability", "onnxruntime", "all", "contract_issue",
                  "probability: row sum deviates from 1 by max 0.1 > tol 0.001 in 1 of 2 rows",
                  "Sigmoid")]
    _write(root, rows)


def test_a_runtimes_wrong_numbers_list_first_and_the_rest_is_counted_apart(
        tmp_path: Path) -> None:
    _mixed_run(tmp_path)
    source = open_source(tmp_path)
    findings = compute_findings(source)
    listed = [(f.result, f.cannot_assess, f.operators) for f in findings]
    assert listed == [
        ("contract_issue", "", ("Sigmoid",)),
        ("divergence", "", ("Softmax",)),
        ("contract_issue", NAN, ("Max",)),
        ("execution", NOT_IMPLEMENTED, ("Elu",)),
    ]
    assert [f.assessable for f in findings] == [True, True, False, False]
    # the grouped table's finding rank is the list's order
    ensure_members(source)
    ranks = dict(source.query(f"""SELECT m.finding_id, min(o.finding_rank)
                                  FROM finding_members m JOIN {ORDER_TABLE} o
                                  USING (observation_id) GROUP BY m.finding_id"""))
    assert [ranks[f.finding_id] for f in findings] == [1, 2, 3, 4]
    split = split_counts(source)
    assert split.assessable == {"divergence": 2, "contract_issue": 1, "execution": 0}
    assert split.not_assessable == {NAN: {"contract_issue": 27},
                                    NOT_IMPLEMENTED: {"execution": 16}}
    assert split.not_assessable_total == 43 and split.not_assessable_in("execution") == 16
    # the classes themselves are untouched: each class's two parts are its count
    counted = dict(source.query("SELECT result, count(*) FROM obs GROUP BY result"))
    for result in ("divergence", "contract_issue", "execution"):
        assert split.assessable[result] + split.not_assessable_in(result) == counted[result]


def test_a_finding_with_one_assessable_row_is_assessable(tmp_path: Path) -> None:
    """NaN on both sides in two cases, and in a third NaN on both sides with a finite value
    where float64 is NaN elsewhere on one level: that level's row is the runtime's own."""
    nan: dict[str, Any] = {"nan_actual": 4, "nan_reference": 4, "mismatch_count": 4}
    rows = [_row(c, "analytic", "onnxruntime", level, "contract_issue", _NAN_REASON, **nan)
            for c in ("a", "b") for level in _LEVELS]
    rows.append(_row("c", "analytic", "onnxruntime", "all", "contract_issue", _NAN_REASON,
                     nan_actual=4, nan_reference=4, mismatch_count=5))
    _write(tmp_path, rows)
    (finding,) = compute_findings(open_source(tmp_path))
    assert finding.family == "nan" and finding.assessable and finding.cannot_assess == ""
