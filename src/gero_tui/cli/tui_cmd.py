"""``gero tui``: the explorer."""

from __future__ import annotations

import argparse

from gero_tui.cli.common import add_data_dir, data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("tui", help="open the explorer on a run (the newest by default)")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix")
    p.add_argument("--screen", default="overview", choices=("overview", "evaluations"),
                   help="screen to open on (escape goes back to the overview)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    # Deferred: Textual costs ~0.2 s to import and only this command needs it.
    from gero_tui.app.app import GeroApp

    GeroApp(data_dir(args), args.run, screen=args.screen).run()
    return 0
