"""``gero findings``: a run's non-passed observations grouped by cause, worst first."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gero_cli.common import (
    EXIT_CLEAN,
    EXIT_FOUND,
    add_data_dir,
    add_format,
    add_output,
    check_output,
    data_dir,
    warn,
    write_report,
)
from gero_runner.escape import for_markdown, for_shell


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "findings", help="the causes behind a run's non-passed observations, worst first",
        description="Group every non-passed observation of a run into findings (one cause "
        "each: check family, outlier path, reason template, operator), mark each new or "
        "still against the previous run of the same suite (or --baseline) and list the "
        "baseline's findings that are gone. --rtol/--atol re-grade the stored figures "
        "under other tolerances without running anything. --format junit writes a report CI "
        "systems display: a failing test case per finding with the representative's figures "
        "and its replay command. Exit status 1 when the run has findings.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix (default: newest)")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="run to compare with (default: the previous run of the same suite)")
    p.add_argument("--rtol", action="append", default=[], metavar="DTYPE=V",
                   help="what-if: re-grade this dtype's rows under this rtol")
    p.add_argument("--atol", action="append", default=[], metavar="DTYPE=V",
                   help="what-if: re-grade this dtype's rows under this atol")
    add_format(p, "text", "json", "md", "junit", what="findings")
    add_output(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import gero
    from gero.junit import findings_report as junit_report
    from gero.query.assessable import TOOLING_NOTE
    from gero.query.whatif import parse_whatif
    from gero_cli.findings_format import markdown, text, whatif_text

    overrides = parse_whatif(args.rtol, args.atol)
    check_output(args)
    root = data_dir(args)
    with gero.open_run(args.run, root) as run:
        report = run.findings_report(args.baseline)
        for problem in [*run.warnings, *filter(None, [report.baseline_problem])]:
            warn(args, problem)
        # notes on gero's own tooling an older gero recorded as failures: no found problem
        code = EXIT_FOUND if any(f.cannot_assess != TOOLING_NOTE for f in report.findings) \
            else EXIT_CLEAN
        if args.format == "junit":
            write_report(args, junit_report(
                report, lambda f: run.replay_command(f.representative.observation_id,
                                                     f.representative.artifact_path),
                lambda f: run.bundle_command(f.representative.observation_id,
                                             f"finding-{f.finding_id}.tar.gz")),
                f"findings of run {run.id}")
            return code
    whatif = None
    if overrides:
        from gero.query.findings import ensure_members
        from gero.query.whatif import prepare, what_if
        from gero_runner.storage.reader import open_run

        source = open_run(root, report.run_id)
        try:
            ensure_members(source)
            prepare(source)
            whatif = what_if(source, overrides)
        finally:
            source.close()
    if args.format == "json":
        out = report.as_dict()
        if whatif is not None:
            out["what_if"] = whatif.as_dict()
        write_report(args, json.dumps(out, indent=2, default=str) + "\n",
                     f"findings of run {report.run_id}")
        return code
    data_flag = "" if args.data_dir is None else f" --data-dir {for_shell(root)}"
    lines = (markdown(report, Path(root), data_flag, _members(Path(root), report.run_id))
             if args.format == "md"
             else text(report, lambda f: run.replay_command(f.representative.observation_id,
                                                            f.representative.artifact_path)))
    if whatif is not None:
        extra = whatif_text(whatif, report.findings)
        lines += ["", *([for_markdown(line) for line in extra] if args.format == "md" else extra)]
    if args.output is not None:
        write_report(args, "\n".join(lines) + "\n", f"findings of run {report.run_id}")
        return code
    try:
        print("\n".join(lines))
    except UnicodeEncodeError:
        sys.stdout.buffer.write(("\n".join(lines) + "\n").encode())
    return code


def _members(root: Path, run_id: str) -> dict[str, set[str]]:
    """Each finding's observations: a finding shows only its own rows' localizations."""
    from gero.query.finding_report import finding_members
    from gero_runner.storage.reader import open_run

    source = open_run(root, run_id)
    try:
        return finding_members(source)
    finally:
        source.close()
