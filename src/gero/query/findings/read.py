"""Reading findings back from a members table: one ``Finding`` per finding id, with its
counts, its worst observation (the representative) and its title."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from gero.query.findings.model import (
    MEMBERS_TABLE,
    Finding,
    Queryable,
    Representative,
    finding_order,
)
from gero.query.findings.titles import with_title
from gero_runner.backends import ort_levels
from gero_runner.facts import cause_of
from gero_runner.result_classes import SEVERITY
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, EXECUTION

_FINDINGS_SQL = """
SELECT finding_id, any_value(family), any_value(outlier), any_value(template),
       any_value(operator_key), count(*), count(DISTINCT case_id),
       list_sort(list_distinct(list(op_type))), list_sort(list_distinct(list(dtype))),
       list_distinct(list(optimization) FILTER (optimization <> '-')),
       count(*) FILTER (result = 'contract_issue'), count(*) FILTER (result = 'divergence'),
       count(*) FILTER (result = 'execution'),
       max(max_abs_error) FILTER (isfinite(max_abs_error)),
       -- its own rows first: a verdict on a file that joined it (vs-model), or gero's
       -- yardstick that failed with its path (the ReferenceEvaluator's), is no headline
       first(observation_id ORDER BY chk = family DESC, kind <> 'tooling' DESC, severity DESC,
             max_abs_error DESC NULLS LAST, observation_id),
       max(severity), bool_and(seeded),
       CASE WHEN bool_and(why <> '') THEN min(why) ELSE '' END,
       coalesce(mode(kind) FILTER (kind <> 'tooling'), mode(kind)),
       coalesce(min(cause_key) FILTER (cause_key <> '' AND kind <> 'tooling'),
                min(cause_key) FILTER (cause_key <> ''), ''),
       CASE WHEN bool_or(scope = 'model') THEN 'model'
            ELSE array_to_string(list_sort(list_distinct(list(scope))), ',') END
FROM {table} GROUP BY finding_id
"""


class _FindingRow(NamedTuple):
    """A row of ``_FINDINGS_SQL``, read by name (its fields in the SELECT's order)."""

    finding_id: str
    family: str
    outlier: str
    template: str
    operator_key: str
    observations: int
    cases: int
    operators: list[str]
    dtypes: list[str]
    levels: list[str] | None
    contract_issues: int
    divergences: int
    executions: int
    max_abs_error: float | None
    representative_id: str
    severity: int
    seeded: bool
    cannot_assess: str
    kind: str
    cause_key: str
    scope: str


_REPRESENTATIVE_COLUMNS = ("observation_id", "case_id", "check", "dtype", "input_shapes",
                           "backend", "optimization", "reference", "result", "reason",
                           "max_abs_error", "max_ulp", "rtol", "atol", "artifact_path",
                           "median_abs_error", "p99_abs_error", "figures", "cause")


def _representatives(source: Queryable, ids: list[str]) -> dict[str, Representative]:
    if not ids:
        return {}
    columns = ", ".join(f'"{c}"' for c in _REPRESENTATIVE_COLUMNS)
    rows = source.query(f"SELECT {columns} FROM obs WHERE observation_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ids])
    reps = {}
    for r in rows:
        fields = dict(zip(_REPRESENTATIVE_COLUMNS, r, strict=True))
        fields["figures"] = str(fields["figures"] or "")  # NULL before schema 5
        rep = Representative(**{**fields, "cause": ""})
        # a row of a gero before the facts (schema 3, NULL): its cause read from its reason
        cause = r[-1] if r[-1] is not None else cause_of(rep.reason, rep.check)
        reps[str(r[0])] = replace(rep, cause=cause)
    return reps


def _levels(values: list[str]) -> tuple[str, ...]:
    known = [v for v in ort_levels() if v in values]
    return tuple(known + sorted(v for v in values if v not in known))


def read_findings(source: Queryable, table: str = MEMBERS_TABLE) -> list[Finding]:
    """The findings of a members table already built, in ``finding_order``: what can be
    assessed first, worst first, then what cannot be assessed by construction."""
    rows = [_FindingRow(*r) for r in source.query(_FINDINGS_SQL.format(table=table))]
    reps = _representatives(source, [str(r.representative_id) for r in rows])
    severity_class = {v: k for k, v in SEVERITY.items()}
    findings = []
    for r in rows:
        counts = {CONTRACT_ISSUE: r.contract_issues, DIVERGENCE: r.divergences,
                  EXECUTION: r.executions}
        result = severity_class.get(int(r.severity), EXECUTION)
        finding = Finding(
            finding_id=str(r.finding_id), title="", result=result, family=str(r.family),
            outlier=str(r.outlier), template=str(r.template), operator_key=str(r.operator_key),
            observations=int(r.observations), cases=int(r.cases), operators=tuple(r.operators),
            dtypes=tuple(r.dtypes), levels=_levels(list(r.levels or [])),
            class_counts={k: int(v) for k, v in counts.items()},
            max_abs_error=None if r.max_abs_error is None else float(r.max_abs_error),
            representative=reps[str(r.representative_id)], seeded_inputs=bool(r.seeded),
            cannot_assess=str(r.cannot_assess or ""), kind=str(r.kind or ""),
            cause_key=str(r.cause_key or ""), scope=str(r.scope or ""))
        findings.append(with_title(finding))
    findings.sort(key=finding_order)
    return findings


def non_passed_count(source: Queryable) -> int:
    rows = source.query("SELECT count(*) FROM obs WHERE result <> 'passed'")
    return int(rows[0][0]) if rows else 0
