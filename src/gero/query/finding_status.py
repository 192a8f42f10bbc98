"""Findings across runs: each is ``new`` or ``still`` against a baseline, or ``gone`` from it.

A baseline finding is ``gone`` only when the cases that showed it ran again and passed:
every observation slot it held (case, check, path, setting, output, reference) was
observed again and passed there, or fails only under a cause the baseline already had
(a tolerance tightened and restored: the extra cause is gone, the older one is still
there). A slot that did not run (a run with fewer operators or dtypes) never makes a
finding gone, nor does one that now fails under a ``new`` cause (the failure changed, it
did not go): such baseline findings are listed as unresolved, so nothing silently
disappears.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gero.query.findings import (
    MEMBERS_TABLE,
    Finding,
    FindingsReport,
    Queryable,
    compute_findings,
    ensure_members,
    non_passed_count,
)
from gero_runner.errors import StoreError
from gero_runner.storage.layout import run_ids
from gero_runner.storage.reader import open_run
from gero_runner.storage.runs import read_info, resolve_run

NEW = "new"
STILL = "still"
GONE = "gone"


def previous_run(data_root: Path, run_id: str) -> str | None:
    """The newest run of the same suite before ``run_id``, or None."""
    suite = read_info(data_root, run_id).suite
    ids = run_ids(data_root)
    earlier = ids[:ids.index(run_id)] if run_id in ids else []
    for rid in reversed(earlier):
        if read_info(data_root, rid).suite == suite:
            return rid
    return None


_SLOT = ("case_id || '|' || \"check\" || '|' || backend || '|' || optimization || '|' || "
         "output_name || '|' || reference")
"""An observation's slot: the same comparison in another run (its figures may differ)."""


def _slots_of(source: Queryable, finding_ids: list[str]) -> dict[str, list[str]]:
    ensure_members(source)
    rows = source.query(f"SELECT m.finding_id, list(DISTINCT {_SLOT}) FROM "
                        f"(SELECT finding_id, observation_id FROM {MEMBERS_TABLE}) m "
                        "JOIN obs USING (observation_id) "
                        "WHERE m.finding_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY 1",
                        [finding_ids])
    return {str(a): list(b) for a, b in rows}


def _resolved(source: Queryable, slots: list[str], new: list[str]) -> set[str]:
    """Of ``slots``, those the run observed where each row passed or belongs to a cause the
    baseline knew too (not to one of the ``new`` findings)."""
    ensure_members(source)
    return {str(r[0]) for r in source.query(
        f"SELECT {_SLOT} AS slot FROM obs LEFT JOIN "
        f"(SELECT observation_id, finding_id FROM {MEMBERS_TABLE}) m USING (observation_id) "
        "WHERE slot IN (SELECT unnest(?::VARCHAR[])) GROUP BY slot "
        "HAVING bool_and(result = 'passed' OR m.finding_id NOT IN "
        "(SELECT unnest(?::VARCHAR[])))", [slots, new])}


def compare(current: Queryable, current_findings: list[Finding], baseline: Queryable,
            baseline_findings: list[Finding]) -> tuple[list[Finding], list[Finding],
                                                       list[Finding]]:
    """(current findings with status, gone baseline findings, unresolved baseline findings).

    Both sources must hold their members table (``compute_findings`` writes it)."""
    before = {f.finding_id for f in baseline_findings}
    now = {f.finding_id for f in current_findings}
    marked = [replace(f, status=STILL if f.finding_id in before else NEW)
              for f in current_findings]
    absent = [f for f in baseline_findings if f.finding_id not in now]
    if not absent:
        return marked, [], []
    slots = _slots_of(baseline, [f.finding_id for f in absent])
    new = [f.finding_id for f in marked if f.status == NEW]
    passed = _resolved(current, sorted({s for ss in slots.values() for s in ss}), new)
    gone: list[Finding] = []
    unresolved: list[Finding] = []
    for f in absent:
        its = slots.get(f.finding_id, [])
        ok = bool(its) and all(s in passed for s in its)
        (gone if ok else unresolved).append(replace(f, status=GONE if ok else ""))
    return marked, gone, unresolved


def report_for(current: Queryable, data_root: Path, run_id: str,
               baseline: str | None = None) -> FindingsReport:
    """The findings of an open run (its members table written into it), with status
    against ``baseline`` (default: the previous run of the same suite, if any)."""
    findings = compute_findings(current)
    # counted on the rows: a row that hits two registered defects is in both findings
    non_passed = non_passed_count(current)
    base_id = resolve_run(data_root, baseline) if baseline else previous_run(data_root, run_id)
    if base_id is None or base_id == run_id:
        return FindingsReport(run_id, findings, None, non_passed=non_passed)
    try:
        base = open_run(data_root, base_id)
    except StoreError as e:
        if baseline:  # asked for by name: the comparison the user wanted cannot be made
            raise
        # The previous run's files are lost: the findings stand, without a status.
        return FindingsReport(run_id, findings, None, non_passed=non_passed,
                              baseline_problem=f"not compared with the previous run: {e}")
    with base:
        marked, gone, unresolved = compare(current, findings, base, compute_findings(base))
    return FindingsReport(run_id, marked, base_id, gone, unresolved, non_passed=non_passed)


def findings_report(data_root: Path, run: str | None = None, baseline: str | None = None,
                    problems: list[str] | None = None) -> FindingsReport:
    """A run's findings (the newest run by default), with status against ``baseline``;
    files the reader left out are added to ``problems``."""
    with open_run(data_root, run) as current:
        if problems is not None:
            problems += current.problems
        return report_for(current, data_root, current.run_id, baseline)
