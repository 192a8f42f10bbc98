"""An argument group: options added to a parser by keyword and read back as keywords."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gero_cli.common import split_list
from gero_runner.request import run_options


def _as_given(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Arg:
    """One option: the ``gero.run`` keyword it fills, what ``add_argument`` needs beside
    the flag (``default`` always given: a value equal to it was not typed), and how the
    parsed value becomes the keyword's."""

    keyword: str
    settings: dict[str, Any] = field(default_factory=dict)
    read: Callable[[Any], Any] = _as_given

    @property
    def flag(self) -> str:
        flag = run_options()[self.keyword].flag
        if flag is None:
            raise TypeError(f"{self.keyword} is not an option of the command line")
        return flag


def arg(keyword: str, read: Callable[[Any], Any] = _as_given, **settings: Any) -> Arg:
    if "default" not in settings:
        raise TypeError(f"{keyword}: an argument group's option states its default")
    return Arg(keyword, settings, read)


@dataclass(frozen=True)
class ArgGroup:
    """Options that belong together, added to a parser in this order."""

    args: tuple[Arg, ...]

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        for a in self.args:
            parser.add_argument(a.flag, dest=a.keyword, **a.settings)

    def read(self, args: argparse.Namespace) -> dict[str, Any]:
        """The keywords of the options given. One left at its default is not passed: the
        library's default is the same, and ``--resume`` refuses only what was typed."""
        return {a.keyword: a.read(getattr(args, a.keyword)) for a in self.args
                if getattr(args, a.keyword) != a.settings["default"]}


def names(value: str) -> list[str]:
    """``--ops Abs,Exp``: a comma-separated list."""
    return split_list(value)


def repeated_names(values: list[str]) -> list[str]:
    """A repeatable option whose items may also be comma-separated."""
    return [name for item in values for name in split_list(item)]
