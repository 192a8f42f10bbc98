"""``gero run``'s options come from argument groups (``gero_cli.args``) that add each flag by
the ``gero.run`` keyword it fills and read it back as that keyword: every flag reaches the
request the same keyword from Python reaches, and only the flags typed are passed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from run_keywords import every_keyword

from gero.api import request
from gero_cli import build_parser, main
from gero_cli.run_cmd import GROUPS
from gero_runner.request import run_options


def _options(*argv: str) -> dict[str, Any]:
    args = build_parser().parse_args(["run", *argv])
    return {k: v for group in GROUPS for k, v in group.read(args).items()}


def _argv(values: dict[str, Any]) -> list[str]:
    """The ``gero run`` command line that gives ``values``, from the groups' declarations."""
    argv: list[str] = []
    for group in GROUPS:
        for a in group.args:
            value, action = values[a.keyword], a.settings.get("action")
            if action == "append":
                argv += [token for item in value for token in (a.flag, item)]
            elif action == "store_false":
                argv += [a.flag] if value is False else []
            else:
                argv += [a.flag, ",".join(value) if isinstance(value, list) else str(value)]
    return argv


def test_every_flag_reaches_the_request_its_keyword_does(tmp_path: Path) -> None:
    given = every_keyword(tmp_path)
    options = _options(*_argv(given))
    # Every keyword but the two the command fills itself is a flag of one group.
    assert set(options) | {"data_dir", "command_line"} == set(run_options())
    by_cli = request(**options, data_dir=given["data_dir"],
                     command_line=given["command_line"])
    assert by_cli == request(**given)


def test_only_the_flags_typed_are_passed() -> None:
    assert _options() == {}
    assert _options("--seed", "3", "--ops", "Exp", "--no-contracts",
                    "--skip-path", "a:b,c:d", "--skip-path", "e:f") == {
        "seed": 3, "ops": ["Exp"], "contracts": False, "skip_paths": ["a:b", "c:d", "e:f"]}
    assert _options("--backends", "") == {}  # like no --backends: every installed runtime


def test_each_flag_is_added_once_by_one_group() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = [o for a in sub.choices["run"]._actions for o in a.option_strings]
    assert len(flags) == len(set(flags))
    keywords = [a.keyword for group in GROUPS for a in group.args]
    assert len(keywords) == len(set(keywords))


def test_resume_with_a_new_run_id_names_the_flag_it_would_ignore(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--data-dir", str(tmp_path), "--resume", "r", "--run-id", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error: resume finishes run r with the options it was "
                          "started with; run_id (--run-id) would be ignored: drop it")
