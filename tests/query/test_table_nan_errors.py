"""Rows without an error (NaN from a failed path, or NULL) sort last either way, and the
table's filters see every one of them, whether the Parquet file has float statistics
(old files, pyarrow's default) or not (the runner's writer), in one file or across runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.source import open_source
from gero.query.table import TableFilter, TableQuery, TableSort
from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import atomic_write_table, rows_to_table

ROW_GROUP = 8


def _rows(run_id: str, start: int, count: int, nulls: bool) -> list[dict[str, Any]]:
    """Every third row a failed path (NaN), every seventh (``nulls``) no error at all."""
    rows = []
    for i in range(start, start + count):
        failed, missing = i % 3 == 0, nulls and i % 7 == 0 and i % 3 != 0
        error = math.nan if failed else None if missing else i * 1e-6
        rows.append({"observation_id": f"obs{i:04d}", "run_id": run_id, "op_type": "Erf",
                     "case_name": f"Erf {i}", "dtype": "float32", "optimization": "all",
                     "check": "agreement", "suite": "synthetic", "backend": "onnxruntime",
                     "input_shapes": "[4]", "max_abs_error": error,
                     "result": "execution" if failed else "passed",
                     "reason": "ort-all failed" if failed else "within tolerance"})
    return rows


def _write(path: Path, rows: list[dict[str, Any]], runner_writer: bool) -> None:
    table = rows_to_table(rows)
    if runner_writer:
        atomic_write_table(path, table)
    else:
        # pyarrow's default: min/max statistics on float columns, which leave NaN out.
        pq.write_table(table, path, row_group_size=ROW_GROUP)


def _sightings(path: Path, run_id: str, rows: list[dict[str, Any]]) -> None:
    pq.write_table(pa.Table.from_pylist(
        [{"run_id": run_id, "observation_id": r["observation_id"], "actual_median_ms": 1.0,
          "reference_median_ms": 2.0, "seen_at": None} for r in rows], schema=SIGHTING_SCHEMA),
        path)


def _root(tmp_path: Path, runner_writer: bool, two_runs: bool, nulls: bool
          ) -> tuple[Path, list[dict[str, Any]]]:
    first, second = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb"
    old, new = _rows(first, 0, 40, nulls), _rows(second, 40, 40, nulls)
    for run_id, rows in ((first, old), (second, new)):
        directory = tmp_path / "runs" / run_id
        directory.mkdir(parents=True)
        _write(directory / "observations.parquet", rows, runner_writer)
        (directory / "run.json").write_text("{}")
    sighted = new + old[:20] if two_runs else new
    _sightings(tmp_path / "runs" / second / "sightings.parquet", second, sighted)
    return tmp_path, sighted


@pytest.mark.parametrize("runner_writer", [True, False], ids=["runner-writer", "statistics"])
@pytest.mark.parametrize("two_runs", [False, True], ids=["one-file", "across-runs"])
@pytest.mark.parametrize("nulls", [False, True], ids=["nan", "nan-and-null"])
def test_no_error_sorts_last_and_filters_see_nan(tmp_path: Path, runner_writer: bool,
                                                   two_runs: bool, nulls: bool) -> None:
    # Over statistics without NULLs, DuckDB folded isnan() to false unless told not to.
    root, sighted = _root(tmp_path, runner_writer, two_runs, nulls)
    source = open_source(root)
    assert source.direct is not two_runs
    query = TableQuery(source)
    real = sorted((r for r in sighted if isinstance(r["max_abs_error"], float)
                   and not math.isnan(r["max_abs_error"])), key=lambda r: r["max_abs_error"])
    no_error = {r["observation_id"] for r in sighted} - {r["observation_id"] for r in real}
    for descending in (True, False):
        page = query.page(TableFilter(), TableSort("max_abs_error", descending), 0, 1000)
        shown = [row.observation_id for row in page.rows]
        expected = [r["observation_id"] for r in (reversed(real) if descending else real)]
        assert shown[:len(real)] == expected
        assert set(shown[len(real):]) == no_error
    # A page boundary inside the real errors: the largest first, then the next page.
    largest = TableSort("max_abs_error", descending=True)
    assert [r.observation_id for r in query.page(TableFilter(), largest, 5, 3).rows] == [
        r["observation_id"] for r in list(reversed(real))[5:8]]
    failed = [r for r in sighted if r["result"] == "execution"]
    only_failed = TableFilter(classes=frozenset({"execution"}))
    assert query.count(only_failed) == len(failed)
    failed_rows = query.page(only_failed, largest, 0, 1000).rows
    assert {r.observation_id for r in failed_rows} == {r["observation_id"] for r in failed}
    assert all(r.cells["max_abs_error"] is not None and math.isnan(r.cells["max_abs_error"])
               for r in failed_rows)
    if runner_writer:
        # Without float statistics DuckDB's isnan() filter sees every NaN.
        nan_rows = source.query("SELECT count(*) FROM obs WHERE isnan(max_abs_error)")
        assert nan_rows[0][0] == len(failed)
    query.close()
    source.close()
