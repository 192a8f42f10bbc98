"""``gero gc``: list (and with ``--delete`` remove) what no run references any more."""

from __future__ import annotations

import argparse
import sys

from gero_tui.cli.common import add_data_dir, data_dir


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "gc", help="list evidence no stored observation references (--delete removes it)",
        description="A dry run by default: lists the evidence directories that no stored "
        "observation references (left by killed runs) with their sizes. --delete removes "
        "them; nothing is removed while a run is running or an observation file is "
        "unreadable.")
    add_data_dir(p)
    p.add_argument("--delete", action="store_true", help="remove what is listed")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero_runner.errors import GeroError
    from gero_runner.storage import gc
    from gero_runner.storage.store import DataRoot

    root = DataRoot(data_dir(args))
    if not root.path.is_dir():
        raise GeroError(f"no data root at {root.path}")
    result = gc.apply(root) if args.delete else gc.plan(root)
    for g in result.garbage:
        print(f"{g.size_bytes / 1024:10.1f} KiB  {g.path}  ({g.why})")
    total = f"{len(result.garbage)} directories, {result.size_bytes / 1024:.1f} KiB"
    for blocker in result.blockers:
        print(f"gero: {blocker}", file=sys.stderr)
    if result.blockers and args.delete:
        print(f"nothing removed ({total} unreferenced)")
        return 1
    if args.delete:
        print(f"removed {total}")
    else:
        print(f"dry run: {total} unreferenced; `gero gc --delete` removes them")
    return 0
