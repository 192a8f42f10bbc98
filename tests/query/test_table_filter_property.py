"""TableFilter.where, property-tested: the parameterised SQL it builds selects, in DuckDB,
exactly the rows a plain Python reading of the filter selects, with and without the known
distinct values of the text columns (the two ways TableQuery runs the free text), for
values full of what SQL treats specially (% _ \\ ' ")."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gero.query.table import TEXT_COLUMNS, TableFilter
from gero_runner.result_classes import RESULT_CLASSES

# Value filters whose SQL is the column itself (the computed ones need whole runs).
PLAIN = {"operations": "op_type", "backends": "backend", "checks": "check",
         "inputs": "input_shapes", "reasons": "reason"}
COLUMNS = (*TEXT_COLUMNS, "observation_id")

text = st.text(alphabet="aAbB1%_\\'\" .-", max_size=6)
row = st.fixed_dictionaries({
    **{c: text for c in TEXT_COLUMNS if c != "result"},
    "result": st.sampled_from(RESULT_CLASSES),
})


@st.composite
def filters(draw: st.DrawFn, rows: list[dict[str, str]]) -> TableFilter:
    seen = {c: sorted({r[c] for r in rows}) or [""] for c in TEXT_COLUMNS}
    f = TableFilter(classes=frozenset(draw(st.sets(st.sampled_from(RESULT_CLASSES)))),
                    text=draw(st.text(alphabet="aAbB1%_\\'\" .-", max_size=8)))
    for key, column in PLAIN.items():
        # Values that occur and values that do not.
        values = draw(st.sets(st.sampled_from(seen[column]) | text, max_size=3))
        f = f.with_values(key, frozenset(values))
    return f


def expected(f: TableFilter, r: dict[str, str]) -> bool:
    if f.classes and r["result"] not in f.classes:
        return False
    for key, column in PLAIN.items():
        if f.values(key) and r[column] not in f.values(key):
            return False
    return all(any(word in r[c].lower() for c in TEXT_COLUMNS)
               for word in f.text.lower().split())


def selected(rows: list[dict[str, str]], f: TableFilter,
             text_values: dict[str, Any] | None) -> set[str]:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f'"{c}" VARCHAR' for c in COLUMNS) + ")")
    if rows:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(COLUMNS))})",
                        [[r[c] for c in COLUMNS] for r in rows])
    where, params = f.where(text_values)
    return {i for (i,) in con.execute(f"SELECT observation_id FROM t WHERE {where}",
                                      params).fetchall()}


@settings(max_examples=150, deadline=None)
@given(st.lists(row, max_size=8).flatmap(
    lambda rows: st.tuples(st.just(rows), filters(rows))))
@pytest.mark.slow
def test_where_selects_what_the_filter_says(case: tuple[list[dict[str, str]], TableFilter]
                                            ) -> None:
    rows, f = case
    rows = [{**r, "observation_id": str(i)} for i, r in enumerate(rows)]
    want = {r["observation_id"] for r in rows if expected(f, r)}
    assert selected(rows, f, None) == want
    known = {c: sorted({r[c] for r in rows}) for c in TEXT_COLUMNS}
    assert selected(rows, f, known) == want
