"""``gero diff``: regressions and fixes between two runs, for people and for CI.

Text and Markdown show the runs' names escaped (a case id, an output name, a reason quoting
a node); JSON keeps the raw values, escaped by JSON itself."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from gero_cli.common import (
    EXIT_CLEAN,
    EXIT_FOUND,
    add_data_dir,
    add_format,
    add_output,
    data_dir,
    warn,
    write_report,
)
from gero_runner.escape import for_markdown, for_terminal

if TYPE_CHECKING:
    from gero.query.diff import DiffEntry, DiffReport

_TITLES = {"regression": "Regressions", "fix": "Fixes", "changed": "Other class changes",
           "incompatible": "Without a compatible baseline (graph or inputs changed)",
           "new": "New observations", "missing": "Missing observations"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gero.query.options import DIFF_FACTOR

    p = sub.add_parser(
        "diff", help="compare two runs: regressions, fixes, new and missing observations",
        description="Pair observations only where the baseline is compatible: same case, "
        "check, backend, optimisation level, output and reference, and the same graph hash "
        "and input hash. A regression is a pair that passed in BASE_RUN and does not in "
        "CURRENT_RUN, or whose max abs error grew more than FACTOR times (default "
        f"{DIFF_FACTOR:g}×) over the larger of the baseline's max abs error and the "
        "current atol. A fix did not pass and passes now. Exit status 1 when there are "
        "regressions, 0 otherwise, so that it gates CI; --format junit writes a report "
        "CI systems display (a failing test case per regression, with its replay command).")
    p.add_argument("base", metavar="BASE_RUN", nargs="?",
                   help="baseline run id or unique prefix (with --backend: the run, newest "
                        "by default)")
    p.add_argument("current", metavar="CURRENT_RUN", nargs="?",
                   help="current run id or unique prefix")
    p.add_argument("--backend", default=None, metavar="RUNTIME[/SETTING]",
                   help="compare runtimes within one run: this runtime (every setting, or the "
                        "one named) ...")
    p.add_argument("--against", default=None, metavar="RUNTIME[/SETTING]",
                   help="... against this one as the baseline (e.g. onnxruntime/all)")
    add_data_dir(p)
    add_format(p, "text", "json", "md", "junit", what="comparison")
    add_output(p)
    p.add_argument("--factor", type=float, default=DIFF_FACTOR,
                   help="error growth that counts as a regression (default: %(default)g)")
    p.add_argument("--limit", type=int, default=50,
                   help="entries listed per section in text/md (0: all; JSON lists all)")
    p.set_defaults(handler=main)


def _path(e: DiffEntry) -> str:
    return e.backend if e.optimization == "-" else f"{e.backend}/{e.optimization}"


def main(args: argparse.Namespace) -> int:
    import gero
    from gero.junit import diff_report
    from gero.query.diff import diff_backends
    from gero_runner.errors import GeroError

    if (args.backend is None) != (args.against is None):
        raise GeroError("--backend and --against go together: gero diff [RUN] --backend "
                        "openvino --against onnxruntime/all")
    if args.backend is not None:
        if args.current is not None:
            raise GeroError("with --backend/--against, give at most one run (the runs' own "
                            "runtimes are compared)")
    elif args.base is None or args.current is None:
        raise GeroError("give BASE_RUN and CURRENT_RUN, or compare runtimes of one run with "
                        "--backend A --against B")
    # The run whose observations are under judgement: CURRENT_RUN, or the one run compared
    # runtime against runtime.
    with gero.open_run(args.current if args.backend is None else args.base,
                       data_dir(args)) as current:
        if args.backend is not None:
            report = diff_backends(current.data_dir, current.id, args.backend, args.against,
                                   args.factor)
        else:
            report = current.diff(args.base, args.factor)
        for problem in report.problems:
            warn(args, problem)
        if args.format == "junit":
            regressed = [e.current_id for e in report.of("regression") if e.current_id]
            paths = current.artifact_paths(regressed)
            text = diff_report(report, lambda oid: current.replay_command(oid, paths[oid])
                               if oid in paths else None)
        elif args.format == "json":
            text = json.dumps(report.to_dict(), indent=2) + "\n"
        else:
            text = "\n".join(_lines(report, args.format == "md", args.limit)) + "\n"
    write_report(args, text, f"diff {report.base_run} → {report.current_run}")
    return EXIT_FOUND if report.has_regressions else EXIT_CLEAN


def _lines(report: DiffReport, md: bool, limit: int) -> list[str]:
    from gero.query.diff import KINDS

    counts = report.counts()
    title = f"diff {report.base_run} → {report.current_run} (error-growth factor " \
            f"{report.factor:g}×)"
    out = [f"# {for_markdown(title)}\n" if md else for_terminal(title)]
    summary = [("compatible pairs", counts["compatible_pairs"]),
               ("unchanged", counts["unchanged"])] + [(_TITLES[k].lower(), counts[k])
                                                      for k in KINDS]
    if md:
        out.append("| | count |\n|---|---|")
        out.append("\n".join(f"| {name} | {n} |" for name, n in summary))
    else:
        out.append("  " + ", ".join(f"{name}: {n}" for name, n in summary))
    for kind in KINDS:
        entries = report.of(kind)
        if not entries:
            continue
        shown = entries if limit <= 0 else entries[:limit]
        more = f" (first {len(shown)} of {len(entries)})" if len(shown) < len(entries) else ""
        out.append(f"\n## {_TITLES[kind]}{more}\n" if md else f"\n{_TITLES[kind]}{more}:")
        if md:
            out.append("| case | check | path | output | base | current | why |\n"
                       "|---|---|---|---|---|---|---|")
        for e in shown:
            ident = (e.current_id or e.base_id or "")[:12]
            cells = (e.case_id, e.check, _path(e), e.output_name, e.base_result or "—",
                     e.current_result or "—", e.why)
            if md:
                out.append("| " + " | ".join(for_markdown(c) for c in cells) + " |")
            else:
                out.append(for_terminal(f"  {ident}  {e.case_id}  {e.check}  {_path(e)}  "
                                        f"{e.output_name}: {e.why}"))
    return out
