"""The ``gero`` command: thin subcommands that validate, then delegate to a library layer.

Each subcommand is a module here with ``add_parser(subparsers)`` and ``main(args) -> int``.
A GeroError becomes a one-line message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from gero_runner.errors import GeroError

COMMANDS = ("run", "tui", "summary", "findings", "blame", "export", "replay", "bundle", "diff",
            "parity", "gc")


def _available(only: str | None = None) -> list[ModuleType]:
    modules: list[ModuleType] = []
    for name in COMMANDS if only is None else (only,):
        try:
            modules.append(importlib.import_module(f"gero_tui.cli.{name}_cmd"))
        except ModuleNotFoundError as e:
            if e.name != f"gero_tui.cli.{name}_cmd":
                raise
    return modules


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's (its siblings' imports cost ~0.4 s,
    which the explorer's first paint cannot afford)."""
    parser = argparse.ArgumentParser(
        prog="gero",
        description="Test and triage the numerical behaviour of ML runtimes. "
        "Without a command: the explorer on a terminal, the summary otherwise.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _available(only):
        module.add_parser(sub)
    return parser


BROKEN_PIPE = 141
"""Exit status when stdout's reader went away: 128 + SIGPIPE, as a shell reports it."""


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0].startswith("--data-dir"):
        # `gero` alone: the explorer on a terminal, the summary when piped or in CI.
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
        args_list = ["tui" if interactive else "summary", *args_list]
    # The explorer must paint fast: `gero tui` imports only its own subcommand.
    parser = build_parser(only="tui" if args_list[0] == "tui" else None)
    args = parser.parse_args(args_list)
    try:
        return int(args.handler(args))
    except GeroError as e:
        print(f"gero: error: {e}", file=sys.stderr)
        # Bad input is 2; an error that says otherwise (a full disk, a re-run that hung) is 1.
        return int(getattr(e, "exit_code", 2))
    except KeyboardInterrupt:
        print("gero: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`gero diff A B | head`): stop quietly, like other tools, with
        # 128 + SIGPIPE, not 1 (which `gero diff` uses to say "regressions").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
