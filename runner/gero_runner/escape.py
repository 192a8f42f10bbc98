"""Names as text that cannot act: on a terminal, in Markdown, in a shell command.

A run directory, a model's path, a graph's node, tensor and output names, and the backend
messages that quote them are hostile input: an ESC sequence would retitle or clear the
terminal, a bidi override would reorder what follows, ``[x](http://e)`` or ``<script>``
would become a link or HTML in a pasted report. Everything gero prints or writes as text
passes them through here; JSON, CSV and Parquet keep the raw values (their own format
escapes them, and they are data for a program, not text for a person).

The lowest layer, so that the runner, the Python API and its query layer, the command line
and the explorer all show a name the same way.
"""

from __future__ import annotations

import re
import shlex

# C0 (ESC, BEL, CR, NUL...), DEL and C1 controls; the invisible marks and overrides that
# reorder text (Trojan Source: ALM, LRM, RLM, LRE...RLO, LRI...PDI); the line and paragraph
# separators some terminals break on; lone surrogates (a path of undecodable bytes), which
# no terminal or UTF-8 file can carry.
_OTHERS = r"\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_ANY = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_BUT_NEWLINE = re.compile(rf"[\x00-\x09\x0b-\x1f{_OTHERS}]")
_MARKDOWN = re.compile(r"([\\`*\[\]()<>#|!&~$]|(?<![^\W_])_|_(?![^\W_]))")
"""What Markdown (CommonMark, GitHub's tables, strikethrough and math) or HTML may act on:
each is ASCII punctuation, which a backslash turns into itself. An underscore between two
letters or digits cannot start or end emphasis: ``onnxruntime_version`` stays as it is."""
_BACKTICKS = re.compile("`+")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``);
    printable Unicode (``µ``, ``日本``, emoji) as is. With ``newlines``, a newline stays a
    newline (a block of lines the caller wrote); otherwise it is ``\\x0a`` too, so a name
    stays on its line. A backslash stays itself: the escapes are for a person to read."""
    return (_BUT_NEWLINE if newlines else _ANY).sub(_visible, str(text))


def for_markdown(text: object) -> str:
    """``text`` (on one line) as Markdown that shows it literally: no link, image, code
    span, emphasis, table cell or raw HTML can start inside it."""
    return _MARKDOWN.sub(r"\\\1", for_terminal(text))


def _fence(text: str, shortest: int) -> str:
    return "`" * max(shortest, *(len(run) + 1 for run in _BACKTICKS.findall(text)), 0)


def markdown_code(text: object) -> str:
    """``text`` as a whole Markdown code span, with a fence longer than any run of
    backticks in it, so it cannot close the span early. Outside a table only: a table
    splits its cells at ``|`` even inside a code span."""
    shown = for_terminal(text)
    if not shown:
        return ""
    fence = _fence(shown, 1)
    # A space on each side keeps a backtick at an end from joining the fence (and is
    # stripped again when rendered).
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def markdown_fence(lines: list[str], info: str = "") -> list[str]:
    """``lines`` as a fenced code block whose fence no line can close."""
    shown = [for_terminal(line) for line in lines]
    fence = _fence("\n".join(shown), 3)
    return [f"{fence}{info}", *shown, fence]


def for_shell(text: object) -> str:
    """``text`` as one shell word a person can read and paste: controls shown as escapes
    (the command then names a file by what a person sees), then quoted."""
    return shlex.quote(for_terminal(text))
