"""``gero findings``: a run's non-passed observations grouped by cause, worst first."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from gero_tui.cli.common import add_data_dir, data_dir


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "findings", help="the causes behind a run's non-passed observations, worst first",
        description="Group every non-passed observation of a run into findings (one cause "
        "each: check family, outlier path, reason template, operator), mark each new or "
        "still against the previous run of the same suite (or --baseline) and list the "
        "baseline's findings that are gone. --rtol/--atol re-grade the stored figures "
        "under other tolerances without running anything.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix (default: newest)")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="run to compare with (default: the previous run of the same suite)")
    p.add_argument("--rtol", action="append", default=[], metavar="DTYPE=V",
                   help="what-if: re-grade this dtype's rows under this rtol")
    p.add_argument("--atol", action="append", default=[], metavar="DTYPE=V",
                   help="what-if: re-grade this dtype's rows under this atol")
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero_tui.cli.findings_format import markdown, text, whatif_text
    from gero_tui.query.finding_status import findings_report
    from gero_tui.query.whatif import parse_whatif

    overrides = parse_whatif(args.rtol, args.atol)
    root = data_dir(args)
    problems: list[str] = []
    report = findings_report(root, args.run, args.baseline, problems)
    for problem in problems:
        print(f"gero: warning: {problem}", file=sys.stderr)
    whatif = None
    if overrides:
        from gero_runner.storage.reader import open_run
        from gero_tui.query.findings import compute_findings
        from gero_tui.query.whatif import prepare, what_if

        source = open_run(root, report.run_id)
        try:
            compute_findings(source)
            prepare(source)
            whatif = what_if(source, overrides)
        finally:
            source.close()
    if args.format == "json":
        out = report.as_dict()
        if whatif is not None:
            out["what_if"] = whatif.as_dict()
        print(json.dumps(out, indent=2, default=str))
        return 0
    data_flag = "" if args.data_dir is None else f" --data-dir {shlex.quote(str(root))}"
    lines = (markdown(report, Path(root), data_flag) if args.format == "md"
             else text(report))
    if whatif is not None:
        lines += ["", *whatif_text(whatif, report.findings)]
    try:
        print("\n".join(lines))
    except UnicodeEncodeError:
        sys.stdout.buffer.write(("\n".join(lines) + "\n").encode())
    return 0
