"""The ``gero`` command: thin subcommands that validate, then delegate to a library layer
(``gero``, the Python API, and the query layer under it).

Each subcommand is a module here with ``add_parser(subparsers)`` and ``main(args) -> int``.
A GeroError becomes a one-line message on stderr and exit code 2, never a traceback. The
exit status means the same for every command (``EXIT_STATUS_HELP``); ``-q`` silences
everything but errors; colour only reaches a terminal, and never under NO_COLOR.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from gero_cli.common import (
    EXIT_INTERRUPTED,
    EXIT_STATUS_HELP,
    EXIT_STATUS_POINTER,
    EXIT_USAGE,
    quiet,
)
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal

COMMANDS = ("run", "tui", "summary", "verdict", "findings", "blame", "localize", "export", "replay",
            "bundle", "diff", "parity", "gc", "compact", "report", "env", "bisect")


def _available(only: str | None = None) -> list[ModuleType]:
    modules: list[ModuleType] = []
    for name in COMMANDS if only is None else (only,):
        try:
            modules.append(importlib.import_module(f"gero_cli.{name}_cmd"))
        except ModuleNotFoundError as e:
            if e.name != f"gero_cli.{name}_cmd":
                raise
    return modules


class _Formatter(argparse.HelpFormatter):
    """Wraps descriptions as usual; keeps the lines of the exit-status table."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("exit status"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Version(argparse.Action):
    """``--version``: gero's version and the runtimes it measures (read only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_line())
        parser.exit()


def version_line() -> str:
    from importlib import metadata

    def installed(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    from gero_runner import backends

    # every runtime gero measures, installed or not (openvino and tract are extras), by the
    # distributions each declares, the ReferenceEvaluator's (onnx) last
    names = (*backends.RUNTIMES, backends.REFERENCE)
    distributions = [d for n in names for d in backends.get(n).distributions()]
    runtimes = ", ".join(f"{p} {installed(p)}" for p in dict.fromkeys([*distributions, "numpy"]))
    return f"gero {installed('gero')} ({runtimes}; python {sys.version.split()[0]})"


def _add_quiet(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="print nothing but errors; the exit status says the outcome")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's. Building it imports no NumPy,
    pyarrow, DuckDB, ONNX or Textual (tests/cli/test_help.py): each command defers those to
    its ``main``, so that every ``--help`` answers at once."""
    parser = argparse.ArgumentParser(
        prog="gero", formatter_class=_Formatter, epilog=EXIT_STATUS_HELP,
        description="Test and triage the numerical behaviour of ML runtimes. "
        "Without a command: the explorer on a terminal, the summary otherwise.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show gero's version and the runtimes' versions, then exit")
    _add_quiet(parser, False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help="what to do (gero COMMAND --help: its options)")
    for module in _available(only):
        module.add_parser(sub)
    for command in sub.choices.values():
        command.formatter_class = _Formatter
        command.epilog = EXIT_STATUS_POINTER  # the table once, in `gero --help`
        # SUPPRESS: `gero -q diff` and `gero diff -q` both work; the subcommand's default
        # must not undo the top-level flag.
        _add_quiet(command, argparse.SUPPRESS)
    return parser


BROKEN_PIPE = 141
"""Exit status when stdout's reader went away: 128 + SIGPIPE, as a shell reports it."""


def console() -> int:
    """The ``gero`` command (and ``python -m gero_tui``): ``main`` in a process of its own,
    which has run no backend yet, so its workers may be forked (process.start_method)."""
    from gero_runner.process import start_method

    start_method.fresh_process()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0].startswith("--data-dir"):
        # `gero` alone: the explorer on a terminal, the summary when piped or in CI.
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
        args_list = ["tui" if interactive else "summary", *args_list]
    # A named command imports only its own module (the explorer must paint fast, and each
    # sibling costs its imports); `gero --help` or a misspelt command needs them all.
    parser = build_parser(only=args_list[0] if args_list[0] in COMMANDS else None)
    args = parser.parse_args(args_list)
    try:
        with contextlib.ExitStack() as stack:
            if quiet(args) and args.command != "tui":  # the explorer draws on the terminal
                stack.enter_context(contextlib.redirect_stdout(
                    stack.enter_context(open(os.devnull, "w"))))
            return int(args.handler(args))
    except GeroError as e:
        # A message names what was wrong (a path, a run, a node): shown escaped.
        print(f"gero: error: {for_terminal(e, newlines=True)}", file=sys.stderr)
        # Bad input is 2; an error that says otherwise (a full disk, a re-run that hung) is 1.
        return int(getattr(e, "exit_code", EXIT_USAGE))
    except KeyboardInterrupt:
        print("gero: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`gero diff A B | head`): stop quietly, like other tools, with
        # 128 + SIGPIPE, not 1 (which `gero diff` uses to say "regressions").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
