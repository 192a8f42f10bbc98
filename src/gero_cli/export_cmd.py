"""``gero export``: a run's observations (optionally filtered) as CSV, Parquet, JSON or Markdown."""

from __future__ import annotations

import argparse
from pathlib import Path

from gero_cli.common import add_data_dir, data_dir, warn


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gero.query.export import FORMATS

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
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="output format (default: from the -o suffix)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.query.export import FORMATS, WORST_LIMIT, export_rows
    from gero.query.filters import parse_filter
    from gero_runner.errors import GeroError
    from gero_runner.storage.reader import open_run

    fmt = args.format or args.output.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise GeroError(f"cannot tell the format from {args.output.name!r}; give --format "
                        f"{'|'.join(FORMATS)}")
    flt = parse_filter(args.where)  # validate before touching the data root
    view = open_run(data_dir(args), args.run)
    for problem in view.problems:
        warn(args, problem)
    result = export_rows(view, flt, fmt, args.output)
    what = f"{result.rows} observations"
    if fmt == "md" and result.rows > WORST_LIMIT:
        # The report counts every row but lists only the worst one by one: say so.
        what = f"a report on {result.rows} observations (the {WORST_LIMIT} worst listed)"
    print(f"wrote {what} of run {view.run_id} to {result.path} ({fmt}, {result.seconds:.2f} s)")
    return 0
