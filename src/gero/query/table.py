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

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import duckdb

from gero.query.source import TABLE_RELATION, RunSource
from gero_runner.backends import (
    REFERENCE,
    RUNTIMES,
    ort_levels,
    path_label,
    path_label_sql,
    path_name_sql,
    short_name,
)
from gero_runner.backends.names import NOT_APPLICABLE
from gero_runner.facts import FAILED_PATH
from gero_runner.result_classes import ARBITRATED_CHECKS, SEVERITY, severity_sql
from gero_runner.result_classes import RESULT_CLASSES as RESULT_CLASSES  # for the app


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


LEVEL_NAMES = ort_levels()
PATH_SQL = path_label_sql()
"""The path under test as every view names it (``gero_runner.backends.path_label``)."""
OPTIMIZATION_ORDER_SQL = ("CASE optimization " + " ".join(
    f"WHEN '{level}' THEN {n}" for n, level in enumerate(LEVEL_NAMES))
    + f" ELSE {len(LEVEL_NAMES)} END, backend")


def natural_key(value: str) -> tuple[int, str]:
    """Sort key that puts optimisation levels in their order, the reference path after."""
    return (LEVEL_NAMES.index(value), "") if value in LEVEL_NAMES else (len(LEVEL_NAMES), value)


_REFERENCE_PATH = "regexp_replace(reference, '-corrected$', '')"
_REFERENCE_LABEL = path_label_sql(f"split_part({_REFERENCE_PATH}, ':', 1)",
                                  f"coalesce(nullif(split_part({_REFERENCE_PATH}, ':', 2), ''), "
                                  f"'{NOT_APPLICABLE}')")
_ARBITRATED = "(" + ", ".join(f"'{c}'" for c in ARBITRATED_CHECKS) + ")"
BLAMED_SQL = (
    "CASE WHEN result = 'passed' THEN NULL "
    # float64 sides with the actual side: the reference is off
    f"WHEN \"check\" IN {_ARBITRATED} AND arbiter = 'actual' THEN {_REFERENCE_LABEL} "
    # a failure the message puts on the other side (the reference failed)
    # (a row of a gero before the facts, schema 3: the path its reason names)
    f"WHEN result = 'execution' AND coalesce(failed_path, regexp_extract(reason, "
    f"'{FAILED_PATH}', 1)) NOT IN "
    f"('', {path_name_sql()}, backend || '-' || optimization) THEN {_REFERENCE_LABEL} "
    f"WHEN \"check\" IN {_ARBITRATED} AND arbiter IN ('tie', '-') "
    "AND result <> 'execution' THEN 'undecided' "
    f"ELSE {PATH_SQL} END")
"""The path a row blames, by the findings' row rule (``findings.members_sql``: its own, or
for a comparison the side float64 does not side with, or a failed reference), named as the
Path column names paths; 'undecided' where no float64 value sides with either (the
findings then decide per case); NULL for a passed row (shown "-")."""
RUNTIME_SHORT = {name: short_name(name) for name in (*RUNTIMES, REFERENCE)}
"""The Runtime column's short forms (ort, ov, tract, ref)."""
INPUT_DTYPE_SQL = "split_part(case_id, '/', -1)"
DTYPE_SQL = (f"CASE WHEN {INPUT_DTYPE_SQL} IN ('float16', 'bfloat16', 'float32', 'float64', "
             f"'int8', 'uint8', 'int32', 'int64') AND {INPUT_DTYPE_SQL} <> dtype "
             f"THEN {INPUT_DTYPE_SQL} || '→' || dtype ELSE dtype END")
"""The output's dtype, after the case's input dtype where they differ (TopK's and ArgMax's
int64 indices of float16, float32 and float64 inputs are three cases)."""

# A case name that already names its operation ("LayerNormalization.affine 2x3x24",
# "MaskedSoftmax 3x4x10") is shown alone: the room goes to what tells cases apart.
CASE_SQL = ("CASE WHEN contains(case_name, op_type) THEN case_name "
            "ELSE op_type || ' / ' || case_name END")
RELEASES_CHECK = "releases"
"""The releases check's name (``gero_runner.checks.releases.RELEASES``)."""
RELEASE_SQL = (f"CASE WHEN \"check\" = '{RELEASES_CHECK}' "
               "AND coalesce(reference_version, '') <> '' "
               "THEN backend_version || ' vs ' || reference_version ELSE backend_version END")
