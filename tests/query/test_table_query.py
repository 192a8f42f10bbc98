"""The evaluations table's SQL: filters, sort, selection and paging against direct queries."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query import source, table
from gero.query.source import open_source
from gero.query.table import Selection, TableFilter, TableQuery, TableSort
from gero_runner import schema
from gero_runner.storage.reader import open_run

ROWS = [
    {"observation_id": f"id{i:02d}", "suite": "synthetic", "op_type": op, "case_name": name,
     "check": "agreement", "dtype": dtype, "input_shapes": "[2]", "backend": "onnxruntime",
     "optimization": "all", "max_abs_error": err, "result": result, "reason": reason}
    for i, (op, name, dtype, err, result, reason) in enumerate([
        ("Abs", "Abs 2", "float32", 0.0, "passed", "bit-exact"),
        ("Exp", "Exp 2", "float16", 1e-3, "divergence", "50% of rows outside"),
        ("Exp", "Exp_big", "float32", float("nan"), "execution", "failed: 100%_done"),
        ("Log", "Log 2", "float64", None, "contract_issue", "row sum \\ off"),
    ])
]


@pytest.fixture
def query(tmp_path: Path) -> TableQuery:
    run = tmp_path / "runs" / "20260101-000000-aaaaaa"
    run.mkdir(parents=True)
    full = [{**r, **{c: None for c in schema.COLUMN_NAMES if c not in r}} for r in ROWS]
    pq.write_table(pa.Table.from_pylist(full, schema=schema.OBSERVATION_SCHEMA),
                   run / "observations.parquet")
    (run / "run.json").write_text("{}")
    return TableQuery(open_source(tmp_path))


def ids(page: table.Page) -> list[str]:
    return [r.observation_id for r in page.rows]


def test_constants_match_the_runner(tmp_path: Path) -> None:
    assert table.RESULT_CLASSES == schema.RESULT_CLASSES
    assert set(source.TABLE_COLUMNS) <= set(schema.COLUMN_NAMES)
    # A run without observation files still has every column, typed as the schema says.
    (tmp_path / "runs" / "20260101-000000-aaaaaa").mkdir(parents=True)
    (tmp_path / "runs" / "20260101-000000-aaaaaa" / "run.json").write_text("{}")
    con = duckdb.connect()
    con.register("empty", pa.Table.from_pylist([], schema=schema.OBSERVATION_SCHEMA))
    expected = con.execute("DESCRIBE SELECT * FROM empty").fetchall()
    with open_run(tmp_path) as run:
        assert run.query("DESCRIBE obs") == expected
        assert run.query("SELECT count(*) FROM obs") == [(0,)]


@pytest.mark.parametrize(("table_filter", "expected"), [
    (TableFilter(), ["id00", "id01", "id02", "id03"]),
    (TableFilter(classes=frozenset({"divergence", "execution"})), ["id01", "id02"]),
    (TableFilter(operations=frozenset({"Exp"}), dtypes=frozenset({"float32"})), ["id02"]),
    (TableFilter(text="EXP"), ["id01", "id02"]),
    (TableFilter(text="50%"), ["id01"]),          # % is literal, not a wildcard
    (TableFilter(text="p_b"), ["id02"]),          # so is _
    (TableFilter(text="\\"), ["id03"]),
    (TableFilter(text="'; DROP TABLE obs; --"), []),
    (TableFilter(classes=frozenset({"passed"}), text="exp"), []),
])
def test_filters(query: TableQuery, table_filter: TableFilter, expected: list[str]) -> None:
    assert ids(query.page(table_filter, TableSort(), 0, 100)) == expected
    assert query.count(table_filter) == len(expected)


def test_sort_and_paging(query: TableQuery) -> None:
    by_error = TableSort("max_abs_error", descending=True)
    # No error (NaN: a failed path; NULL) goes last either way, in run order.
    assert ids(query.page(TableFilter(), by_error, 0, 10)) == ["id01", "id00", "id02", "id03"]
    assert ids(query.page(TableFilter(), by_error, 1, 2)) == ["id00", "id02"]
    assert ids(query.page(TableFilter(), TableSort("max_abs_error"), 0, 10)) == [
        "id00", "id01", "id02", "id03"]
    assert ids(query.page(TableFilter(), TableSort("case"), 0, 10)) == [
        "id00", "id01", "id02", "id03"]
    with pytest.raises(ValueError, match="unknown column 'nope'"):
        TableSort("nope")


def test_selection(query: TableQuery) -> None:
    chosen = Selection().toggle("id00", selected=False).toggle("id03", selected=False)
    assert query.selected_ids(chosen) == ["id00", "id03"]
    everything_exp = Selection.matching(*TableFilter(operations=frozenset({"Exp"})).where())
    assert query.selected_ids(everything_exp.toggle("id02", selected=True)) == ["id01"]
    assert query.selected_count(Selection()) == 0
    page = query.page(TableFilter(), TableSort(), 0, 10, chosen)
    assert [r.selected for r in page.rows] == [True, False, False, True]


def test_selection_steps_the_newest_decides(query: TableQuery) -> None:
    exp = TableFilter(operations=frozenset({"Exp"})).where()
    # A row picked, then every Exp row, then one Exp row dropped, then the Exp rows again.
    steps = Selection().toggle("id00", selected=False)
    steps = steps.toggle_rows(*exp, selected=False)
    assert query.selected_ids(steps) == ["id00", "id01", "id02"]
    steps = steps.toggle("id01", selected=True)
    assert query.selected_ids(steps) == ["id00", "id02"]
    again = steps.toggle_rows(*exp, selected=False)
    assert query.selected_ids(again) == ["id00", "id01", "id02"]
    # Dropping the Exp rows leaves the row picked before them.
    dropped = again.toggle_rows(*exp, selected=True)
    assert query.selected_ids(dropped) == ["id00"]
    assert not dropped.is_empty
    # Unpicking it empties the selection; rows dropped from nothing are no selection.
    assert dropped.toggle("id00", selected=True).is_empty
    assert query.selected_ids(dropped.toggle("id00", selected=True)) == []
    # Picking a group and dropping it again leaves nothing behind.
    assert Selection().toggle_rows(*exp, selected=False).toggle_rows(
        *exp, selected=True) == Selection()


def test_distinct_values_and_describe(query: TableQuery) -> None:
    assert query.distinct("operations") == [("Abs", 1), ("Exp", 2), ("Log", 1)]
    f = TableFilter(classes=frozenset({"execution"}), text="x").with_values(
        "dtypes", frozenset({"float16"}))
    assert f.describe() == ["result: execution", "dtype: float16", "text: “x”"]
    with pytest.raises(ValueError, match="unknown filter"):
        query.distinct("colour")


def test_a_new_column_reaches_the_rows_and_the_widget_by_its_key(
        query: TableQuery, monkeypatch: pytest.MonkeyPatch) -> None:
    """A column costs its entry in COLUMNS: the page's rows hold it by key, grouped or not,
    and the table widget lays it out at its header's width (no width table to extend)."""
    from gero_tui.app.widgets import evaluations_table as widget

    added = table.Column("suite", "Suite", "suite")
    columns = (*table.COLUMNS[:3], added, *table.COLUMNS[3:])
    monkeypatch.setattr(table, "COLUMNS", columns)
    monkeypatch.setattr(widget, "COLUMNS", columns)
    for page in (query.page(TableFilter(), TableSort(), 0, 10),
                 query.page(TableFilter(), TableSort("case"), 0, 10)):
        assert page.columns[3] == "suite" and len(page.rows) == len(ROWS)
        assert {r.cells["suite"] for r in page.rows} == {"synthetic"}
        assert all(list(r.cells) == list(page.columns) for r in page.rows)
    grouped = query.group(TableFilter(), table.GROUPINGS["levels"], "g_new_column")
    page = query.page(TableFilter(), TableSort(), 0, 10, groups=grouped)
    assert {r.cells["suite"] for r in page.rows} == {"synthetic"}
    for width in (80, 120, 200):
        shown = dict(widget.layout(width))
        assert sum(shown.values()) + len(shown) + 1 <= width
    assert dict(widget.layout(200))[3] == widget.DEFAULT_MIN_WIDTH  # "Suite": its header is shorter
