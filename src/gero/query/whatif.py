"""Tolerance what-if: re-grade a run under other tolerances from the figures it stored.

Nothing runs again. A row passes ``|a − r| ≤ atol + rtol·|r|`` exactly when ``atol ≥
min_atol`` at the rtol it used, or ``rtol ≥ min_rtol`` at the atol it used, so a new pair
(rtol', atol') is decided from those two figures and max |a − r|:

- passes when max |a − r| ≤ atol', or rtol' ≥ rtol and atol' ≥ min_atol, or atol' ≥ atol
  and rtol' ≥ min_rtol (more of either tolerance never hurts);
- passes too when (atol', rtol') dominates a point of the segment between the two stored
  passing points (min_atol, rtol) and (atol, min_rtol);
- fails when rtol' ≤ rtol and atol' < min_atol, or atol' ≤ atol and rtol' < min_rtol, or
  when the largest error exceeds atol' + rtol'·max|r| (max|r| = max|a − r| / scaled error);
- otherwise (one tolerance tightened, the other loosened past what was stored) the stored
  figures cannot tell, and the row is counted as undetermined.

Only tolerance comparisons are re-graded (agreement, analytic, expected, levels, variants)
and only while both sides are finite: a row whose class depends on NaN, infinities, a
shape or a law (contracts, model checks) keeps its class, and the counts say how many.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gero.query.findings import MEMBERS_TABLE, NUMERIC_CHECKS, Queryable, ensure_members
from gero_runner.backends import path_label_sql
from gero_runner.tolerances import parse_items

UNDETERMINED = "undetermined"


@dataclass(frozen=True)
class Override:
    """New tolerances for one dtype; None keeps each row's own value."""

    dtype: str
    rtol: float | None = None
    atol: float | None = None


def parse_whatif(rtol: Iterable[str], atol: Iterable[str]) -> dict[str, Override]:
    """``--rtol float16=1e-2 --atol float16=1e-3`` as overrides per dtype (the items read
    as ``gero run``'s)."""
    rtols, atols = parse_items("rtol", rtol), parse_items("atol", atol)
    return {d: Override(d, rtols.get(d), atols.get(d)) for d in {**rtols, **atols}}


@dataclass(frozen=True)
class FindingChange:
    """Members of one finding that would pass under the new tolerances."""

    finding_id: str
    would_pass: int
    undetermined: int
    members: int


@dataclass(frozen=True)
class NewFailure:
    """Passed observations that would fail, by operator and dtype, with the paths."""

    op_type: str
    dtype: str
    paths: str
    count: int


@dataclass(frozen=True)
class WhatIf:
    """What a change of tolerances would do to a run's classes."""

    overrides: dict[str, Override]
    regraded: int
    """Rows of the overridden dtypes that were re-graded (tolerance comparisons, finite)."""
    not_regraded: int
    """Rows of the overridden dtypes whose class depends on more than the tolerance."""
    to_passed: int
    to_divergence: int
    undetermined: int
    findings: list[FindingChange] = field(default_factory=list)
    new_failures: list[NewFailure] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _tolerance_case(column: str, overrides: dict[str, Override], kind: str,
                    params: list[Any]) -> str:
    arms = []
    for o in overrides.values():
        value = o.rtol if kind == "rtol" else o.atol
        if value is not None:
            arms.append("WHEN ? THEN ?::DOUBLE")
            params += [o.dtype, value]
    return f"CASE dtype {' '.join(arms)} ELSE {column} END" if arms else column


BASE_TABLE = "whatif_base"
"""The re-gradable rows' figures, copied once per run so that each change scans memory."""
FIXED_TABLE = "whatif_fixed"
"""Per dtype: rows whose class depends on more than the tolerance."""


def prepare(source: Queryable) -> None:
    """Copy what a re-grade reads (once per run; each what-if then reads memory only)."""
    numeric = ", ".join(f"'{c}'" for c in NUMERIC_CHECKS)
    regradable = f"""result IN ('passed', 'divergence')
        AND ("check" IN ({numeric}) OR "check" LIKE 'variant:%')
        AND coalesce(nan_actual, 0) = 0 AND coalesce(nan_reference, 0) = 0
        AND coalesce(inf_actual, 0) = 0 AND coalesce(inf_reference, 0) = 0
        AND isfinite(max_abs_error) AND isfinite(min_atol) AND NOT isnan(min_rtol)"""
    source.query(f"""CREATE OR REPLACE TABLE {BASE_TABLE} AS
        SELECT observation_id, op_type, dtype, result, rtol, atol, min_atol, min_rtol,
               max_abs_error, scaled_error, {path_label_sql()} AS path
        FROM obs WHERE {regradable}""")
    source.query(f"""CREATE OR REPLACE TABLE {FIXED_TABLE} AS
        SELECT dtype, count(*) AS n FROM obs WHERE NOT ({regradable}) GROUP BY dtype""")


