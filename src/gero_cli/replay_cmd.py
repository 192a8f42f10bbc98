"""``gero replay``: verify an artifact directory (or bundle), re-run it, say what reproduced."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gero_cli.common import add_data_dir, add_format, data_dir, echo, split_list
from gero_cli.common import warn as _warn
from gero_runner.backends import path_label


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay", help="re-run an artifact directory or bundle and compare with the record",
        description="Verify every file against manifest.json, rebuild each path with the "
        "recorded session settings, re-run, and report per observation whether it "
        "reproduced bit-exact, within the stored tolerance, or not (with the max abs "
        "difference), and whether the result class is the same. Exit code 0 only when "
        "everything re-run reproduced, 1 when something did not (or nothing could be re-run), "
        "2 on bad input or tampering. Rows replay does not re-run (model-level verdicts, a "
        "runtime not installed here) are listed as not replayed.")
    p.add_argument("path", type=Path, metavar="ARTIFACT_DIR|BUNDLE.tar.gz",
                   help="an evidence directory or a bundle; a relative artifact_path as "
                   "exported (runs/…/artifacts/…) is found under --data-dir")
    add_data_dir(p)
    p.add_argument("--observation", default="", metavar="ID,...",
                   help="replay only these observations: ids or unique prefixes of them (the "
                        "short ids gero prints), comma-separated")
    add_format(p, "text", "json", what="verdict per observation")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds the re-run may take (default: %(default)g)")
    p.set_defaults(handler=main)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def main(args: argparse.Namespace) -> int:
    from gero.api import replay
    from gero_runner.evidence.replay import STATUS_LABELS

    def warn(message: str) -> None:
        _warn(args, message)

    report = replay(args.path, data_dir(args), split_list(args.observation), args.timeout,
                    warn)
    if args.format == "json":
        data = report.to_dict()
        data["directory"] = str(args.path)
        print(json.dumps(data, indent=2, default=str))
        return 0 if report.reproduced else 1
    echo(f"replay {args.path}: {report.case_id}, manifest verified ({report.manifest_files} "
         f"files), {len(report.observations)} observations from {report.rows_source}, "
         f"{report.seconds:.2f} s")
    for change in report.version_changes:
        echo(f"  note: installed version differs from the recorded one — {change}")
    for o in report.observations:
        path = path_label(o.backend, o.optimization)
        same = "stored result" if not o.replayed else "same result" if o.result_matches \
            else f"RESULT CHANGED {o.stored_result} → {o.replayed_result}"
        diff = "" if o.max_abs_difference is None or o.status == "bit_exact" else \
            f", max |Δ| {_fmt(o.max_abs_difference)}"
        echo(f"  {o.observation_id[:12]}  {o.check:<22} {path:<26} {o.output_name:<8} "
             f"{STATUS_LABELS[o.status]}{diff}; {same} ({o.stored_result})")
        if not o.reproduced and o.message:
            echo(f"      {o.message}")
    counts = report.counts()
    summary = ", ".join(f"{n} {STATUS_LABELS[s]}" for s, n in counts.items()
                        if s in STATUS_LABELS and n)
    replayed = len(report.observations) - counts["not_replayed"]
    verdict = "reproduced" if report.reproduced else "NOT reproduced" if replayed else \
        "nothing re-run"
    echo(f"{verdict}: {summary}; {counts['result_changed']} result class change(s)")
    return 0 if report.reproduced else 1
