"""The evaluations table says who is wrong (Blamed), which runtime (Runtime), the path
(Path), and the input dtype of a case whose output dtype differs (TopK's int64 indices)."""

from __future__ import annotations

from pathlib import Path

from conftest import fixture_rows, write_run

from gero.query.source import open_source
from gero.query.table import COLUMNS, TableFilter, TableQuery, TableSort


def test_the_blamed_column_names_the_wrong_side_and_filters(data_root: Path) -> None:
    """float64 sides with ORT at `extended` (the reference is blamed), with the reference at
    `all` (ORT's level is blamed); a failed ORT level blames itself; passed rows nothing."""
    query = TableQuery(open_source(data_root))
    rows = [r.cells for r in query.page(TableFilter(), TableSort(), 0, 1000).rows]
    blamed = {(r["optimization"], r["result"], r["blamed"]) for r in rows}
    assert ("extended", "divergence", "reference") in blamed
    assert ("all", "divergence", "all") in blamed
    assert ("all", "execution", "all") in blamed
    assert all(r["blamed"] is None for r in rows if r["result"] == "passed")
    only_reference = TableFilter(blamed=frozenset({"reference"}))
    shown = query.page(only_reference, TableSort(), 0, 1000).rows
    assert shown and all(r.cells["blamed"] == "reference" for r in shown)
    assert query.count(only_reference) == sum(r["blamed"] == "reference" for r in rows)


def test_the_dtype_column_names_the_input_dtype_where_the_output_differs(
        tmp_path: Path) -> None:
    rows = fixture_rows()[:3]
    for n, row in enumerate(rows):
        row.update(op_type="TopK", case_id=f"synthetic/TopK/4x10/{DTYPES[n]}",
                   dtype="int64", output_name="Indices")
    write_run(tmp_path, "20260101-120000-abcdef", rows)
    query = TableQuery(open_source(tmp_path))
    shown = sorted(r.cells["dtype"] for r in query.page(TableFilter(), TableSort(), 0, 10).rows)
    assert shown == ["float16→int64", "float32→int64", "float64→int64"]
    picked = TableFilter(dtypes=frozenset({"float32→int64"}))
    assert query.count(picked) == 1


DTYPES = ("float16", "float32", "float64")


def test_the_path_and_runtime_columns() -> None:
    labels = {c.key: c.label for c in COLUMNS}
    assert labels["optimization"] == "Path" and labels["runtime"] == "Runtime"
    assert "arbiter" not in labels, "the Blamed column says who is wrong instead"
