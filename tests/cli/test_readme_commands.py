"""The documentation's command lines are held to the parsers themselves (the way
sqlite-utils tests its documentation):

- the command block of docs/reference/index.md ("Commands at a glance") documents every
  command with every one of its options: a command or an option added without its line
  there fails here (the site's full command reference is generated from the parsers);
- every ``gero`` command line in a shell or YAML block of the README and of every page parses
  with the real parser: an option renamed or removed from the code fails here."""

from __future__ import annotations

import argparse
import re

import pytest
from doc_blocks import DOCS, Block, blocks, command_lines, gero_invocations, pages

from gero_cli import COMMANDS, build_parser

GLANCE = DOCS / "reference" / "index.md"
SHARED = {"-h", "--help", "-q", "--quiet"}
"""Options every command takes, documented once under the block."""
SHELL = {"sh", "bash", "shell", "console", "yaml"}


def _block() -> str:
    text = GLANCE.read_text(encoding="utf-8")
    start = text.index("<!-- commands -->")
    fence = text.index("```text\n", start)
    return text[fence + 8:text.index("```", fence + 8)]


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
    assert not missing, f"the command block of {GLANCE.name} lacks {', '.join(missing)}"


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
    assert not missing, (f"gero {command}: the command block of docs/reference/index.md "
                         f"lacks {', '.join(missing)}")


def test_every_choice_listed_is_a_choice() -> None:
    """Where the block lists an option's choices (--format text|json), they are the
    parser's: a choice removed from the code is removed from the docs."""
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


def _shell_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.language in SHELL]


def _invocations() -> list[tuple[str, list[str]]]:
    return [(block.where, args) for block in _shell_blocks()
            for line in command_lines(block) for args in gero_invocations(line)]


def test_the_pages_show_gero_commands() -> None:
    """The scan below finds what it checks: the README's quick start, the tutorial's steps,
    the CI pipeline's script."""
    where = {w.split(":")[0] for w, _ in _invocations()}
    assert {"README.md", "docs/tutorial.md", "docs/how-to/ci.md"} <= where
    assert len(_invocations()) >= 20


@pytest.mark.parametrize(("where", "args"), _invocations(),
                         ids=[f"{w} gero {' '.join(a)[:40]}" for w, a in _invocations()])
def test_every_command_line_of_the_pages_parses(where: str, args: list[str]) -> None:
    if not args or args[0].startswith("--data-dir"):
        args = ["summary", *args]  # `gero` alone: the explorer, or the summary without a tty
    parser = build_parser()
    try:
        parser.parse_args(args)
    except SystemExit as e:
        if args[-1:] in (["--help"], ["--version"]) and e.code == 0:
            return
        pytest.fail(f"{where}: `gero {' '.join(args)}` does not parse (exit {e.code})")


def test_a_removed_option_fails_the_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """The check above can fail: an option the parser does not have is refused."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--no-such-option"])
    assert "unrecognized arguments" in capsys.readouterr().err
