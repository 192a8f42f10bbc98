"""One finding as a section of Markdown to paste into an upstream bug: what it covers, its
worst observation, where its error enters when `gero localize` found it (and the repro it
wrote), and the commands that replay, bundle, blame and localize it.

``gero findings --format md`` writes every finding's section; the explorer's Findings
screen writes one (``e``) beside its bundle.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from gero.query.findings import Finding, FindingsReport, Representative, path_name
from gero_runner.checks.gates import non_elementwise_gate
from gero_runner.storage.artifacts import LOCALIZE_DIR


def stored_localization(root: Path, f: Finding) -> dict[str, Any] | None:
    """The localization `gero localize` stored for the finding's representative, else for
    another observation of its evidence directory, one that wrote a repro first (a later
    `gero localize` without -o must not hide the repro an earlier one wrote); None when
    there is none (or it cannot be read)."""
    r = f.representative
    if not r.artifact_path:
        return None
    folder = root / r.artifact_path / LOCALIZE_DIR
    own = folder / f"{r.observation_id}.json"
    candidates = [own] + (sorted(p for p in folder.glob("*.json") if p != own)
                          if folder.is_dir() else [])
    found: list[dict[str, Any]] = []
    for path in candidates:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("origins"):
            found.append(data)
    with_repro = [d for d in found if d.get("repro")]
    chosen = with_repro or found
    return chosen[0] if chosen else None


def localization_lines(loc: dict[str, Any]) -> list[str]:
    """A stored localization as Markdown lines: its sentence, the origin, the repro."""
    lines = [f"Localized (`gero localize {str(loc.get('observation_id', ''))[:16]}`, "
             f"{loc.get('actual')} against {loc.get('reference')}): {loc.get('summary', '')}",
             ""]
    for o in loc.get("origins", [])[:3]:
        share = o.get("share")
        lines.append(f"- origin: `{o.get('node')}` ({o.get('op_type')}; "
                     f"{len(o.get('nodes') or [])} node(s)): inputs agree to "
                     f"{number(o.get('inputs_scaled_error'))} scaled, alone it differs by "
                     f"{number(o.get('local_scaled_error'))}"
                     + (f", {share:.0%} of the final error" if isinstance(share, float)
                        else ""))
    repro = loc.get("repro")
    if repro:
        lines.append(f"- repro (the origin's nodes with their real inputs, an ONNX backend "
                     f"test directory): `gero replay {shlex.quote(str(repro))}`")
    return [*lines, ""]


def figures_line(r: Representative) -> str:
    """The representative's error figures; its tolerance only where that decides it."""
    gate = non_elementwise_gate(r.check)
    head = f"- max |a−r| = {number(r.max_abs_error)}"
    if gate:
        return f"{head}; gated by {gate} (see the result line), not by rtol/atol"
    return (f"{head}, max ULP = {number(r.max_ulp)}, rtol = {number(r.rtol)}, "
            f"atol = {number(r.atol)}")


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def status_line(report: FindingsReport) -> str:
    head = (f"run {report.run_id}: {report.non_passed} non-passed observation(s) in "
            f"{len(report.findings)} finding(s)")
    if report.baseline_run_id is None:
        return head + " (no earlier run of this suite to compare with)"
    new = sum(f.status == "new" for f in report.findings)
    still = len(report.findings) - new
    tail = f"; {len(report.unresolved)} unresolved" if report.unresolved else ""
    return (f"{head}; against {report.baseline_run_id}: {new} new, {still} still, "
            f"{len(report.gone)} gone{tail}")


def finding_section(f: Finding, root: Path, data_flag: str) -> list[str]:
    r = f.representative
    replay = f"gero replay {shlex.quote(str(root / r.artifact_path))}"
    bundle = f"gero bundle {r.observation_id[:16]}{data_flag} -o {bundle_name(f)}"
    status = f" · {f.status}" if f.status else ""
    # A level outlier: which rewrite of that level made the difference.
    blame = ([f"gero blame {r.observation_id[:16]}{data_flag}"]
             if f.outlier.startswith("onnxruntime@") else [])
    two_paths = (r.result != "execution" and not str(r.reference).startswith("law:")
                 and not str(r.reference).endswith("+noise"))
    localize = [f"gero localize {r.observation_id[:16]}{data_flag}"] if two_paths else []
    loc = stored_localization(root, f)
    return [
        f"## {f.title}",
        "",
        f"`{f.finding_id}` · {f.result}{status} · outlier: {path_name(f.outlier)} · "
        f"{f.observations} observation(s) in {f.cases} case(s)",
        "",
        f"- operators: {', '.join(f.operators)}",
        f"- dtypes: {', '.join(f.dtypes)}",
        f"- optimisation levels: {', '.join(f.levels) or '—'}",
        f"- check family: `{f.family}`; reason template: `{f.template}`",
        "",
        f"Representative (worst) observation `{r.observation_id[:16]}`: {r.case_id}, "
        f"`{r.check}`, {r.backend} {r.optimization} against {r.reference}, input "
        f"{r.input_shapes}, {r.dtype}",
        "",
        f"- result: {r.result}: {r.reason}",
        figures_line(r),
        "",
        *(localization_lines(loc) if loc is not None else []),
        "```sh",
        replay,
        bundle,
        *blame,
        *localize,
        "```",
        "",
    ]



def bundle_name(f: Finding) -> str:
    """The bundle's file name the section's `gero bundle` command writes."""
    return f"finding-{f.finding_id}.tar.gz"


def finding_report(report: FindingsReport, f: Finding, root: Path, data_flag: str) -> list[str]:
    """One finding's report: a title naming the run, the run's status line, its section."""
    return [f"# Finding {f.finding_id} of run {report.run_id}", "", status_line(report), "",
            *finding_section(f, root, data_flag)]
