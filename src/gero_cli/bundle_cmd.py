"""``gero bundle``: package one observation's case as a self-contained, replayable .tar.gz."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from gero_cli.common import add_data_dir, data_dir, warn
from gero_runner.storage.store import DataRoot


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bundle", help="package one observation's evidence for someone without the data root",
        description="Write the case of OBSERVATION_ID (graph, inputs, outputs, ONNX test data "
        "set, manifest, the observation rows as JSON and the exact replay command) to a "
        ".tar.gz that `gero replay FILE.tar.gz` verifies and re-runs.")
    p.add_argument("observation", metavar="OBSERVATION_ID", help="observation id or prefix")
    add_data_dir(p)
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.tar.gz")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero_runner.errors import GeroError
    from gero_runner.evidence.bundle import create_bundle
    from gero_runner.storage.reader import resolve_observation

    name = args.output.name
    if not name.endswith((".tar.gz", ".tgz")):
        # The bundle is a gzipped tar whatever the name says: a .zip would not open as one.
        stem = name.split(".")[0] or "bundle"
        raise GeroError(f"-o {args.output}: a bundle is a .tar.gz; name it {stem}.tar.gz")
    root = DataRoot(data_dir(args))
    problems: list[str] = []
    row = resolve_observation(root, args.observation, problems)
    for problem in problems:
        warn(args, problem)
    result = create_bundle(root, row, args.output)
    print(f"wrote {result.path} ({result.files} files, {result.rows} observation rows, "
          f"{result.size_bytes / 1024:.1f} KiB) for {row['case_id']} {row['check']} "
          f"{row['backend']} {row['optimization']}: {row['result']}")
    # The path as given (directory included), not the name inside the bundle.
    print(f"replay it with: gero replay {shlex.quote(str(args.output))}")
    return 0
