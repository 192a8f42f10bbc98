"""The fenced code blocks of the README and the documentation pages, for the tests that hold
them to the code (tests/docs, tests/cli/test_readme_commands.py).

A block is marked runnable by an HTML comment on the line before its fence, which the
rendered page does not show: ``<!-- runnable -->`` (it must exit 0), or
``<!-- runnable: exit=1 expect="some text" -->`` (the status it must exit with, and text its
output must contain); ``exit=0,1`` allows either, for a command whose verdict depends on the
runtimes installed (OpenVINO's bfloat16 default on a CPU that has it).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)[^\n]*$")
_MARKER = re.compile(r"^<!--\s*runnable(?::(.*?))?\s*-->\s*$")
_SETTING = re.compile(r'(\w+)=("[^"]*"|\S+)')


def pages() -> list[Path]:
    """The README and every Markdown page under docs/ (the generated ones are not files)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    language: str
    text: str
    runnable: bool = False
    exit: tuple[int, ...] = (0,)
    expect: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order, with its runnable marker if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, language = match.group(1), match.group(2)
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].startswith(fence[0] * len(fence))
                    and not lines[j].strip(fence[0])), len(lines))
        marker = _MARKER.match(lines[i - 1]) if i > 0 else None
        settings = dict(_SETTING.findall(marker.group(1) or "")) if marker else {}
        found.append(Block(page, i + 1, language, "\n".join(lines[i + 1:end]) + "\n",
                           runnable=marker is not None,
                           exit=tuple(int(x) for x in settings.get("exit", "0").split(",")),
                           expect=settings.get("expect", "").strip('"')))
        i = end + 1
    return found


def command_lines(block: Block) -> list[str]:
    """The shell command lines of a block: continuation lines joined, comments and blank
    lines dropped; in a YAML block, the list items of its scripts."""
    text = block.text.replace("\\\n", " ")
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if block.language == "yaml":
            if not line.startswith("- "):
                continue
            line = line[2:]
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def gero_invocations(line: str) -> list[list[str]]:
    """The arguments of each ``gero`` command in one shell line (``a && gero x; b | c``),
    whatever the path it is called by (``.venv/bin/gero``)."""
    found = []
    for part in re.split(r"&&|\|\||;|\|", line):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            continue
        while words and re.match(r"^\w+=", words[0]):  # VAR=value before the command
            words = words[1:]
        if words and (words[0] == "gero" or words[0].endswith("/gero")):
            found.append(words[1:])
    return found
