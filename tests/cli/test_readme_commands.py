"""The README's command block documents every command with every one of its options, read
from the parsers themselves (the way sqlite-utils tests its documentation): a command or
an option added without its line in the README fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gero_cli import COMMANDS, build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
SHARED = {"-h", "--help", "-q", "--quiet"}
"""Options every command takes, documented once under the block."""


def _block() -> str:
    text = README.read_text()
    start = text.index("## Commands")
    fence = text.index("```\n", start)
    return text[fence + 4:text.index("```", fence + 4)]


def _documented() -> dict[str, str]:
    """Each command's lines of the block (a line 'gero NAME' and its continuation lines)."""
    entries: dict[str, str] = {}
    current = None
    for line in _block().splitlines():
        match = re.match(r"gero (\w+)", line)
        if match:
            current = match.group(1)
            entries[current] = entries.get(current, "") + line + "\n"
        elif line.startswith(" ") and current is not None:
            entries[current] += line + "\n"
    return entries


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_has_a_line() -> None:
    assert set(_subparsers()) == set(COMMANDS) - _missing_modules()
    missing = sorted(set(_subparsers()) - set(_documented()))
    assert not missing, f"the README's command block lacks {', '.join(missing)}"


def _missing_modules() -> set[str]:
    """Commands whose module is not importable here (none in a full checkout)."""
    import importlib.util

    return {c for c in COMMANDS if importlib.util.find_spec(f"gero_cli.{c}_cmd") is None}


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_every_option_of_a_command_is_in_its_line(command: str) -> None:
    text = _documented().get(command, "")
    words = set(re.findall(r"--?[\w-]+|[A-Z][A-Z_.|0-9]+(?:\|[\w.]+)*", text))
    missing = []
    for action in _subparsers()[command]._actions:
        names = set(action.option_strings)
        if names & SHARED or action.help == argparse.SUPPRESS:
            continue
        if names:
            if not names & words:
                missing.append("/".join(action.option_strings))
        elif str(action.metavar or action.dest) not in text:
            missing.append(str(action.metavar or action.dest))
    assert not missing, f"gero {command}: the README's command block lacks {', '.join(missing)}"


def test_every_choice_listed_is_a_choice() -> None:
    """Where the block lists an option's choices (--format text|json), they are the
    parser's: a choice removed from the code is removed from the README."""
    for command, parser in _subparsers().items():
        text = _documented().get(command, "")
        for action in parser._actions:
            if not action.choices or not action.option_strings:
                continue
            for option in action.option_strings:
                for listed in re.findall(rf"{re.escape(option)}[ =]([\w.-]+(?:\|[\w.-]+)+)",
                                         text):
                    extra = set(listed.split("|")) - {str(c) for c in action.choices}
                    assert not extra, f"gero {command} {option}: {extra} is no choice"
