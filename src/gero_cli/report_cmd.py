"""``gero report``: a run as one self-contained HTML page, for a browser, a CI artifact or a
bug report."""

from __future__ import annotations

import argparse
from pathlib import Path

from gero_cli.common import EXIT_CLEAN, add_data_dir, data_dir, echo, warn


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="a run as one self-contained HTML page (offline, no script)",
        description="Write one HTML file a browser opens offline: what was compared "
        "(runtimes, settings, versions, CPU, tolerances with overrides), counts by class, "
        "the findings worst first (representative figures, error histogram, localized "
        "origin where stored, replay and bundle commands), precision across operations (a "
        "bar per operation whose segments link to their worst rows) and inference time with "
        "context; against a baseline, which findings are new, still there or gone. Inline CSS "
        "and SVG only: no script, nothing fetched. It summarises (a million observations "
        "make a small page); every row stays in the data root. Each finding's evidence "
        "(graph, inputs, SHA-256 manifest) is copied to the folder NAME-evidence beside "
        "FILE.html, which the page links to; its commands name the data root by its absolute "
        "path, so they work from any folder.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix (default: newest)")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="run to compare the findings with (default: the previous run of the "
                        "same suite)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.html",
                   help="the HTML page to write")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import time

    import gero

    started = time.perf_counter()
    with gero.open_run(args.run, data_dir(args)) as run:
        path = run.report(args.output, baseline=args.baseline)
        for problem in run.warnings:
            warn(args, problem)
        run_id = run.id
    size = path.stat().st_size
    echo(f"wrote the report of run {run_id} to {path} ({size / 1024:.0f} KiB, "
         f"{time.perf_counter() - started:.2f} s)")
    return EXIT_CLEAN
