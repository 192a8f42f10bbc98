"""The evaluations table as SQL: filters, sorting, counting and paging, without a UI.

A filter becomes a parameterised WHERE clause (values never enter the SQL text); a page
is ``LIMIT/OFFSET`` over the filtered, sorted relation, so only the rows on screen are
ever materialised in Python, however many match.

A page takes two queries: the first sorts only the row numbers (``rn``) with their sort
keys, which DuckDB reads from Parquet cheaply (dictionary-encoded strings, no wide
columns); the second fetches the page's rows by ``rn``, a filter DuckDB pushes into the
scan. One query that carried every column through the sort took 130-270 ms on a million
rows; the two take about 20 ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import duckdb

from gero_tui.query.source import TABLE_RELATION, RunSource

# The result classes of gero_runner.schema, restated because importing the schema module
# imports pyarrow (tests hold the two in step).
RESULT_CLASSES: tuple[str, ...] = ("passed", "divergence", "contract_issue", "execution")


@dataclass(frozen=True)
class Column:
    """A column of the evaluations table."""

    key: str
    label: str
    sql: str
    """Expression over the relation that gives the shown value."""
    numeric: bool = False
    sort_sql: str = ""
    """Expression to sort on, when not ``sql`` itself."""

    @property
    def order_sql(self) -> str:
        return self.sort_sql or self.sql


COLUMNS: tuple[Column, ...] = (
    # A case name that already names its operation ("LayerNormalization.affine 2x3x24",
    # "MaskedSoftmax 3x4x10") is shown alone: the room goes to what tells cases apart.
    Column("case", "Operation / test case",
           "CASE WHEN contains(case_name, op_type) THEN case_name "
           "ELSE op_type || ' / ' || case_name END",
           sort_sql="op_type, case_name"),
    Column("input", "Input", "input_shapes"),
    # ONNX Runtime's levels alone (the common case), other runtimes' settings with a short
    # runtime name, so that rows of a multi-runtime run say which runtime they are.
    Column("optimization", "Optimization",
           "CASE WHEN optimization = '-' THEN backend WHEN backend = 'onnxruntime' "
           "THEN optimization WHEN backend = 'openvino' THEN 'ov:' || optimization "
           "ELSE backend || ':' || optimization END"),
    Column("check", "Check", '"check"'),
    Column("dtype", "Dtype", "dtype"),
    # DuckDB sorts NaN (no finite pair, or a failed path) above every number: as NULL it
    # sorts last in either direction, so "largest first" shows the largest real errors.
    # (isnan() needs open_source's connection setting, over files with float statistics.)
    Column("max_abs_error", "Max abs. error", "max_abs_error", numeric=True,
           sort_sql="CASE WHEN isnan(max_abs_error) THEN NULL ELSE max_abs_error END"),
    Column("result", "Result", "result"),
    Column("details", "Details", "reason"),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
NATURAL = "run"
"""Sort key for the order the runner wrote the rows in (the cheapest: no sort at all)."""
BY_FINDING = "finding"
"""Sort key grouping the rows by finding, worst finding first (passed rows last)."""

# Value filters: key -> (relation column, label). The picker lists the column's values.
VALUE_FILTERS: dict[str, tuple[str, str]] = {
    "operations": ("op_type", "operation"),
    "dtypes": ("dtype", "dtype"),
    "optimizations": ("optimization", "optimisation"),
    "backends": ("backend", "runtime"),
    "suites": ("suite", "suite"),
    "checks": ("check", "check"),
}
TEXT_COLUMNS = ("op_type", "case_name", "dtype", "reason")
"""What the free-text filter searches: operation, case, dtype and details."""


def _ident(name: str) -> str:
    return '"' + name + '"'


def _column(key: str) -> Column:
    for c in COLUMNS:
        if c.key == key:
            return c
    raise ValueError(f"unknown column {key!r}; columns: {', '.join(COLUMN_KEYS)}")


@dataclass(frozen=True)
class TableFilter:
    """What rows the table shows; empty sets mean no restriction."""

    classes: frozenset[str] = frozenset()
    text: str = ""
    operations: frozenset[str] = frozenset()
    dtypes: frozenset[str] = frozenset()
    optimizations: frozenset[str] = frozenset()
    backends: frozenset[str] = frozenset()
    suites: frozenset[str] = frozenset()
    checks: frozenset[str] = frozenset()
    finding: str = ""
    """A finding id: only its observations (the run's findings members table must exist)."""
    finding_title: str = ""

    def toggle_class(self, result: str) -> TableFilter:
        if result not in RESULT_CLASSES:
            raise ValueError(f"unknown result class {result!r}; classes: {RESULT_CLASSES}")
        return replace(self, classes=self.classes ^ {result})

    def with_values(self, key: str, values: frozenset[str]) -> TableFilter:
        if key not in VALUE_FILTERS:
            raise ValueError(f"unknown filter {key!r}; filters: {', '.join(VALUE_FILTERS)}")
        return replace(self, **{key: frozenset(values)})

    def values(self, key: str) -> frozenset[str]:
        result: frozenset[str] = getattr(self, key)
        return result

    @property
    def is_empty(self) -> bool:
        return self == TableFilter()

    def where(self) -> tuple[str, list[Any]]:
        """The filter as a parameterised SQL condition and its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.classes:
            # Display order, so the SQL text is the same for the same filter.
            chosen = [c for c in RESULT_CLASSES if c in self.classes]
            parts.append(f"result IN ({', '.join('?' * len(chosen))})")
            params.extend(chosen)
        for key, (column, _) in VALUE_FILTERS.items():
            values = sorted(self.values(key))
            if values:
                parts.append(f"{_ident(column)} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if self.finding:
            parts.append("observation_id IN (SELECT observation_id FROM finding_members "
                         "WHERE finding_id = ?)")
            params.append(self.finding)
        if self.text.strip():
            # A literal, case-blind substring per column: contains() needs no escaping of
            # % _ and \, and DuckDB evaluates it on Parquet's dictionaries (ILIKE with an
            # ESCAPE clause is not: 240 ms against 35 ms on a million rows).
            parts.append("(" + " OR ".join(f"contains(lower({_ident(c)}), lower(?))"
                                           for c in TEXT_COLUMNS) + ")")
            params.extend([self.text.strip()] * len(TEXT_COLUMNS))
        return (" AND ".join(parts) or "true"), params

    def describe(self) -> list[str]:
        """One short phrase per active filter, in the order the keys are listed."""
        out = []
        if self.classes:
            out.append("result: " + ", ".join(c for c in RESULT_CLASSES if c in self.classes))
        for key, (_, label) in VALUE_FILTERS.items():
            values = sorted(self.values(key))
            if values:
                shown = ", ".join(values[:3]) + (f" +{len(values) - 3}" if len(values) > 3 else "")
                out.append(f"{label}: {shown}")
        if self.text.strip():
            out.append(f"text: {self.text.strip()!r}")
        if self.finding:
            out.append(f"finding: {self.finding_title or self.finding}")
        return out


@dataclass(frozen=True)
class TableSort:
    """Sort key (a column key, or ``NATURAL`` for run order) and direction."""

    column: str = NATURAL
    descending: bool = False

    def __post_init__(self) -> None:
        if self.column not in (NATURAL, BY_FINDING):
            _column(self.column)

    def order_by(self) -> str:
        """ORDER BY over the table relation; its row number ``rn`` breaks ties."""
        if self.column == NATURAL:
            return "ORDER BY rn"
        if self.column == BY_FINDING:
            direction = "DESC" if self.descending else "ASC"
            return f"ORDER BY finding_rank {direction} NULLS LAST, rn"
        column = _column(self.column)
        direction = "DESC" if self.descending else "ASC"
        keys = ", ".join(f"{k.strip()} {direction} NULLS LAST"
                         for k in column.order_sql.split(","))
        # The row number breaks ties (run order), so paging over equal keys is stable.
        return f"ORDER BY {keys}, rn"

    def describe(self) -> str:
        if self.column == NATURAL:
            return "run order"
        if self.column == BY_FINDING:
            return "by finding" + (" ↑" if self.descending else "")
        arrow = "↓" if self.descending else "↑"
        return f"{_column(self.column).label} {arrow}"


@dataclass(frozen=True)
class Selection:
    """Selected rows: explicit ids, plus optionally every row matching a filter snapshot.

    Kept as SQL rather than a set of ids, so selecting a million matching rows costs
    nothing; ``where()`` says which rows are selected.
    """

    matching: tuple[str, tuple[Any, ...]] | None = None
    """WHERE clause and parameters of a "select all matching" (key ``a``)."""
    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()

    @property
    def is_empty(self) -> bool:
        return self.matching is None and not self.added

    def toggle(self, observation_id: str, selected: bool) -> Selection:
        """Flip one row, given whether it is selected now."""
        if selected:
            return replace(self, added=self.added - {observation_id},
                           removed=self.removed | {observation_id})
        return replace(self, added=self.added | {observation_id},
                       removed=self.removed - {observation_id})

    def where(self) -> tuple[str, list[Any]]:
        """The selection as a parameterised SQL condition and its parameters."""
        params: list[Any] = []
        clauses: list[str] = []
        if self.matching is not None:
            sql, base = self.matching
            clause = f"({sql})"
            params.extend(base)
            if self.removed:
                clause += f" AND observation_id NOT IN ({', '.join('?' * len(self.removed))})"
                params.extend(sorted(self.removed))
            clauses.append(f"({clause})")
        if self.added:
            clauses.append(f"observation_id IN ({', '.join('?' * len(self.added))})")
            params.extend(sorted(self.added))
        return (" OR ".join(clauses) or "false"), params


@dataclass(frozen=True)
class Page:
    """Rows ``offset`` to ``offset + len(rows)`` of a query, each with its id and selection."""

    offset: int
    rows: list[tuple[Any, ...]]
    """(observation_id, selected, *column values in COLUMNS order)"""
    numbers: list[int] = field(default_factory=list)
    """Each row's ``rn`` (the detail view fetches a row by it), when known."""


@dataclass
class TableQuery:
    """Counting and paging the evaluations of one source, on one cursor (one thread)."""

    source: RunSource
    cursor: duckdb.DuckDBPyConnection = field(init=False)

    def __post_init__(self) -> None:
        self.cursor = self.source.cursor()

    def interrupt(self) -> None:
        """Stop the query running on this cursor (from any thread)."""
        self.cursor.interrupt()

    def count(self, table_filter: TableFilter) -> int:
        where, params = table_filter.where()
        sql = f"SELECT count(*) FROM {TABLE_RELATION} WHERE {where}"
        row = self.cursor.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def page(self, table_filter: TableFilter, sort: TableSort, offset: int, limit: int,
             selection: Selection | None = None) -> Page:
        where, params = table_filter.where()
        relation = TABLE_RELATION
        if sort.column == BY_FINDING:
            # Deferred: only this sort needs the findings (computed once per run).
            from gero_tui.query.findings import ORDER_TABLE, compute_findings, has_members

            if not has_members(self.source):
                compute_findings(self.source)
            relation = (f"(SELECT * FROM {TABLE_RELATION} LEFT JOIN {ORDER_TABLE} "
                        "USING (observation_id))")
        numbers = [r[0] for r in self.cursor.execute(
            f"SELECT rn FROM {relation} WHERE {where} {sort.order_by()} LIMIT ? OFFSET ?",
            [*params, limit, offset]).fetchall()]
        if not numbers:
            return Page(offset, [])
        selected, selected_params = (selection or Selection()).where()
        columns = ", ".join(c.sql for c in COLUMNS)
        fetched = self.cursor.execute(
            f"SELECT rn, observation_id, coalesce({selected}, false), {columns} "
            f"FROM {TABLE_RELATION} WHERE rn IN (SELECT unnest(?::BIGINT[]))",
            [*selected_params, numbers]).fetchall()
        by_number = {row[0]: row[1:] for row in fetched}
        return Page(offset, [by_number[n] for n in numbers], numbers)

    def selected_count(self, selection: Selection) -> int:
        where, params = selection.where()
        row = self.cursor.execute(
            f"SELECT count(*) FROM {TABLE_RELATION} WHERE {where}", params).fetchone()
        return int(row[0]) if row else 0

    def selected_ids(self, selection: Selection) -> list[str]:
        """Every selected observation id (one Python string per row: mind the size)."""
        where, params = selection.where()
        rows = self.cursor.execute(
            f"SELECT observation_id FROM {TABLE_RELATION} WHERE {where} "
            "ORDER BY observation_id", params).fetchall()
        return [r[0] for r in rows]

    def distinct(self, key: str, table_filter: TableFilter | None = None) -> list[tuple[str, int]]:
        """Values of a value filter's column with their row counts (under ``table_filter``)."""
        if key not in VALUE_FILTERS:
            raise ValueError(f"unknown filter {key!r}; filters: {', '.join(VALUE_FILTERS)}")
        column = _ident(VALUE_FILTERS[key][0])
        where, params = (table_filter or TableFilter()).where()
        rows = self.cursor.execute(
            f"SELECT {column}, count(*) FROM {TABLE_RELATION} WHERE {where} "
            f"GROUP BY {column} ORDER BY {column}", params).fetchall()
        return [(str(v), int(n)) for v, n in rows if v is not None]

    def close(self) -> None:
        self.cursor.close()
