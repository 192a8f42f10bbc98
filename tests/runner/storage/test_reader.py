"""The one run opener: the same ``obs`` for the CLI, the explorer and scripts; NaN seen over
float statistics; older files without newer columns; a small library front (``Results``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.source import open_source
from gero_runner.errors import StoreError
from gero_runner.schema import OBSERVATION_SCHEMA, SIGHTING_SCHEMA
from gero_runner.storage.reader import Results, open_run

FIRST, SECOND = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb"


def _rows(start: int, count: int) -> list[dict[str, Any]]:
    return [{"observation_id": f"aa{i:04d}", "op_type": "Erf", "check": "agreement",
             "max_abs_error": math.nan if i % 3 == 0 else i * 1e-6,
             "result": "execution" if i % 3 == 0 else "passed", "details": "{}"}
            for i in range(start, start + count)]


def _write_run(root: Path, run_id: str, rows: list[dict[str, Any]], sighted: list[str],
               schema: pa.Schema = OBSERVATION_SCHEMA) -> None:
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    full = [{f.name: r.get(f.name) for f in schema} for r in rows]
    # pyarrow's default writer: float min/max statistics, which leave NaN out.
    pq.write_table(pa.Table.from_pylist(full, schema=schema), directory / "observations.parquet",
                   row_group_size=8)
    pq.write_table(pa.Table.from_pylist(
        [{"run_id": run_id, "observation_id": i, "actual_median_ms": 1.0,
          "reference_median_ms": 2.0, "seen_at": None} for i in sighted],
        schema=SIGHTING_SCHEMA), directory / "sightings.parquet")
    (directory / "run.json").write_text(
        f'{{"run_id": "{run_id}", "status": "complete", "observation_count": {len(sighted)}}}')


@pytest.fixture
def root(tmp_path: Path) -> Path:
    # The first run's file predates the `details` column; the second run saw 20 of its rows.
    old, new = _rows(0, 40), _rows(40, 40)
    older = pa.schema([f for f in OBSERVATION_SCHEMA if f.name != "details"])
    _write_run(tmp_path, FIRST, old, [r["observation_id"] for r in old], older)
    _write_run(tmp_path, SECOND, new,
               [r["observation_id"] for r in new + old[:20]])
    return tmp_path


@pytest.mark.parametrize("run", [FIRST, SECOND])
def test_cli_and_explorer_read_the_same_rows_and_see_nan(root: Path, run: str) -> None:
    # Before, the CLI's opener left the NaN optimisation on (isnan() found nothing over
    # float statistics) and, without union_by_name, failed on a file lacking a column.
    with open_run(root, run) as cli:
        ids = sorted(r[0] for r in cli.query("SELECT observation_id FROM obs"))
        # The export report's ordering uses this expression (CASE WHEN isnan(...)).
        nan = cli.query("SELECT sum(CASE WHEN isnan(max_abs_error) THEN 1 ELSE 0 END) "
                        "FROM obs")[0][0]
        assert cli.direct is (run == FIRST)
    expected = 40 if run == FIRST else 60
    assert len(ids) == expected
    assert nan == sum(1 for i in ids if int(i[2:]) % 3 == 0) > 0
    with open_source(root, run) as explorer:
        assert sorted(r[0] for r in explorer.query("SELECT observation_id FROM obs")) == ids


def test_results_is_a_small_library_front(root: Path) -> None:
    results = Results(root)
    assert [r.run_id for r in results.runs()] == [SECOND, FIRST]
    assert results.resolve("20260102") == SECOND and results.resolve() == SECOND
    assert results.record(FIRST)["observation_count"] == 40
    with results.open_run(FIRST[:10]) as run:
        assert run.run_id == FIRST
        table = run.arrow()
        assert table.num_rows == 40 and "max_abs_error" in table.column_names
        failed = run.relation().filter("result = 'execution'").aggregate("count(*)").fetchall()
        assert failed == [(14,)]
    assert results.observation("aa0041")["observation_id"] == "aa0041"
    with pytest.raises(StoreError, match="no run matches"):
        results.open_run("1999")