"""The release of a row's runtime ("1.20.1"); for a ``releases`` row, the reference release
it was compared with after it ("1.32.0 vs 1.20.1"): issue 42's changelog rows."""
HAS_RELEASES_SQL = (f"bool_or(\"check\" = '{RELEASES_CHECK}' OR contains(backend, '=='))")
"""Whether a run names a runtime's release (``RUNTIME==VERSION``): only then does the
explorer show the Release column (a run of one release per runtime needs none)."""
COLUMNS: tuple[Column, ...] = (
    Column("case", "Operation / test case", CASE_SQL, sort_sql="op_type, case_name"),
    Column("input", "Input", "input_shapes"),
    Column("runtime", "Runtime", "backend"),
    Column("release", "Release", RELEASE_SQL),
    # ONNX Runtime's levels alone (the common case), other runtimes' settings with a short
    # runtime name, so that rows of a multi-runtime run say which runtime they are.
    Column("optimization", "Path", PATH_SQL, sort_sql=OPTIMIZATION_ORDER_SQL),
    Column("check", "Check", '"check"'),
    Column("dtype", "Dtype", DTYPE_SQL, sort_sql="dtype, case_id"),
    # DuckDB sorts NaN (no finite pair, or a failed path) above every number: as NULL it
    # sorts last in either direction, so "largest first" shows the largest real errors.
    # (isnan() needs open_source's connection setting, over files with float statistics.)
    Column("max_abs_error", "Max abs. error", "max_abs_error", numeric=True,
           sort_sql="CASE WHEN isnan(max_abs_error) THEN NULL ELSE max_abs_error END"),
    Column("result", "Result", "result"),
    # Who is wrong: the path the row blames (the arbiter, the side float64 sides with,
    # read "reference" where the path under test was the one off).
    Column("blamed", "Blamed", BLAMED_SQL),
    Column("details", "Details", "reason"),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
WIDTH_COLUMNS = ("case", "input", "release", "optimization", "check", "dtype", "blamed")
"""The columns whose width the explorer takes from the run's values (``TableQuery.content``):
the names that tell rows apart. The others' values are short and known."""


@dataclass(frozen=True)
class ColumnContent:
    """What the explorer sizes and cuts its columns by (``TableQuery.content``)."""

    widths: dict[str, int]
    """The longest value of each of ``WIDTH_COLUMNS`` in the run, in characters ("release":
    0 for a run that names no runtime's release)."""
    values: dict[str, list[str]]
    """Every value (or a superset) of the few-valued columns (paths, checks, blamed): where
    one must be cut, it is cut so that no two of them read the same."""
NATURAL = "run"
"""Sort key for the order the runner wrote the rows in (the cheapest: no sort at all)."""
BY_FINDING = "finding"
"""Sort key grouping the rows by finding, worst finding first (passed rows last)."""
FINDING_MEMBERS = "finding_members"
"""The findings' members table (``gero.query.findings.MEMBERS_TABLE``, not imported
here: this module loads before the first paint)."""

# Value filters: key -> (SQL expression over the relation, label). The picker lists the
# expression's values: the optimisation filter lists what the table shows ("reference").
VALUE_FILTERS: dict[str, tuple[str, str]] = {
    "operations": ('"op_type"', "operation"),
    "dtypes": (f"({DTYPE_SQL})", "dtype"),
    "optimizations": (f"({PATH_SQL})", "optimisation"),
    "backends": ('"backend"', "runtime"),
    "releases": (f"({RELEASE_SQL})", "release"),
    "suites": ('"suite"', "suite"),
    "checks": ('"check"', "check"),
    "arbiters": ("coalesce(arbiter, '-')", "arbiter"),
    "blamed": (f"({BLAMED_SQL})", "blamed"),
    # No picker key: reached from the frequency view (``F``, then ``enter`` on a value).
    "cases": (f"({CASE_SQL})", "case"),
    "inputs": ('"input_shapes"', "input"),
    "reasons": ('"reason"', "details"),
}
COLUMN_FILTERS: dict[str, str] = {"case": "cases", "input": "inputs",
                                  "optimization": "optimizations", "check": "checks",
                                  "dtype": "dtypes", "blamed": "blamed", "details": "reasons",
                                  "runtime": "backends", "release": "releases",
                                  "result": "classes"}
"""The filter ``enter`` in a column's frequency view sets (``classes``: the result keys)."""
DECADE_SQL = ("CASE WHEN max_abs_error IS NULL OR isnan(max_abs_error) THEN '-' "
              "WHEN max_abs_error = 0 THEN '0' "
              "ELSE '1e' || CAST(floor(log10(max_abs_error)) AS BIGINT) END")
"""The error's decade ("1e-3": from 1e-3 up to 1e-2), for its frequency view."""
TEXT_COLUMNS = ("op_type", "case_name", "input_shapes", "dtype", "check", "optimization",
                "backend", "result", "reason")
"""What the free-text filter searches: every text the table shows (the Optimization column
shows the level or the backend, so both are searched)."""
TEXT_SEARCHED = ("operation, case, input, dtype, check, path/runtime, result, details (each word "
                 "in any of them)")
"""``TEXT_COLUMNS`` in the words of the help and the find box."""


def _ident(name: str) -> str:
    return '"' + name + '"'


def _nan_last(name: str) -> str:
    return f"CASE WHEN isnan({name}) THEN NULL ELSE {name} END"


SORT_ONLY: tuple[Column, ...] = (
    # The absolute error mixes dtypes (1e-3 is large for float32, small for float16): these
    # compare rows across dtypes. Not shown as columns (the detail view has them).
    Column("scaled_error", "Scaled error (max|a−r| / max|r|)", "scaled_error",
           numeric=True, sort_sql=_nan_last("scaled_error")),
    Column("max_ulp", "Max ULP distance", "max_ulp", numeric=True,
           sort_sql=_nan_last("max_ulp")),
    Column("min_atol", "Needs atol (the atol that would pass it)", "min_atol", numeric=True,
           sort_sql=_nan_last("min_atol")),
)
"""Sort keys that are not table columns."""


def _column(key: str) -> Column:
    for c in (*COLUMNS, *SORT_ONLY):
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
    releases: frozenset[str] = frozenset()
    suites: frozenset[str] = frozenset()
    checks: frozenset[str] = frozenset()
    arbiters: frozenset[str] = frozenset()
    blamed: frozenset[str] = frozenset()
    cases: frozenset[str] = frozenset()
    inputs: frozenset[str] = frozenset()
    reasons: frozenset[str] = frozenset()
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
        changes: dict[str, Any] = {key: frozenset(values)}
        return replace(self, **changes)

    def values(self, key: str) -> frozenset[str]:
        result: frozenset[str] = getattr(self, key)
        return result

    @property
    def is_empty(self) -> bool:
        return self == TableFilter()

    def where(self, text_values: Mapping[str, Sequence[str] | None] | None = None
              ) -> tuple[str, list[Any]]:
        """The filter as a parameterised SQL condition and its parameters.

        ``text_values``: a text column's distinct values, where known (``TableQuery``
        reads them once): the free text then becomes ``column IN (matching values)``,
        which DuckDB answers from Parquet's dictionaries; nine ``contains()`` joined by OR
        took ten times as long on a million rows.
        """
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
                parts.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if self.finding:
            parts.append("observation_id IN (SELECT observation_id FROM finding_members "
                         "WHERE finding_id = ?)")
            params.append(self.finding)
        if self.text.strip():
            # A literal, case-blind substring per column: contains() needs no escaping of
            # % _ and \, and DuckDB evaluates it on Parquet's dictionaries (ILIKE with an
            # ESCAPE clause is not: 240 ms against 35 ms on a million rows).
            # Words AND: "softmax float16" is rows with both words, each in any column.
            for needle in self.text.lower().split():
                terms = []
                for c in TEXT_COLUMNS:
                    known = (text_values or {}).get(c)
                    if known is None:
                        terms.append(f"contains(lower({_ident(c)}), ?)")
                        params.append(needle)
                        continue
                    hits = [v for v in known if needle in v.lower()]
                    if hits:
                        terms.append(f"{_ident(c)} IN ({', '.join('?' * len(hits))})")
                        params.extend(hits)
                parts.append("(" + (" OR ".join(terms) or "false") + ")")
        return (" AND ".join(parts) or "true"), params

    def describe(self) -> list[str]:
        """One short phrase per active filter, in the order the keys are listed."""
        out = []
        if self.classes:
            out.append("result: " + ", ".join(c for c in RESULT_CLASSES if c in self.classes))
        for key, (_, label) in VALUE_FILTERS.items():
            values = sorted(self.values(key), key=natural_key)
            if values:
                shown = ", ".join(values[:3]) + (f" +{len(values) - 3}" if len(values) > 3 else "")
                out.append(f"{label}: {shown}")
        if self.text.strip():
            # As typed (a backslash is one backslash), cut: a long paste is not a status line.
            text = self.text.strip()
            out.append(f"text: “{text if len(text) <= 40 else text[:39] + '…'}”")
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
class SelectionStep:
    """One thing the user did to the selection: rows chosen or dropped one by one (by id),
    or every row a condition matches (all matching rows, a group) chosen or dropped."""

    chosen: frozenset[str] = frozenset()
    """Ids selected one by one (``space``)."""
    dropped: frozenset[str] = frozenset()
    """Ids unselected one by one."""
    condition: tuple[str, tuple[Any, ...]] | None = None
    """A WHERE clause and its parameters: the rows it matches are ``selects`` (or not)."""
    selects: bool = True

    @property
    def adds(self) -> bool:
        """Whether this step can select a row."""
        return bool(self.chosen) if self.condition is None else self.selects

    def cases(self) -> tuple[list[str], list[Any]]:
        """``WHEN … THEN …`` branches of this step and their parameters."""
        if self.condition is not None:
            sql, values = self.condition
            return [f"WHEN ({sql}) THEN {str(self.selects).lower()}"], list(values)
        branches: list[str] = []
        params: list[Any] = []
        for ids, selects in ((self.chosen, "true"), (self.dropped, "false")):
            if ids:
                branches.append(f"WHEN observation_id IN ({', '.join('?' * len(ids))}) "
                                f"THEN {selects}")
                params.extend(sorted(ids))
        return branches, params


@dataclass(frozen=True)
class Selection:
    """Selected rows, as the steps that chose them, oldest first: a row is selected when the
    newest step that names it selects it (so a row dropped after "select all" stays out,
    and a group chosen after that is in again, row by row).

    Kept as SQL rather than a set of ids, so selecting a million matching rows (or a group
    of them) costs nothing; ``where()`` says which rows are selected.
    """

    steps: tuple[SelectionStep, ...] = ()

    @classmethod
    def matching(cls, where: str, params: Sequence[Any]) -> Selection:
        """Every row ``where`` matches (key ``a``)."""
        return cls((SelectionStep(condition=(where, tuple(params))),))

    @property
    def is_empty(self) -> bool:
        """Whether no step selects anything (rows dropped from nothing are no selection)."""
        return not any(step.adds for step in self.steps)

    def toggle(self, observation_id: str, selected: bool) -> Selection:
        """Flip one row, given whether it is selected now."""
        # The newest step decides a row, so earlier steps need not name it any more.
        steps = [replace(step, chosen=step.chosen - {observation_id},
                         dropped=step.dropped - {observation_id})
                 if step.condition is None else step for step in self.steps]
        steps = [step for step in steps if step.condition is not None
                 or step.chosen or step.dropped]
        last = steps.pop() if steps and steps[-1].condition is None else SelectionStep()
        if selected:
            last = replace(last, dropped=last.dropped | {observation_id})
        else:
            last = replace(last, chosen=last.chosen | {observation_id})
        return Selection((*steps, last))

    def toggle_rows(self, where: str, params: Sequence[Any], selected: bool) -> Selection:
        """Flip every row ``where`` matches (a group), given whether it is selected now."""
        condition = (where, tuple(params))
        # A later step on the same rows overrides an earlier one entirely.
        steps = [step for step in self.steps if step.condition != condition]
        step = SelectionStep(condition=condition, selects=not selected)
        if not steps and selected:
            return Selection()
        return Selection((*steps, step))

    def where(self) -> tuple[str, list[Any]]:
        """The selection as a parameterised SQL condition and its parameters."""
        if not self.steps:
            return "false", []
        if len(self.steps) == 1:
            (step,) = self.steps
            if step.condition is not None and step.selects:
                return f"({step.condition[0]})", list(step.condition[1])
            if step.condition is None and step.chosen:
                return (f"observation_id IN ({', '.join('?' * len(step.chosen))})",
                        sorted(step.chosen))
        branches: list[str] = []
        params: list[Any] = []
        for step in reversed(self.steps):  # the newest step that names a row decides it
            sql, step_params = step.cases()
            branches.extend(sql)
            params.extend(step_params)
        if not branches:
            return "false", []
        return f"(CASE {' '.join(branches)} ELSE false END)", params


class TableRow(NamedTuple):
    """One row of a page: its observation, whether it is selected, and its cells by column
    key (``Column.key``), so that a view reads a cell by name whatever the columns are."""

    observation_id: str
    selected: bool
    cells: Mapping[str, Any]


def table_row(fetched: Sequence[Any], keys: Sequence[str]) -> TableRow:
    """A row fetched as (observation_id, selected, *cells in ``keys`` order)."""
    return TableRow(str(fetched[0]), bool(fetched[1]),
                    dict(zip(keys, fetched[2:], strict=True)))


@dataclass(frozen=True)
class Page:
    """Rows ``offset`` to ``offset + len(rows)`` of a query, each with its id and selection."""

    offset: int
    rows: list[TableRow]
    numbers: list[int] = field(default_factory=list)
    """Each row's ``rn`` (the detail view fetches a row by it), when known."""
    groups: list[int] = field(default_factory=list)
    """Grouped: each row's group key (``GroupedRows.members`` selects the group's rows)."""
    columns: tuple[str, ...] = COLUMN_KEYS
    """The column keys its rows' cells hold, in display order."""


SEVERITY_SQL = severity_sql()
"""How bad a row is, to pick the worst of a group (``result_classes.SEVERITY``)."""
COVERS_SEPARATOR = ","
MAX_COVERED = 15
"""Values a group's ``covers`` bits can name (4 bits each in a BIGINT)."""
COVERS_RESULT = "="


@dataclass(frozen=True)
class Grouping:
    """Rows that agree on every ``by`` expression are one row of the table.

    The row shown (and opened by ``enter``) is the worst of its group: the most severe
    result, then the largest error. The ``column`` it shows ``covers`` in lists what the
    group's rows differ in, each with its result ("basic=passed,all=divergence").
    """

    key: str
    label: str
    """What the status line says, e.g. "one row per case and check, levels merged"."""
    by: tuple[str, ...]
    """SQL expressions over the table relation that define a group."""
    covers: str
    """A column whose values a group lists (what its rows differ in)."""
    column: str
    """The table column (a ``COLUMNS`` key) that shows the list."""
    labels: dict[str, str] = field(default_factory=dict)
    """How the list names a ``covers`` value, where not as itself."""


GROUPINGS: dict[str, Grouping] = {
    # The case id names suite, operation, case and dtype; the backend keeps the reference
    # path (optimisation "-") a row of its own.
    "levels": Grouping("levels", "levels merged",
                       ("case_id", '"check"', "output_name", "reference", "backend"),
                       "optimization", "optimization",
                       {NOT_APPLICABLE: path_label(REFERENCE, NOT_APPLICABLE)}),
    "dtypes": Grouping("dtypes", "dtypes merged",
                       ("suite", "op_type", "case_name", "input_shapes", '"check"',
                        "output_name", "reference", "backend", "optimization"),
                       "dtype", "dtype"),
    # One row per finding (its worst observation; the case column lists its operations),
    # and one for the passed rows, which belong to none.
    "findings": Grouping("findings", "one row per finding",
                         (f"(SELECT fm.finding_id FROM {FINDING_MEMBERS} fm "
                          f"WHERE fm.observation_id = {TABLE_RELATION}.observation_id)",),
                         "op_type", "case"),
}
"""The grouping toggle's modes, in the order ``m`` steps through them (then none)."""


def split_covers(value: str) -> list[tuple[str, str]]:
    """A group's ``covers`` value as (name, result) pairs, levels in their natural order."""
    pairs = []
    for item in value.split(COVERS_SEPARATOR):
        name, _, result = item.partition(COVERS_RESULT)
        pairs.append((name, result))
    return sorted(pairs, key=lambda p: natural_key(p[0]))


@dataclass(frozen=True)
class Frequency:
    """One value of a column: its rows within the filter, in all and per result class."""

    value: str
    rows: int
    by_class: dict[str, int]


@dataclass(frozen=True)
class GroupedRows:
    """A grouped result, materialised as table ``name`` (one row per group) for paging."""

    name: str
    grouping: Grouping
    count: int
    """Groups: the rows of the grouped table."""
    rows: int
    """Rows of the relation the groups hold (those the filter matched)."""
    domain: tuple[str, ...] = ()
    """The values the ``covers`` bits stand for (empty: ``covers`` is already text)."""

    def covers_text(self, covers: Any) -> str:
        """A group's ``covers`` as "value=result,..." (each value's worst result)."""
        labels = self.grouping.labels
        if not self.domain:
            return COVERS_SEPARATOR.join(
                f"{labels.get(v, v)}{COVERS_RESULT}{r}"
                for v, _, r in (item.partition(COVERS_RESULT)
                                for item in str(covers or "").split(COVERS_SEPARATOR)))
        bits = int(covers or 0)
        items = []
        for i, value in enumerate(self.domain):
            present = [r for r in RESULT_CLASSES if bits >> (4 * i + SEVERITY[r]) & 1]
            if present:
                worst = max(present, key=SEVERITY.__getitem__)
                items.append(f"{labels.get(value, value)}{COVERS_RESULT}{worst}")
        return COVERS_SEPARATOR.join(items)

    def members(self, where: str, params: Sequence[Any], key: int) -> tuple[str, list[Any]]:
        """The rows of the group ``key`` (a ``Page.groups`` value) among those ``where``
        matches (the filter the groups were made under), as a condition over ``obs`` or the
        table's relation: what selecting a grouped row selects and exports."""
        return (f"({where}) AND hash({', '.join(self.grouping.by)}) = ?::UBIGINT",
                [*params, key])


TEXT_VALUES_MAX = 5000
"""A text column with more distinct values is searched with contains(), value by value."""
_TEXT_VALUES: dict[tuple[str, str, int], dict[str, list[str] | None]] = {}
_TEXT_VALUES_LOCK = threading.Lock()


@dataclass
class TableQuery:
    """Counting and paging the evaluations of one source, on one cursor (one thread).

    ``interrupt`` may come from another thread at any time, also after the worker that
    owns the query has closed it: a lock orders the two, and a closed query ignores it.
    """

    source: RunSource
    cursor: duckdb.DuckDBPyConnection = field(init=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _closed: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.cursor = self.source.cursor()

    def interrupt(self) -> None:
        """Stop the query running on this cursor (from any thread; a no-op once closed)."""
        with self._lock:
            if not self._closed:
                self.cursor.interrupt()

    def _where(self, table_filter: TableFilter) -> tuple[str, list[Any]]:
        """``table_filter.where()`` with the text columns' values, once there is text."""
        if table_filter.finding:
            # Deferred: only a finding's filter needs its members (kept once per run).
            from gero.query.findings import ensure_members

            ensure_members(self.source)
        return table_filter.where(self.text_values() if table_filter.text.strip() else None)

    def text_values(self) -> dict[str, list[str] | None]:
        """Each text column's distinct values (None where more than ``TEXT_VALUES_MAX``),
        read once per open run and kept for every later search."""
        return {column: self.distinct_values(column) for column in TEXT_COLUMNS}

    def distinct_values(self, column: str) -> list[str] | None:
        """A column's distinct values in the run (None where more than ``TEXT_VALUES_MAX``),
        read once per open run and column, and kept."""
        key = (str(self.source.data_root), self.source.run_id, id(self.source.connection))
        with _TEXT_VALUES_LOCK:
            known = _TEXT_VALUES.setdefault(key, {})
            if column in known:
                return known[column]
        rows = self.cursor.execute(
            f"SELECT DISTINCT {_ident(column)} FROM {TABLE_RELATION} LIMIT ?",
            [TEXT_VALUES_MAX + 1]).fetchall()
        values = ([str(r[0]) for r in rows if r[0] is not None]
                  if len(rows) <= TEXT_VALUES_MAX else None)
        with _TEXT_VALUES_LOCK:
            known[column] = values
        return values

    def content(self) -> ColumnContent:
        """The longest value (in characters) of each text column the table shows, over the
        whole run, and the values of the columns it may have to cut: what the explorer
        sizes its columns from (the run's, not the filter's, so that they stay put while
        filtering and scrolling): a scan (0.1-0.3 s on a million rows; the explorer asks
        after its first page), then the few distinct paths, references and checks."""
        keys = [c.key for c in COLUMNS if c.key in WIDTH_COLUMNS]
        sql = ", ".join(f"max(length(CAST({c.sql} AS VARCHAR)))"
                        for c in COLUMNS if c.key in WIDTH_COLUMNS)
        row = self.cursor.execute(
            f"SELECT {sql}, {HAS_RELEASES_SQL} FROM {TABLE_RELATION}").fetchone()
        widths = {k: int(v or 0) for k, v in zip(keys, row or (), strict=False)}
        if not (row and row[-1]):
            widths["release"] = 0

        def distinct(expression: str, columns: str) -> list[str]:
            return sorted(str(r[0]) for r in self.cursor.execute(
                f"SELECT DISTINCT {expression} FROM (SELECT DISTINCT {columns} "
                f"FROM {TABLE_RELATION})").fetchall() if r[0] is not None)

        # A row blames its own path, its reference, or no one ('undecided'): the candidates
        # from the few distinct (backend, optimization) and references of the run.
        paths = distinct(PATH_SQL, "backend, optimization")
        values = {"optimization": paths, "check": distinct('"check"', '"check"'),
                  "blamed": sorted({*paths, *distinct(_REFERENCE_LABEL, "reference"),
                                    "undecided"})}
        return ColumnContent(widths, values)

    def count(self, table_filter: TableFilter) -> int:
        where, params = self._where(table_filter)
        sql = f"SELECT count(*) FROM {TABLE_RELATION} WHERE {where}"
        row = self.cursor.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def group(self, table_filter: TableFilter, grouping: Grouping, name: str) -> GroupedRows:
        """Group the rows ``table_filter`` matches into table ``name`` (the worst row's
        ``rn``, what the group covers, its size): one pass over them; paging then reads the
        small grouped table and fetches its page's rows by ``rn``.

        What a group covers is kept as bits, 4 a value (one per result class), for up to
        ``MAX_COVERED`` values: one aggregate of integers, where a list of strings per group
        took twice as long on a million rows.
        """
        where, params = self._where(table_filter)
        if grouping.key == "findings":
            # Deferred: only this grouping needs the findings' members (kept once per run).
            from gero.query.findings import ensure_members

            ensure_members(self.source)
        # The run's values (read once per run), not the filter's: a bit per value either way.
        values = self.distinct_values(grouping.covers)
        domain = sorted(values, key=natural_key) if values is not None else []
        worst = (f"({SEVERITY_SQL}) * 4 + CASE WHEN max_abs_error IS NULL OR "
                 "isnan(max_abs_error) THEN 0 ELSE 1 + atan(max_abs_error) END")
        covers_params: list[Any] = []
        if values is not None and not domain:
            covers = "0::BIGINT"  # no rows: no groups, nothing covered
        elif values is not None and len(domain) <= MAX_COVERED:
            index = (f"CASE {grouping.covers} "
                     + " ".join(f"WHEN ? THEN {4 * i}" for i in range(len(domain))) + " END")
            covers = f"bit_or(1::BIGINT << ({index} + ({SEVERITY_SQL})))"
            covers_params = list(domain)
        else:
            covers = (f"string_agg(DISTINCT {grouping.covers} || '{COVERS_RESULT}' || result, "
                      f"'{COVERS_SEPARATOR}')")
            covers_params, domain = [], []
        key = f"hash({', '.join(grouping.by)})"
        # By the hash of the key columns: 40% less time than by the columns on a million
        # rows; two groups would merge only on a 64-bit hash collision.
        self.cursor.execute(
            f"CREATE OR REPLACE TABLE {name} AS SELECT arg_max(rn, {worst}) AS rn, "
            f"{covers} AS covers, count(*) AS members, {key} AS gk FROM {TABLE_RELATION} "
            f"WHERE {where} GROUP BY {key}", [*covers_params, *params])
        row = self.cursor.execute(f"SELECT count(*), sum(members) FROM {name}").fetchone()
        groups, rows = (int(row[0]), int(row[1] or 0)) if row else (0, 0)
        return GroupedRows(name, grouping, groups, rows, tuple(domain))

    def drop(self, name: str) -> None:
        """Drop a grouped table no view needs any more."""
        self.cursor.execute(f"DROP TABLE IF EXISTS {name}")

    def page(self, table_filter: TableFilter, sort: TableSort, offset: int, limit: int,
             selection: Selection | None = None, groups: GroupedRows | None = None) -> Page:
        """Rows ``offset`` to ``offset + limit`` (of the groups, when grouped)."""
        where, params = self._where(table_filter)
        relation = TABLE_RELATION
        if sort.column == BY_FINDING:
            # Deferred: only this sort needs the findings (computed once per run).
            from gero.query.findings import ORDER_TABLE, ensure_members

            ensure_members(self.source)
            relation = (f"(SELECT * FROM {TABLE_RELATION} LEFT JOIN {ORDER_TABLE} "
                        "USING (observation_id))")
        selected, selected_params = (selection or Selection()).where()
        columns = ", ".join(c.sql for c in COLUMNS)
        keys = tuple(c.key for c in COLUMNS)
        if (groups is None and sort.column == NATURAL and table_filter.is_empty
                and self.source.direct):
            # One file read in order: row ``rn`` is the file's row number, so the page is
            # the range of numbers itself, one pushed-down read (no sort of every number).
            fetched = self.cursor.execute(
                f"SELECT rn, observation_id, coalesce({selected}, false), {columns} "
                f"FROM {TABLE_RELATION} WHERE rn >= ? AND rn < ? ORDER BY rn",
                [*selected_params, offset, offset + limit]).fetchall()
            return Page(offset, [table_row(row[1:], keys) for row in fetched],
                        [row[0] for row in fetched], columns=keys)
        if groups is None:
            sql = f"SELECT rn FROM {relation} WHERE {where} {sort.order_by()}"
        elif sort.column == NATURAL:
            # The grouped table holds only groups of rows the filter matched.
            sql, params = f"SELECT rn FROM {groups.name} ORDER BY rn", []
        else:
            # Sorted on the worst row's values: a join with the (small) grouped table.
            sql, params = (f"SELECT rn FROM {groups.name} JOIN {relation} USING (rn) "
                           f"{sort.order_by()}"), []
        numbers = [r[0] for r in self.cursor.execute(
            f"{sql} LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()]
        if not numbers:
            return Page(offset, [], columns=keys)
        fetched = self.cursor.execute(
            f"SELECT rn, observation_id, coalesce({selected}, false), {columns} "
            f"FROM {TABLE_RELATION} WHERE rn IN (SELECT unnest(?::BIGINT[]))",
            [*selected_params, numbers]).fetchall()
        by_number = {row[0]: table_row(row[1:], keys) for row in fetched}
        group_keys: list[int] = []
        if groups is not None:
            # The covered column lists the group's values ("basic=passed,all=divergence").
            covered = {rn: (covers, key) for rn, covers, key in self.cursor.execute(
                f"SELECT rn, covers, gk FROM {groups.name} "
                "WHERE rn IN (SELECT unnest(?::BIGINT[]))", [numbers]).fetchall()}
            column = groups.grouping.column
            by_number = {n: row._replace(cells={
                **row.cells, column: groups.covers_text(covered[n][0])})
                for n, row in by_number.items()}
            group_keys = [int(covered[n][1]) for n in numbers]
        return Page(offset, [by_number[n] for n in numbers], numbers, group_keys, keys)

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
        """Values of a value filter's column with their row counts (under ``table_filter``),
        optimisation levels in their natural order, other values alphabetically."""
        if key not in VALUE_FILTERS:
            raise ValueError(f"unknown filter {key!r}; filters: {', '.join(VALUE_FILTERS)}")
        column = VALUE_FILTERS[key][0]
        where, params = self._where(table_filter or TableFilter())
        rows = self.cursor.execute(
            f"SELECT {column} AS v, count(*) FROM {TABLE_RELATION} WHERE {where} "
            "GROUP BY v", params).fetchall()
        return sorted(((str(v), int(n)) for v, n in rows if v is not None),
                      key=lambda vn: natural_key(vn[0]))

    def frequency(self, key: str, table_filter: TableFilter, limit: int = 1000
                  ) -> list[Frequency]:
        """Values of the table column ``key`` within ``table_filter``, most frequent first
        (the error by decade, in order), each with its rows per result class."""
        column = _column(key)
        value = DECADE_SQL if column.numeric else column.sql
        order = "min(max_abs_error) NULLS LAST" if column.numeric else "n DESC, v"
        where, params = self._where(table_filter)
        per_class = ", ".join(f"count(*) FILTER (WHERE result = '{c}')" for c in RESULT_CLASSES)
        rows = self.cursor.execute(
            f"SELECT ({value}) AS v, count(*) AS n, {per_class} FROM {TABLE_RELATION} "
            f"WHERE {where} GROUP BY v ORDER BY {order} LIMIT ?", [*params, limit]).fetchall()
        return [Frequency("-" if r[0] is None else str(r[0]), int(r[1]),
                          {c: int(n) for c, n in zip(RESULT_CLASSES, r[2:], strict=True)})
                for r in rows]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.cursor.close()
