"""--where filters: allowed expressions compile to parameterised SQL; everything else fails."""

from __future__ import annotations

import duckdb
import pytest

from gero.query.filters import parse_filter
from gero_runner.errors import GeroError


@pytest.mark.parametrize("text,sql,params", [
    ("result = 'passed'", '("result" = ?)', ("passed",)),
    ("result <> 'passed' AND max_abs_error > 1e-6",
     '(("result" <> ?) AND ("max_abs_error" > ?))', ("passed", 1e-6)),
    ("op_type IN ('Exp', 'Softmax') OR NOT bit_exact",
     '(("op_type" IN (?, ?)) OR (NOT "bit_exact"))', ("Exp", "Softmax")),
    ('"check" LIKE \'contract:%\'', '("check" LIKE ?)', ("contract:%",)),
    ("check NOT ILIKE 'VARIANT%'", '("check" NOT ILIKE ?)', ("VARIANT%",)),
    ("max_ulp BETWEEN -1 AND 4", '("max_ulp" BETWEEN ? AND ?)', (-1, 4)),
    ("reason IS NOT NULL", '("reason" IS NOT NULL)', ()),
    ("case_name = 'it''s'", '("case_name" = ?)', ("it's",)),
    ("", "TRUE", ()),
])
def test_allowed_expressions(text: str, sql: str, params: tuple[object, ...]) -> None:
    flt = parse_filter(text)
    assert (flt.sql, flt.params) == (sql, params)


@pytest.mark.parametrize("text,needle", [
    ("1=1; DROP TABLE obs", "unexpected character ';'"),
    ("result = 'x'; COPY obs TO '/tmp/x.csv'", "unexpected character ';'"),
    ("read_csv('/etc/passwd')", "function calls are not allowed"),
    ("result = read_text('/etc/passwd')", "function calls are not allowed"),
    ("case_id IN (SELECT case_id FROM obs)", "expected a column or a literal"),
    ("EXISTS (SELECT 1)", "function calls are not allowed"),
    ("result = 'a' -- comment", "unexpected '-'"),
    ("result = 'a' /* c */", "unexpected character '/'"),
    ("ATTACH '/tmp/x.db'", "unknown column 'ATTACH'"),
    ("nosuchcolumn = 1", "unknown column 'nosuchcolumn'"),
    ("result = 'unterminated", "unexpected character"),
    ("result = $1", "unexpected character '$'"),
    ("(result = 'a'", "expected ')'"),
    ("result = 'a' AND", "expected a column or a literal"),
    ("result::INT = 1", "unexpected character ':'"),
    ("\"obs\".\"result\" = 'a'", "unexpected character '.'"),
])
def test_injection_attempts_are_rejected(text: str, needle: str) -> None:
    with pytest.raises(GeroError) as info:
        parse_filter(text)
    assert needle in str(info.value)
    assert "allowed:" in str(info.value)


def test_parameters_never_reach_the_sql_text() -> None:
    flt = parse_filter("reason = '''; DROP TABLE obs; --'")
    assert "DROP" not in flt.sql
    con = duckdb.connect()
    con.execute("CREATE TABLE obs (reason VARCHAR)")
    con.execute("INSERT INTO obs VALUES ('''; DROP TABLE obs; --'), ('x')")
    rows = con.execute(f"SELECT count(*) FROM obs WHERE {flt.sql}", list(flt.params)).fetchall()
    assert rows == [(1,)]  # matched as plain text: the row holding that very string
    assert con.execute("SELECT count(*) FROM obs").fetchall() == [(2,)]


@pytest.mark.parametrize("text,needle", [
    ("seed = 'abc'", "seed is a number column and 'abc' is not a number"),
    ("result > 5", "result is a text column and 5 is not a text"),
    ("created_at > 'yesterday'", "created_at is a timestamp column and 'yesterday' is not"),
    ("seed BETWEEN 1 AND 'x'", "seed is a number column and 'x' is not a number"),
    ("max_abs_error IN (1, 'big')", "max_abs_error is a number column and 'big'"),
    ("seed LIKE '1%'", "seed is a number column; LIKE matches text columns only"),
    ("bit_exact = 3", "bit_exact is a boolean column and 3 is not a boolean"),
    ("op_type", "op_type alone is not a condition"),
    ("(" * 250 + "seed = 1" + ")" * 250, "nested more than 50 levels deep"),
    ("NOT " * 250 + "bit_exact", "nested more than 50 levels deep"),
])
def test_type_errors_name_the_column_and_its_type(text: str, needle: str) -> None:
    with pytest.raises(GeroError, match=None) as caught:
        parse_filter(text)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)  # one sentence


@pytest.mark.parametrize("text", ["seed = '7'", "created_at > '2025-01-31'",
                                  "max_abs_error BETWEEN 0 AND '1e-3'", "bit_exact"])
def test_literals_that_convert_are_accepted_and_run(text: str) -> None:
    flt = parse_filter(text)
    con = duckdb.connect()
    con.execute("CREATE TABLE obs (seed BIGINT, created_at TIMESTAMPTZ, max_abs_error DOUBLE, "
                "bit_exact BOOLEAN)")
    # Each filter holds for the first row alone: a literal converted wrongly (or not at all)
    # matches neither row, or both.
    con.execute("INSERT INTO obs VALUES (7, '2025-02-15 00:00:00+00', 5e-4, true), "
                "(8, '2025-01-01 00:00:00+00', 5e-3, false)")
    rows = con.execute(f"SELECT seed FROM obs WHERE {flt.sql}", list(flt.params)).fetchall()
    assert rows == [(7,)]
