"""``gero tui``: the explorer."""

from __future__ import annotations

import argparse
import gc
import sys

from gero_cli.common import add_data_dir, data_dir, echo


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "tui", help="open the explorer on a run (the newest by default)",
        description="Open the explorer (a terminal UI) on a run: the overview (counts by "
        "class, per runtime and operation, the verdict card of each model), the findings "
        "worst first, and every observation in a table you filter, sort and open (figures, "
        "tensors side by side, inputs, histogram, replay, blame, localize). `gero` alone "
        "opens it on a terminal. Press ? inside for the keys.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix")
    p.add_argument("--screen", default="overview", choices=("overview", "evaluations", "findings"),
                   help="screen to open on (escape goes back to the overview)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    # No garbage collection while Textual is imported and the first screen is built (its
    # many small objects cost ~40 ms of collections); the app turns it back on (on_mount).
    gc.disable()
    # The run opens (and the table's first page is read) on another thread while Textual
    # is imported: deferred here because it costs ~0.3 s and only this command needs it.
    from gero_tui.app.prefetch import Prefetch

    prefetch = Prefetch(data_dir(args), args.run, first_page=args.screen == "evaluations",
                        findings=args.screen != "evaluations",
                        findings_now=args.screen == "findings")
    from gero_tui.app.app import GeroApp

    app = GeroApp(data_dir(args), args.run, screen=args.screen, prefetch=prefetch)
    app.run()
    if app.return_code not in (0, None):
        # An unexpected exception ended it: one line (the traceback is in a file).
        echo(app.crash_line or "gero: error: the explorer stopped on an unexpected error",
             file=sys.stderr)
        return 1
    return 0
