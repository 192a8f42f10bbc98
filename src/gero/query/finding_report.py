"""One finding as a section of Markdown to paste into an upstream bug: what it covers, its
worst observation, where its error enters when `gero localize` found it (and the repro it
wrote), and the commands that replay, bundle, blame and localize it.

``gero findings --format md`` writes every finding's section; the explorer's Findings
screen writes one (``e``) beside its bundle. Every name in it (a case, an operator or model,
a node, a reason quoting them, a path) is escaped (gero_runner.escape), so that none can
become a link, an image, HTML or a table cell where the report is pasted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from gero.query.findings import (
    MEMBERS_TABLE,
    Finding,
    FindingsReport,
    Queryable,
    Representative,
    ensure_members,
    path_name,
)
from gero.query.stored_localization import StoredLocalization, read_stored_localization
from gero_runner import backends
from gero_runner.checks.gates import non_elementwise_gate
from gero_runner.escape import (
    for_markdown,
    for_shell,
    for_terminal,
    markdown_code,
    markdown_fence,
)
from gero_runner.storage.artifacts import LOCALIZE_DIR


def finding_members(source: Queryable) -> dict[str, set[str]]:
    """Each finding's member observations (the members table, computed when not kept)."""
    ensure_members(source)
    members: dict[str, set[str]] = {}
    for oid, fid in source.query(f"SELECT observation_id, finding_id FROM {MEMBERS_TABLE}"):
        members.setdefault(str(fid), set()).add(str(oid))
    return members


def stored_localization(root: Path, f: Finding, members: Collection[str] = ()
                        ) -> StoredLocalization | None:
    """The localization `gero localize` stored for the finding's representative, else for
    another of its own ``members`` in the representative's evidence directory, one that
    wrote a repro first (a later `gero localize` without -o must not hide the repro an
    earlier one wrote); None when there is none with an origin (or none can be read). A
    localization of an observation that is not the finding's (a passed row of another path
    of the same case) is never its. Read through the checked reader: a field of the wrong
    type in a hand-edited file counts as absent."""
    r = f.representative
    if not r.artifact_path:
        return None
    folder = root / r.artifact_path / LOCALIZE_DIR
    own = folder / f"{r.observation_id}.json"
    candidates = [own] + (sorted(p for p in folder.glob("*.json")
                                 if p != own and p.stem in members)
                          if folder.is_dir() else [])
    found = [loc for loc in map(read_stored_localization, candidates)
             if loc is not None and loc.origins]
    with_repro = [loc for loc in found if loc.repro]
    chosen = with_repro or found
    return chosen[0] if chosen else None


def localization_lines(loc: StoredLocalization) -> list[str]:
    """A stored localization as Markdown lines: its sentence, the origin, the repro."""
    command = markdown_code(f"gero localize {loc.observation_id[:16]}")
    lines = [f"Localized ({command}, {for_markdown(loc.actual)} against "
             f"{for_markdown(loc.reference)}): {for_markdown(loc.summary)}", ""]
    for o in loc.origins[:3]:
        lines.append(f"- origin: {markdown_code(o.node)} ({for_markdown(o.op_type)}; "
                     f"{o.nodes} node(s)): inputs agree to {number(o.inputs_scaled_error)} "
                     f"scaled, alone it differs by {number(o.local_scaled_error)}"
                     + (f", {o.share:.0%} of the final error" if o.share is not None else ""))
    if loc.repro:
        lines.append(f"- repro (the origin's nodes with their real inputs, an ONNX backend "
                     f"test directory): {markdown_code(f'gero replay {for_shell(loc.repro)}')}")
    return [*lines, ""]


