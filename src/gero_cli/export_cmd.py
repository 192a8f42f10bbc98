"""``gero export``: a run's observations (optionally filtered) as CSV, Parquet, JSON or Markdown."""

from __future__ import annotations

import argparse
from pathlib import Path

from gero_cli.common import add_data_dir, data_dir, echo, warn


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gero.query.options import EXPORT_FORMATS

    p = sub.add_parser(
        "export", help="export a run's observations (csv, parquet, json, md report)",
        description="Write a run's observations to a file. --where takes a filter over "
        "observation columns, e.g. \"result <> 'passed' AND op_type IN ('Softmax', 'Exp') "
        "AND max_abs_error > 1e-6\"; allowed: column names, literals, = <> < <= > >=, "
        "LIKE, ILIKE, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT, parentheses. The md format "
        "is a report: run metadata, counts per result class, a per-operation table and the "
        "worst observations with their reasons.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix (default: newest)")
    p.add_argument("--where", default=None, metavar="FILTER", help="filter expression")
    p.add_argument("--format", choices=EXPORT_FORMATS, default=None,
                   help="output format (default: from the -o suffix)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE",
                   help="the file to write (its suffix names the format unless --format does)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import export
    from gero.query.export import WORST_LIMIT

    problems: list[str] = []
    try:
        exported = export(args.output, args.run, args.where, args.format, data_dir(args),
                          problems)
    finally:
        for problem in problems:
            warn(args, problem)
    result, fmt = exported.result, exported.result.format
    what = f"{result.rows} observations"
    if fmt == "md" and result.rows > WORST_LIMIT:
        # The report counts every row but lists only the worst one by one: say so.
        what = f"a report on {result.rows} observations (the {WORST_LIMIT} worst listed)"
    echo(f"wrote {what} of run {exported.run_id} to {result.path} ({fmt}, "
         f"{result.seconds:.2f} s)")
    return 0
