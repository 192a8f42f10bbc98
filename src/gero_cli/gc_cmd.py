"""``gero gc``: list (and with ``--apply`` remove) old runs and what no kept run references."""

from __future__ import annotations

import argparse
import sys

from gero_cli.common import add_data_dir, data_dir, echo
from gero_runner.storage.layout import OUTPUTS_DIR


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "gc", help="list old runs and unreferenced evidence (--apply removes them)",
        description="A dry run by default: lists what it would remove and the bytes freed. "
        "Without a retention rule: the evidence directories that no stored observation "
        "references (left by killed runs), the findings kept for runs that are gone "
        "(cache/findings) and the path outputs kept for reuse (cache/outputs) that no kept "
        "run used (with no run left, all of them). With --keep-runs N or --older-than DAYS: also "
        "the older runs (their directories and sightings), the stored observations no kept "
        "run sighted, and the evidence directories no kept observation references. "
        "--apply removes it all; nothing is removed while a run is running or an "
        "observation file is unreadable.")
    add_data_dir(p)
    rule = p.add_mutually_exclusive_group()
    rule.add_argument("--keep-runs", type=int, metavar="N", help="keep the newest N runs")
    rule.add_argument("--older-than", type=float, metavar="DAYS",
                      help="remove the runs that started more than DAYS days ago")
    p.add_argument("--apply", "--delete", dest="apply", action="store_true",
                   help="remove what is listed (--delete: the same)")
    p.set_defaults(handler=main)


def _size(n: int) -> str:
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    if n < 1024 ** 3:
        return f"{n / 1024 ** 2:.1f} MiB"
    return f"{n / 1024 ** 3:.1f} GiB"


def main(args: argparse.Namespace) -> int:
    from gero.api import gc

    result = gc(data_dir(args), keep_runs=args.keep_runs, older_than=args.older_than,
                apply=args.apply)
    for g in result.garbage:
        echo(f"{g.size_bytes / 1024:10.1f} KiB  {g.path}  ({g.why})")
    outputs = sum(1 for g in result.garbage if g.path.parts[:2] == OUTPUTS_DIR)
    directories = len(result.garbage) - len(result.runs) - outputs
    parts = [f"{len(result.runs)} runs"] if result.runs else []
    parts.append(f"{directories} directories")
    if outputs:
        parts.append(f"{outputs} kept path outputs")
    if result.observations:
        about = "" if args.apply else "about "
        change = (f"the store {about}{_size(result.store_bytes)} smaller"
                  if result.store_bytes >= 0 else
                  f"the store {about}{_size(-result.store_bytes)} larger: kept rows of the "
                  "old runs move into it")
        parts.append(f"{result.observations} stored observations no kept run sighted "
                     f"({change})")
    total = f"{', '.join(parts)}: {_size(max(0, result.size_bytes))}"
    for blocker in result.blockers:
        echo(f"gero: {blocker}", file=sys.stderr)
    if result.blockers and args.apply:
        echo(f"nothing removed ({total})")
        return 1
    if args.apply:
        echo(f"removed {total}")
    else:
        echo(f"dry run: {total} would be freed; `gero gc{_rule(args)} --apply` removes them")
    return 0


def _rule(args: argparse.Namespace) -> str:
    if args.keep_runs is not None:
        return f" --keep-runs {args.keep_runs}"
    if args.older_than is not None:
        return f" --older-than {args.older_than:g}"
    return ""
