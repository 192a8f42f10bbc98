"""The detail view reads its row by the table's row number (``rn``): the same row as by id,
with the run's own timings, in one file and across runs; a wrong number falls back to the id."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_table_nan_errors import _root

from gero.query.detail import fetch_observation
from gero.query.source import open_source
from gero.query.table import TableFilter, TableQuery, TableSort
from gero_runner.errors import GeroError


@pytest.mark.parametrize("two_runs", [False, True], ids=["one-file", "across-runs"])
def test_row_number_fetch_matches_id_fetch(tmp_path: Path, two_runs: bool) -> None:
    root, sighted = _root(tmp_path, runner_writer=True, two_runs=two_runs, nulls=False)
    source = open_source(root)
    page = TableQuery(source).page(TableFilter(), TableSort("case", True), 0, 100)
    assert len(page.numbers) == len(page.rows) == len(sighted)
    for row, number in zip(page.rows, page.numbers, strict=True):
        oid = row.observation_id
        by_number = fetch_observation(source.cursor(), oid, number)
        # repr: NaN errors (failed paths) compare unequal to themselves
        assert repr(by_number) == repr(fetch_observation(source.cursor(), oid))
        if two_runs:  # the sighting run's timings, not those the first run stored
            assert by_number["actual_median_ms"] == 1.0


def test_wrong_row_number_falls_back_to_the_id(tmp_path: Path) -> None:
    root, sighted = _root(tmp_path, runner_writer=True, two_runs=False, nulls=False)
    source = open_source(root)
    oid = sighted[5]["observation_id"]
    for number in (0, 10**9, -1):
        assert fetch_observation(source.cursor(), oid, number).observation_id == oid
    with pytest.raises(GeroError, match="no observation"):
        fetch_observation(source.cursor(), "missing", 0)
