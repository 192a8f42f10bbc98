"""Every ``--help`` answers at once and says what each command and option is for: building
the parser imports none of the heavy libraries (they cost seconds under load), every
command has a description, every option a help line, and the exit-status table is
printed once, in ``gero --help``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gero_cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pyarrow", "duckdb", "onnx", "onnxruntime", "textual", "openvino")
"""Libraries that cost a tenth of a second or more to import."""


def _gero(*args: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-m", "gero_cli", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def _imported(importtime_log: str) -> set[str]:
    """Top-level package names in a ``-X importtime`` log."""
    names = set()
    for line in importtime_log.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_help_imports_no_heavy_library(command: list[str]) -> None:
    out = _gero(*command, "--help", importtime=True)
    assert out.returncode == 0, out.stderr
    imported = _imported(out.stderr)
    assert "gero_cli" in imported  # the log is read right
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_every_command_and_option_says_what_it_is_for() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help for a in sub._choices_actions}
    assert set(summaries) == set(COMMANDS)
    missing = []
    for name, command in sub.choices.items():
        if not command.description or not summaries[name]:
            missing.append(f"gero {name}: no description")
        missing += [f"gero {name} {'/'.join(a.option_strings) or a.dest}: no help"
                    for a in command._actions if not a.help]
    missing += [f"gero {'/'.join(a.option_strings) or a.dest}: no help"
                for a in parser._actions if not a.help]
    assert missing == []


def test_the_exit_status_table_is_printed_once_in_gero_help() -> None:
    top = _gero("--help").stdout
    assert "exit status (the same for every command):" in top
    for line in ("  0    clean", "  1    found something", "  2    usage or input error"):
        assert line in top
    for command in ("diff", "run", "tui", "summary"):
        text = _gero(command, "--help").stdout
        assert "`gero --help` lists it" in text
        assert "  2    usage or input error" not in text, command