def figures_line(r: Representative) -> str:
    """The representative's error figures; its tolerance only where that decides it."""
    gate = non_elementwise_gate(r.check)
    head = f"- max |a−r| = {number(r.max_abs_error)}"
    if r.p99_abs_error is not None:
        head += f" (p99 {number(r.p99_abs_error)}, median {number(r.median_abs_error)})"
    if gate:
        return f"{head}; gated by {gate} (see the result line), not by rtol/atol"
    return (f"{head}, max ULP = {number(r.max_ulp)}, rtol = {number(r.rtol)}, "
            f"atol = {number(r.atol)}")


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def status_line(report: FindingsReport, shown: Callable[[object], str] = for_terminal) -> str:
    """The report in one line, its run ids as ``shown`` writes them (for a terminal, or
    ``for_markdown``)."""
    head = (f"run {shown(report.run_id)}: {report.non_passed} non-passed observation(s) in "
            f"{len(report.findings)} finding(s)")
    if report.baseline_run_id is None:
        return head + " (no earlier run of this suite to compare with)"
    new = sum(f.status == "new" for f in report.findings)
    still = len(report.findings) - new
    tail = f"; {len(report.unresolved)} unresolved" if report.unresolved else ""
    return (f"{head}; against {shown(report.baseline_run_id)}: {new} new, {still} still, "
            f"{len(report.gone)} gone{tail}")


def finding_section(f: Finding, root: Path, data_flag: str, members: Collection[str] = ()
                    ) -> list[str]:
    r = f.representative
    replay = f"gero replay {for_shell(root / r.artifact_path)}"
    bundle = f"gero bundle {r.observation_id[:16]}{data_flag} -o {bundle_name(f)}"
    status = f" · {f.status}" if f.status else ""
    # A level outlier (runtime@levels, of a runtime with levels): which rewrite of that
    # level made the difference.
    runtime, at, _ = f.outlier.partition("@")
    blame = ([f"gero blame {r.observation_id[:16]}{data_flag}"]
             if at and backends.levels(runtime) else [])
    two_paths = (r.result != "execution" and not str(r.reference).startswith("law:")
                 and not str(r.reference).endswith("+noise"))
    localize = [f"gero localize {r.observation_id[:16]}{data_flag}"] if two_paths else []
    loc = stored_localization(root, f, members)
    md = for_markdown

    def listed(values: Iterable[str]) -> str:
        return ", ".join(md(v) for v in values)

    return [
        f"## {md(f.title)}",
        "",
        f"{markdown_code(f.finding_id)} · {md(f.result)}{md(status)} · outlier: "
        f"{md(path_name(f.outlier))} · {f.observations} observation(s) in {f.cases} case(s)",
        "",
        f"- operators: {listed(f.operators)}",
        f"- dtypes: {listed(f.dtypes)}",
        f"- optimisation levels: {listed(f.levels) or '—'}",
        f"- check family: {markdown_code(f.family)}; reason template: "
        f"{markdown_code(f.template)}",
        "",
        f"Representative (worst) observation {markdown_code(r.observation_id[:16])}: "
        f"{md(r.case_id)}, {markdown_code(r.check)}, {md(r.backend)} {md(r.optimization)} "
        f"against {md(r.reference)}, input {md(r.input_shapes)}, {md(r.dtype)}",
        "",
        f"- result: {md(r.result)}: {md(r.reason)}",
        figures_line(r),
        "",
        *(localization_lines(loc) if loc is not None else []),
        *markdown_fence([replay, bundle, *blame, *localize], "sh"),
        "",
    ]



def bundle_name(f: Finding) -> str:
    """The bundle's file name the section's `gero bundle` command writes."""
    return f"finding-{f.finding_id}.tar.gz"


def finding_report(report: FindingsReport, f: Finding, root: Path, data_flag: str,
                   members: Collection[str] = ()) -> list[str]:
    """One finding's report: a title naming the run, the run's status line, its section."""
    return [f"# Finding {f.finding_id} of run {for_markdown(report.run_id)}", "",
            status_line(report, for_markdown), "",
            *finding_section(f, root, data_flag, members)]
