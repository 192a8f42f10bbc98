"""Per-operation distribution of max abs error (log10, by decade), computed in DuckDB.

One query groups an operation's observations by optimisation level, dtype and decade of
``max_abs_error``; bit-exact / zero-error rows and rows without a figure (a path failed) get
their own buckets, so every observation is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gero.query.table import PATH_SQL

ZERO = "zero"
"""Bucket of observations whose max abs error is exactly 0."""
NO_FIGURE = "n/a"
"""Bucket of observations without a max abs error (execution failures)."""

# Parquet min/max statistics leave NaN out, and DuckDB's statistics propagation then folds
# isnan(max_abs_error) to false. Reading the value through a one-element list hides the
# statistics, so NaN (a path failed) is recognised; tests/tui/query/test_histograms.py guards it.
# The path as every view names it: the level, ``reference`` (not "-"), "ov:f32".
_SQL = """
WITH e AS (SELECT """ + PATH_SQL + """ AS optimization, dtype, [max_abs_error][1] AS x
           FROM obs WHERE op_type = ?)
SELECT optimization, dtype,
       CASE WHEN x IS NULL OR isnan(x) OR x = 0 THEN NULL
            WHEN isinf(x) THEN 999
            -- the inner CASE keeps log10 away from 0 and NaN (DuckDB evaluates every branch)
            ELSE CAST(floor(log10(CASE WHEN isfinite(x) AND x > 0 THEN x ELSE 1 END))
                      AS INTEGER) END AS decade,
       CASE WHEN x IS NULL OR isnan(x) THEN 'n/a' WHEN x = 0 THEN 'zero' ELSE 'error' END AS kind,
       count(*) AS n
FROM e
GROUP BY ALL
ORDER BY optimization, dtype, decade NULLS FIRST
"""


@dataclass(frozen=True)
class GroupHistogram:
    """One (optimisation level, dtype) group of an operation's observations."""

    optimization: str
    dtype: str
    zero: int
    no_figure: int
    decades: dict[int, int]
    """decade k -> observations with 10^k ≤ max abs error < 10^(k+1) (999 for inf)."""

    @property
    def total(self) -> int:
        return self.zero + self.no_figure + sum(self.decades.values())


@dataclass(frozen=True)
class OperationHistogram:
    op_type: str
    groups: tuple[GroupHistogram, ...]

    @property
    def decade_range(self) -> tuple[int, int]:
        """Smallest and largest finite decade over all groups ((0, -1) when none)."""
        finite = [d for g in self.groups for d in g.decades if d != 999]
        return (min(finite), max(finite)) if finite else (0, -1)

    @property
    def total(self) -> int:
        return sum(g.total for g in self.groups)


def operation_histogram(connection: duckdb.DuckDBPyConnection, op_type: str) -> OperationHistogram:
    """The histogram of ``op_type`` over the ``obs`` view (no groups when it has no rows)."""
    rows = connection.execute(_SQL, [op_type]).fetchall()
    zero: dict[tuple[str, str], int] = {}
    no_figure: dict[tuple[str, str], int] = {}
    decades: dict[tuple[str, str], dict[int, int]] = {}
    for optimization, dtype, decade, kind, n in rows:
        key = (str(optimization), str(dtype))
        decades.setdefault(key, {})
        if kind == ZERO:
            zero[key] = zero.get(key, 0) + int(n)
        elif kind == NO_FIGURE:
            no_figure[key] = no_figure.get(key, 0) + int(n)
        else:
            decades[key][int(decade)] = int(n)
    return OperationHistogram(op_type, tuple(
        GroupHistogram(key[0], key[1], zero.get(key, 0), no_figure.get(key, 0), decades[key])
        for key in sorted(decades, key=_order)
    ))


def _order(key: tuple[str, str]) -> tuple[int, str, str]:
    levels = ("disable_all", "basic", "extended", "all")
    opt, dtype = key
    return (levels.index(opt) if opt in levels else len(levels), opt, dtype)
