"""``gero compact``: merge finished runs' observation files into the data root's store."""

from __future__ import annotations

import argparse
import sys

from gero_cli.common import add_data_dir, data_dir, echo


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compact", help="merge finished runs' observation files into one store file",
        description="Readers open one store file and the few runs not yet merged instead "
        "of one file per run. A run's end does this by itself once 8 finished runs are "
        "loose; runs written by a gero before the store get integer keys here. Safe while "
        "runs are running: it holds the data root's lock and leaves running and "
        "interrupted runs as they are.")
    add_data_dir(p)
    p.add_argument("--dry-run", action="store_true", help="list the runs it would merge")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import compact

    result = compact(data_dir(args), dry_run=args.dry_run)
    for name in result.missing:
        echo(f"gero: warning: {name} named by the store index is missing: its observations "
             "are lost; merged without it", file=sys.stderr)
    for run_id in result.repaired:
        echo(f"gero: the store index listed {run_id} as merged, but its own file was never "
             "replaced: merged again", file=sys.stderr)
    for why in result.skipped:
        echo(f"gero: left loose: {why}", file=sys.stderr)
    if args.dry_run:
        echo(f"dry run: would merge {len(result.runs)} runs into the store")
    elif not result.runs:
        left = f" (removed {len(result.removed)} files killed writers left)" \
            if result.removed else ""
        echo(f"nothing to merge{left}")
    else:
        echo(f"merged {len(result.runs)} runs into {result.store_file} ({result.rows} "
             f"observations; {result.keyed} given keys; {len(result.removed)} replaced "
             "files removed)")
    return 0
