"""Markup for gero's HTML pages: a string type for what is escaped already, and the three
helpers every section renders with (a module of its own, so that the report and each
section module import it, not each other)."""

from __future__ import annotations

import string
from collections.abc import Iterable

from gero_runner.escape import for_terminal


class Html(str):
    """Markup, already escaped: passed through as is where a value would be escaped."""


_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def esc(value: object) -> Html:
    """``value`` as text inside markup: escaped, unless it is markup already. Every attribute
    here is in double quotes, so ``'`` needs no escape (and filters read as written). Control
    characters and bidi overrides show as escapes (``\\u202e``): a browser would reorder
    the text around an override."""
    if isinstance(value, Html):
        return value
    return Html(for_terminal(value, newlines=True).translate(_ESCAPES))


def fill(template: str, **values: object) -> Html:
    """``template`` (trusted: written here) with every ``$name`` replaced by its escaped value."""
    return Html(string.Template(template).substitute({k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(esc(sep).join(esc(p) for p in parts))
