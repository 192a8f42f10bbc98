"""Options and conventions shared by every subcommand: data root, quiet, colour, exit status,
and text that shows a run's names escaped (``echo``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from gero_runner.escape import for_terminal

EXIT_CLEAN = 0
"""Nothing found (for blame, export, bundle, gc, report and tui: done)."""
EXIT_FOUND = 1
"""Findings, non-passed observations, regressions, or a replay that did not reproduce."""
EXIT_USAGE = 2
"""A usage or input error: bad option or value, unknown run, unreadable or tampered file."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (a run keeps its finished cases)."""
EXIT_TERMINATED = 143
"""SIGTERM, handled like Ctrl-C."""

EXIT_STATUS_HELP = """\
exit status (the same for every command):
  0    clean: nothing found (blame, export, bundle, gc, report, tui: done)
  1    found something: non-passed observations or findings (run, summary, findings,
       parity), regressions (diff), a replay that did not reproduce (replay); also a
       run stopped by a full disk or by a case it lost (it kept what it saved: gero
       run --resume) and a gc --apply that a running run held back; localize: its
       child process crashed, was killed or timed out (one line says which; nothing
       stored); tui: the explorer stopped on an unexpected error (one line names a
       file with the traceback)
  2    usage or input error: a bad option or value, an unknown run, an unreadable file
  130  interrupted (Ctrl-C), 143 terminated (SIGTERM); a run keeps its finished cases"""


EXIT_STATUS_POINTER = "exit status: the same for every command; `gero --help` lists it."
"""What a subcommand's help says in place of the table (shown once, in ``gero --help``)."""

_FORMATS = {
    "text": "lines for a person",
    "json": "every figure, for a script",
    "md": "a Markdown report",
    "junit": "a JUnit XML report CI systems display",
}


def add_format(parser: argparse.ArgumentParser, *formats: str, what: str = "output") -> None:
    """``--format``, with its choices said in its help (text first, the default)."""
    listed = "; ".join(f"{f}: {_FORMATS[f]}" for f in formats)
    parser.add_argument("--format", choices=formats, default=formats[0],
                        help=f"how the {what} is written ({listed}; default: %(default)s)")


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=None,
        help="data root (default: $GERO_DATA_DIR or ./data)",
    )


def data_dir(args: argparse.Namespace) -> Path:
    if args.data_dir is not None:
        return Path(args.data_dir)
    # Deferred: the runner's store imports pyarrow (~0.15 s), which `gero tui` avoids.
    from gero_runner.storage.store import default_data_root

    return default_data_root()


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def quiet(args: argparse.Namespace) -> bool:
    """``-q``: nothing on stdout, no warnings or progress; errors still go to stderr."""
    return bool(getattr(args, "quiet", False))


def echo(line: str = "", file: TextIO | None = None) -> None:
    """One line on stdout (or ``file``) with every control character in it shown as an
    escape: a line may quote a run's names, which must not act on the terminal."""
    print(for_terminal(line), file=sys.stdout if file is None else file)


def warn(args: argparse.Namespace, message: str) -> None:
    if not quiet(args):
        # newlines kept: a message may list its lines (its names are escaped all the same)
        print(f"gero: warning: {for_terminal(message, newlines=True)}", file=sys.stderr)


def color_allowed(stream: TextIO) -> bool:
    """Colour only for a person at a terminal who has not set NO_COLOR (no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                        help="write the report to FILE instead of stdout (e.g. a JUnit file "
                             "for CI)")


def check_output(args: argparse.Namespace) -> None:
    """Refuse ``--output FILE`` inside the data root before any work (storage.outputs)."""
    if args.output is not None:
        from gero_runner.storage.outputs import refuse_inside_root

        refuse_inside_root(args.output, data_dir(args))


def write_report(args: argparse.Namespace, text: str, what: str) -> None:
    """The report on stdout, or in ``--output FILE``, written whole or not at all (then one
    line says where it went)."""
    if args.output is None:
        sys.stdout.write(text)  # escaped by its format (text, Markdown, JSON, XML)
        return
    from gero_runner.storage.outputs import write_output

    check_output(args)
    write_output(args.output, text)
    echo(f"wrote {what} to {args.output}")
