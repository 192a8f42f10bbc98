"""JUnit XML reports, the test-result format GitLab, GitHub Actions and Jenkins display.

One ``<testcase>`` per regression of a ``gero diff`` (or per finding of ``gero findings``):
a failure whose text carries the reason, the representative's figures and the command
that replays it. The layout follows the Jenkins JUnit schema that those systems read
(``tests/junit.xsd`` validates it): ``testsuites > testsuite > testcase > failure``.
"""

from __future__ import annotations

import math
import socket
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gero_runner.escape import for_terminal

if TYPE_CHECKING:
    from gero.query.diff import DiffEntry, DiffReport
    from gero.query.findings import Finding, FindingsReport


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: passed unless ``failure`` or ``skipped`` says otherwise."""

    classname: str
    name: str
    failure: str | None = None
    """The failure's one-line message; ``text`` holds the details."""
    failure_type: str = ""
    skipped: str | None = None
    text: str = ""
    properties: dict[str, str] = field(default_factory=dict)


def _num(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _clean(text: str) -> str:
    """Text a CI page shows: control characters and bidi overrides (a node's name, an error
    quoting it) as visible escapes, like on a terminal; nor can XML 1.0 carry most of them,
    or U+FFFE and U+FFFF. The XML library escapes the rest (``<``, ``&``, quotes)."""
    return for_terminal(text, newlines=True).translate(_NONCHARACTERS)


_NONCHARACTERS = {0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"}


def document(suite: str, cases: Sequence[Case], properties: dict[str, str],
             timestamp: datetime | None = None) -> str:
    """The XML text of one test suite holding ``cases``."""
    failures = sum(c.failure is not None for c in cases)
    skipped = sum(c.skipped is not None and c.failure is None for c in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped), "time": "0"}
    root = ET.Element("testsuites", {"name": _clean(suite), **counts})
    stamp = (timestamp or datetime.now(UTC)).replace(microsecond=0)
    testsuite = ET.SubElement(root, "testsuite", {
        "name": _clean(suite), **counts,
        "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S"), "hostname": socket.gethostname()})
    props = ET.SubElement(testsuite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", {"name": key, "value": _clean(value)})
    for case in cases:
        element = ET.SubElement(testsuite, "testcase", {
            "classname": _clean(case.classname), "name": _clean(case.name), "time": "0"})
        if case.failure is not None:
            failure = ET.SubElement(element, "failure", {
                "message": _clean(case.failure), "type": case.failure_type or "failure"})
            failure.text = _clean(case.text)
        elif case.skipped is not None:
            ET.SubElement(element, "skipped", {"message": _clean(case.skipped)})
            if case.text:
                ET.SubElement(element, "system-out").text = _clean(case.text)
        elif case.text:
            ET.SubElement(element, "system-out").text = _clean(case.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"


def _path(e: DiffEntry) -> str:
    return e.backend if e.optimization == "-" else f"{e.backend}/{e.optimization}"


def _diff_case(e: DiffEntry, replay: Callable[[str], str | None]) -> Case:
    name = f"{e.case_id} {e.check} {_path(e)} {e.output_name}"
    op = e.case_id.split("/")[1] if e.case_id.count("/") >= 2 else e.case_id
    classname = f"gero.diff.{op}"
    figures = (f"result: {e.base_result or '—'} → {e.current_result or '—'}\n"
               f"max abs error: {_num(e.base_error)} → {_num(e.current_error)}\n"
               f"reference: {e.reference}\n"
               f"observation: {e.base_id or '—'} → {e.current_id or '—'}")
    command = replay(e.current_id) if e.current_id else None
    text = f"{e.why}\n\n{figures}"
    if command:
        text += f"\n\nreplay: {command}"
    if e.kind == "regression":
        return Case(classname, name, failure=e.why, failure_type="regression", text=text)
    if e.kind == "incompatible":
        return Case(classname, name, skipped=e.why, text=text)
    return Case(classname, name, text=text)  # a fix


def diff_report(report: DiffReport, replay: Callable[[str], str | None]) -> str:
    """``gero diff --format junit``: each regression a failing test case, each fix a passing
    one, each slot without a compatible baseline a skipped one; a diff without regressions
    still has one passing case saying how many pairs it compared."""
    counts = report.counts()
    cases = [_diff_case(e, replay) for kind in ("regression", "fix", "incompatible")
             for e in report.of(kind)]
    if not report.has_regressions:
        cases.insert(0, Case("gero.diff", "no precision regressions",
                             text=f"{counts['compatible_pairs']} compatible pairs compared "
                                  f"(error-growth factor {report.factor:g}×)"))
    properties = {"base_run": report.base_run, "current_run": report.current_run,
                  "factor": f"{report.factor:g}",
                  **{k: str(v) for k, v in counts.items()}}
    return document(f"gero diff {report.base_run} → {report.current_run}", cases, properties)


def _finding_text(f: Finding, replay: str, bundle: str) -> str:
    r = f.representative
    path = r.backend if r.optimization in ("-", "") else f"{r.backend} {r.optimization}"
    status = f", {f.status}" if f.status else ""
    return "\n".join([
        f"{f.title}",
        "",
        f"finding {f.finding_id}: {f.result}{status}; outlier {f.outlier}; "
        f"{f.observations} observation(s) in {f.cases} case(s)",
        f"operators: {', '.join(f.operators)}",
        f"dtypes: {', '.join(f.dtypes)}",
        f"optimisation levels: {', '.join(f.levels) or '—'}",
        "",
        f"representative (worst) observation {r.observation_id}:",
        f"  {r.case_id}, {r.check}, {path} against {r.reference}, input {r.input_shapes}, "
        f"{r.dtype}",
        f"  {r.result}: {r.reason}",
        f"  max |a−r| = {_num(r.max_abs_error)}, max ULP = {_num(r.max_ulp)}, "
        f"rtol = {_num(r.rtol)}, atol = {_num(r.atol)}",
        "",
        f"replay: {replay}",
        f"bundle: {bundle}",
    ])


def findings_report(report: FindingsReport, replay: Callable[[Finding], str],
                    bundle: Callable[[Finding], str]) -> str:
    """``gero findings --format junit``: each finding a failing test case (its text: the
    reason, the representative's figures, its replay and bundle commands), each finding of
    the baseline that is gone a passing one, each unresolved one skipped; a run without
    findings still has one passing case."""
    cases = [Case(f"gero.findings.{f.family}", f"{f.finding_id} {f.title}", failure=f.title,
                  failure_type=f.result, text=_finding_text(f, replay(f), bundle(f)))
             for f in report.findings]
    cases += [Case(f"gero.findings.{f.family}", f"{f.finding_id} {f.title}",
                   text=f"gone since {report.baseline_run_id}: its cases ran again and passed")
              for f in report.gone]
    cases += [Case(f"gero.findings.{f.family}", f"{f.finding_id} {f.title}",
                   skipped="absent here, but its cases did not all run again or fail otherwise")
              for f in report.unresolved]
    if not report.findings:
        cases.insert(0, Case("gero.findings", "no findings",
                             text=f"run {report.run_id}: every observation passed"))
    properties = {"run": report.run_id, "baseline_run": report.baseline_run_id or "",
                  "findings": str(len(report.findings)), "non_passed": str(report.non_passed),
                  "gone": str(len(report.gone)), "unresolved": str(len(report.unresolved))}
    return document(f"gero findings {report.run_id}", cases, properties)
