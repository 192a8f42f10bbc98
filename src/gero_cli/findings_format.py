"""Findings as text lines and as a Markdown report to paste into an upstream bug, each with
its names escaped for where it goes (a terminal, Markdown)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from gero.query.finding_report import finding_section, number, status_line
from gero.query.findings import Finding, FindingsReport
from gero.query.whatif import WhatIf
from gero_runner.escape import for_markdown, for_terminal

REASON_CHARS = 110
"""Characters of the representative's reason a text line quotes (the JSON has it whole)."""


def text(report: FindingsReport, replay: Callable[[Finding], str]) -> list[str]:
    """A line per finding, then its worst observation's figure and the command that
    replays it (``replay``: the finding's replay command)."""
    lines = [status_line(report), ""]
    header = f"{'id':<13}{'class':<15}{'obs':>6}{'cases':>6}  {'status':<7}title"
    lines += [header, "-" * len(header)]
    for f in report.findings:
        lines.append(f"{f.finding_id:<13}{f.result:<15}{f.observations:>6}{f.cases:>6}  "
                     f"{f.status or '-':<7}{f.title}")
        lines += [f"{'':<13}worst   {worst_figure(f)}", f"{'':<13}replay  {replay(f)}"]
    for label, items in (("gone (their cases ran again and no longer show them)", report.gone),
                         ("unresolved (absent here, but not every case that showed them ran "
                          "again: not assessed)", report.unresolved)):
        if items:
            lines += ["", f"{label}:"]
            lines += [f"  {f.finding_id:<13}{f.observations:>6} obs  {f.title}" for f in items]
    return [for_terminal(line) for line in lines]


def worst_figure(f: Finding) -> str:
    """The representative in one line: its max |a−r|, its path and check, and the sentence
    that says what its gate measured (the figure a model gate or a contract decides on)."""
    r = f.representative
    reason = " ".join(r.reason.split())
    if len(reason) > REASON_CHARS:
        reason = reason[:REASON_CHARS - 1] + "…"
    path = f"{r.backend} {r.optimization}" if r.optimization != "-" else r.backend
    error = r.max_abs_error
    measured = (f"max |a−r| {number(error)} " if error is not None and math.isfinite(error)
                else "")  # nothing compared (a path failed): no figure
    if measured and r.p99_abs_error is not None and math.isfinite(r.p99_abs_error):
        # one bad element, or a bad tensor? (absent for rows of a gero before them)
        measured += (f"(p99 {number(r.p99_abs_error)}, median {number(r.median_abs_error)}) ")
    return f"{measured}on {path} against {r.reference} ({r.check}, {r.dtype}): {reason}"


def markdown(report: FindingsReport, root: Path, data_flag: str,
             members: Mapping[str, Collection[str]] | None = None) -> list[str]:
    """``members``: each finding's observations, whose stored localizations it shows (none
    given: its representative's only)."""
    lines = [f"# Findings of run {for_markdown(report.run_id)}", "",
             status_line(report, for_markdown), ""]
    for f in report.findings:
        lines += finding_section(f, root, data_flag, (members or {}).get(f.finding_id, ()))
    if report.gone:
        lines += ["## Gone since " + for_markdown(report.baseline_run_id), ""]
        lines += [f"- `{f.finding_id}` {for_markdown(f.title)} ({f.observations} observations)"
                  for f in report.gone]
    return lines


def whatif_text(w: WhatIf, findings: list[Finding]) -> list[str]:
    titles = {f.finding_id: f.title for f in findings}
    changes = ", ".join(
        f"{o.dtype} rtol={'(kept)' if o.rtol is None else f'{o.rtol:g}'} "
        f"atol={'(kept)' if o.atol is None else f'{o.atol:g}'}" for o in w.overrides.values())
    lines = [f"what-if {changes}: {w.regraded} observation(s) re-graded from stored figures; "
             f"{w.to_passed} would pass, {w.to_divergence} would diverge, "
             f"{w.undetermined} undetermined (the stored figures cannot tell)",
             f"not re-graded: {w.not_regraded} observation(s) whose class depends on more "
             "than the tolerance (NaN or inf, shapes, contracts, model checks)"]
    for c in w.findings:
        und = f", {c.undetermined} undetermined" if c.undetermined else ""
        lines.append(f"  {c.finding_id:<13}{c.would_pass:>5} of {c.members} would pass{und}  "
                     f"{titles.get(c.finding_id, '')}")
    for n in w.new_failures:
        lines.append(f"  {'(new)':<13}{n.count:>5} passed would diverge: {n.op_type} "
                     f"{n.dtype} on {n.paths}")
    return [for_terminal(line) for line in lines]
