"""Tolerance what-if: a re-grade from stored figures never contradicts a real comparison."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.findings import compute_findings
from gero.query.source import open_source
from gero.query.table import PATH_SQL
from gero.query.whatif import UNDETERMINED, Override, parse_whatif, prepare, what_if
from gero_runner.classify import classify
from gero_runner.metrics.compare import compare
from gero_runner.schema import PASSED, SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

RTOL, ATOL = 1e-5, 1e-6
NEW_TOLERANCES = [(1e-4, 1e-5), (1e-6, 1e-7), (1e-6, 1e-4), (1e-3, 1e-8), (1e-5, 1e-6)]


def _pairs(n: int = 60) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        r = rng.standard_normal(16) * 10.0 ** rng.integers(-3, 3)
        noise = rng.standard_normal(16) * 10.0 ** rng.integers(-8, -3) * (i % 3)
        out.append((r + noise, r))
    return out


def _write(root: Path, pairs: list[tuple[np.ndarray, np.ndarray]],
           paths: tuple[tuple[str, str], ...] = (("onnxruntime", "all"),)) -> None:
    """One row per pair, the (backend, optimization) paths taken in turn, three rows each
    (one exact, two off: ``_pairs``' noise)."""
    rows: list[dict[str, Any]] = []
    run_id = "20260103-000000-ffffff"
    for i, (a, r) in enumerate(pairs):
        backend, optimization = paths[i // 3 % len(paths)]
        cmp = compare(a, r, RTOL, ATOL)
        result, reason = classify(cmp, RTOL, ATOL)
        rows.append({
            "observation_id": hashlib.sha256(str(i).encode()).hexdigest(), "run_id": run_id,
            "suite": "synthetic", "case_id": f"synthetic/Op/c{i}/float64", "op_type": "Op",
            "check": "analytic", "dtype": "float64", "backend": backend,
            "optimization": optimization, "reference": "numpy-float64", "rtol": RTOL, "atol": ATOL,
            "result": result, "reason": reason, "arbiter": "-",
            **{k: getattr(cmp, k) for k in ("max_abs_error", "scaled_error", "min_atol",
                                             "min_rtol", "nan_actual", "inf_actual")},
            "nan_reference": 0, "inf_reference": 0})
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    pq.write_table(pa.Table.from_pylist([{"run_id": run_id, "observation_id": r[
        "observation_id"]} for r in rows], schema=SIGHTING_SCHEMA),
        directory / "sightings.parquet")
    (directory / "run.json").write_text('{"suite": "synthetic"}')


@pytest.mark.parametrize(("rtol", "atol"), NEW_TOLERANCES)
def test_regrade_agrees_with_comparing_again(tmp_path: Path, rtol: float, atol: float) -> None:
    pairs = _pairs()
    _write(tmp_path, pairs)
    source = open_source(tmp_path)
    compute_findings(source)
    prepare(source)
    w = what_if(source, {"float64": Override("float64", rtol, atol)})
    changed = dict(source.query("SELECT observation_id, new_result FROM whatif_rows"))
    undetermined = 0
    for i, (a, r) in enumerate(pairs):
        key = hashlib.sha256(str(i).encode()).hexdigest()
        before, _ = classify(compare(a, r, RTOL, ATOL), RTOL, ATOL)
        truth, _ = classify(compare(a, r, rtol, atol), rtol, atol)
        predicted = changed.get(key, before)
        if predicted == UNDETERMINED:
            undetermined += 1
            continue
        assert predicted == truth, (i, before, truth)
    assert w.undetermined == undetermined < len(pairs) // 3
    assert w.regraded == len(pairs) and w.not_regraded == 0


def test_loosening_moves_divergences_to_passed_per_finding(tmp_path: Path) -> None:
    _write(tmp_path, _pairs())
    source = open_source(tmp_path)
    findings = compute_findings(source)
    prepare(source)
    w = what_if(source, {"float64": Override("float64", 1.0, 1.0)})
    assert w.to_passed == sum(f.observations for f in findings) > 0
    assert {c.finding_id for c in w.findings} == {f.finding_id for f in findings}
    assert all(c.would_pass == c.members for c in w.findings)
    assert w.to_divergence == 0 and w.undetermined == 0
    assert PASSED not in {c.finding_id for c in w.findings}


def test_overrides_parse_and_reject_bad_values() -> None:
    parsed = parse_whatif(["float16=1e-2"], ["float16=1e-3", "float32=0"])
    assert parsed["float16"] == Override("float16", 1e-2, 1e-3)
    assert parsed["float32"] == Override("float32", None, 0.0)
    for bad in (["float16"], ["int8=1"], ["float16=-1"], ["float16=inf"], ["float16=x"]):
        with pytest.raises(Exception, match="bad --rtol"):
            parse_whatif(bad, [])


def test_new_failures_name_each_path_as_the_table_does(tmp_path: Path) -> None:
    """OpenVINO's f32 and default-precision paths stay apart in the would-diverge list
    (they once both read 'openvino'), each named as the evaluations table names it."""
    paths = (("openvino", "f32"), ("openvino", "bf16-default"), ("onnxruntime", "all"))
    _write(tmp_path, _pairs(), paths)
    source = open_source(tmp_path)
    compute_findings(source)
    prepare(source)
    w = what_if(source, {"float64": Override("float64", 0.0, 0.0)})
    listed = {p for n in w.new_failures for p in n.paths.split(", ")}
    assert listed == {"ov:f32", "ov:bf16-default", "all"}
    table = {str(v) for (v,) in source.query(f"SELECT DISTINCT {PATH_SQL} FROM obs")}
    assert listed == table
