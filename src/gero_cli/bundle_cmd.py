"""``gero bundle``: package one observation's case as a self-contained, replayable .tar.gz."""

from __future__ import annotations

import argparse
from pathlib import Path

from gero_cli.common import add_data_dir, data_dir, echo, warn
from gero_runner.escape import for_shell


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bundle", help="package one observation's evidence for someone without the data root",
        description="Write the case of OBSERVATION_ID (graph, inputs, outputs, ONNX test data "
        "set, manifest, the observation rows as JSON and the exact replay command) to a "
        ".tar.gz that `gero replay FILE.tar.gz` verifies and re-runs.")
    p.add_argument("observation", metavar="OBSERVATION_ID", help="observation id or prefix")
    add_data_dir(p)
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.tar.gz",
                   help="the archive to write (a gzipped tar)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import bundle

    problems: list[str] = []
    try:
        bundled = bundle(args.observation, args.output, data_dir(args), problems)
    finally:
        for problem in problems:
            warn(args, problem)
    row, result = bundled.observation, bundled.bundle
    echo(f"wrote {result.path} ({result.files} files, {result.rows} observation rows, "
         f"{result.size_bytes / 1024:.1f} KiB) for {row['case_id']} {row['check']} "
         f"{row['backend']} {row['optimization']}: {row['result']}")
    # The path as given (directory included), not the name inside the bundle.
    echo(f"replay it with: gero replay {for_shell(args.output)}")
    return 0