def _segment_sql() -> str:
    """Whether (na, nr) dominates a point of the segment between the two stored passing
    points (min_atol, rtol) and (atol, min_rtol): every element passes anywhere on it,
    since each is a convex combination of two bounds that hold for every element."""
    d_a, d_r = "(min_atol - atol)", "(rtol - min_rtol)"
    lo = (f"greatest(0, CASE WHEN {d_a} < 0 THEN (na - atol) / {d_a} ELSE 0 END, "
          f"CASE WHEN {d_r} < 0 THEN (nr - min_rtol) / {d_r} ELSE 0 END)")
    hi = (f"least(1, CASE WHEN {d_a} > 0 THEN (na - atol) / {d_a} ELSE 1 END, "
          f"CASE WHEN {d_r} > 0 THEN (nr - min_rtol) / {d_r} ELSE 1 END)")
    return (f"(isfinite(min_rtol) AND ({d_a} <> 0 OR atol <= na) "
            f"AND ({d_r} <> 0 OR min_rtol <= nr) AND {lo} <= {hi})")


def regrade_sql(overrides: dict[str, Override], params: list[Any]) -> str:
    """The prepared rows of the overridden dtypes with ``new_result`` (passed | divergence
    | undetermined)."""
    new_rtol = _tolerance_case("rtol", overrides, "rtol", params)
    new_atol = _tolerance_case("atol", overrides, "atol", params)
    params.append(list(overrides))
    return f"""
SELECT observation_id, op_type, dtype, result, path,
       CASE WHEN max_abs_error <= na OR (nr >= rtol AND na >= min_atol)
                 OR (na >= atol AND nr >= min_rtol) OR {_segment_sql()} THEN 'passed'
            WHEN (nr <= rtol AND na < min_atol) OR (na <= atol AND nr < min_rtol)
                 OR (scaled_error > 0 AND isfinite(scaled_error)
                     AND max_abs_error > na + nr * (max_abs_error / scaled_error))
                 THEN 'divergence'
            ELSE '{UNDETERMINED}' END AS new_result
FROM (SELECT *, {new_rtol} AS nr, {new_atol} AS na FROM {BASE_TABLE}
      WHERE dtype IN (SELECT unnest(?::VARCHAR[])))
"""


def what_if(source: Queryable, overrides: dict[str, Override],
            members_table: str = MEMBERS_TABLE) -> WhatIf:
    """Re-grade the run under ``overrides``. ``prepare`` must have been run on this source;
    the run's members table is read back or computed when it is not there yet."""
    if not overrides:
        return WhatIf(overrides, 0, 0, 0, 0, 0)
    if members_table == MEMBERS_TABLE:
        ensure_members(source)
    params: list[Any] = []
    inner = regrade_sql(overrides, params)
    source.query(f"CREATE OR REPLACE TABLE whatif_rows AS SELECT * FROM ({inner}) "
                 "WHERE new_result <> result", params)
    fixed = source.query(f"SELECT coalesce(sum(n), 0) FROM {FIXED_TABLE} "
                         "WHERE dtype IN (SELECT unnest(?::VARCHAR[]))", [list(overrides)])
    regraded = source.query(f"SELECT count(*) FROM {BASE_TABLE} "
                            "WHERE dtype IN (SELECT unnest(?::VARCHAR[]))", [list(overrides)])
    totals = source.query(
        f"""SELECT count(*) FILTER (new_result = 'passed'),
                   count(*) FILTER (new_result = 'divergence'),
                   count(*) FILTER (new_result = '{UNDETERMINED}') FROM whatif_rows""")[0]
    to_passed, to_divergence, undetermined = (int(v) for v in totals)
    per_finding = source.query(
        f"""SELECT m.finding_id, count(*) FILTER (w.new_result = 'passed'),
                   count(*) FILTER (w.new_result = '{UNDETERMINED}'),
                   any_value(t.members)
            FROM whatif_rows w JOIN {members_table} m USING (observation_id)
            JOIN (SELECT finding_id, count(*) AS members FROM {members_table}
                  GROUP BY finding_id) t USING (finding_id)
            WHERE w.new_result IN ('passed', '{UNDETERMINED}')
            GROUP BY m.finding_id ORDER BY 2 DESC, 1""")
    new_failures = source.query(
        """SELECT op_type, dtype, string_agg(DISTINCT path, ', ' ORDER BY path), count(*)
           FROM whatif_rows WHERE result = 'passed' AND new_result = 'divergence'
           GROUP BY ALL ORDER BY 4 DESC, 1, 2""")
    return WhatIf(
        overrides=overrides, regraded=int(regraded[0][0]), not_regraded=int(fixed[0][0]),
        to_passed=to_passed, to_divergence=to_divergence, undetermined=undetermined,
        findings=[FindingChange(str(a), int(b), int(c), int(d)) for a, b, c, d in per_finding],
        new_failures=[NewFailure(str(a), str(b), str(c), int(d)) for a, b, c, d in new_failures])
