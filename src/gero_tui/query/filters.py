"""``--where`` filters: a small, strict expression language compiled to parameterised SQL.

The grammar admits only observation column names, literals, comparisons, ``LIKE``/``ILIKE``,
``IN (...)``, ``BETWEEN``, ``IS [NOT] NULL`` and ``AND``/``OR``/``NOT`` with parentheses.
There are no function calls, subqueries, statements or casts, so a filter cannot run other
SQL or read files; every literal becomes a ``?`` parameter and every column is quoted.

    result <> 'passed' AND op_type IN ('Softmax', 'Exp') AND max_abs_error > 1e-6
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gero_runner.errors import GeroError
from gero_runner.schema import COLUMN_NAMES

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<qident>"[^"]*")
  | (?P<word>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),-])
""", re.VERBOSE)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "LIKE", "ILIKE", "BETWEEN", "IS", "NULL", "TRUE",
             "FALSE"}
MAX_LENGTH = 4000


@dataclass(frozen=True)
class Filter:
    """A validated filter: SQL text with ``?`` placeholders and its parameters, in order."""

    sql: str
    params: tuple[object, ...]
    text: str = ""
    """The filter as the user wrote it (what a report's header shows)."""

    @staticmethod
    def everything() -> Filter:
        return Filter("TRUE", ())


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _error(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            value = m.group()
            if kind == "word" and value.upper() in _KEYWORDS:
                kind, value = "kw", value.upper()
            tokens.append(_Tok(kind, value, pos))
        pos = m.end()
    return tokens


def _error(text: str, pos: int, message: str) -> GeroError:
    return GeroError(
        f"bad --where filter at character {pos + 1}: {message}\n  {text}\n  {' ' * pos}^\n"
        "allowed: column names, 'text' / number / TRUE / FALSE / NULL literals, "
        "= <> != < <= > >=, LIKE, ILIKE, IN (...), BETWEEN .. AND .., IS [NOT] NULL, "
        "AND, OR, NOT, parentheses; no functions, subqueries or statements"
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.params: list[object] = []

    def peek(self, kind: str | None = None, text: str | None = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        tok = self.tokens[self.i]
        return (kind is None or tok.kind == kind) and (text is None or tok.text == text)

    def take(self, kind: str | None = None, text: str | None = None, what: str = "") -> _Tok:
        if not self.peek(kind, text):
            pos = self.tokens[self.i].pos if self.i < len(self.tokens) else len(self.text)
            found = repr(self.tokens[self.i].text) if self.i < len(self.tokens) else "the end"
            raise _error(self.text, pos, f"expected {what or text or kind}, found {found}")
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def parse(self) -> str:
        sql = self.or_()
        if self.i < len(self.tokens):
            tok = self.tokens[self.i]
            raise _error(self.text, tok.pos, f"unexpected {tok.text!r}")
        return sql

    def or_(self) -> str:
        parts = [self.and_()]
        while self.peek("kw", "OR"):
            self.i += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def and_(self) -> str:
        parts = [self.not_()]
        while self.peek("kw", "AND"):
            self.i += 1
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def not_(self) -> str:
        if self.peek("kw", "NOT"):
            self.i += 1
            return f"(NOT {self.not_()})"
        return self.predicate()

    def predicate(self) -> str:
        if self.peek("punct", "("):
            self.i += 1
            inner = self.or_()
            self.take("punct", ")", "')'")
            return f"({inner})"
        left = self.operand()
        negate = ""
        if self.peek("kw", "NOT") and self.i + 1 < len(self.tokens) and \
                self.tokens[self.i + 1].text in ("IN", "LIKE", "ILIKE", "BETWEEN"):
            self.i += 1
            negate = "NOT "
        if self.peek("op"):
            op = self.take("op").text
            op = {"==": "=", "!=": "<>"}.get(op, op)
            return f"({left} {op} {self.operand()})"
        if self.peek("kw", "IS"):
            self.i += 1
            no = "NOT " if self.peek("kw", "NOT") else ""
            if no:
                self.i += 1
            self.take("kw", "NULL", "NULL")
            return f"({left} IS {no}NULL)"
        if self.peek("kw", "LIKE") or self.peek("kw", "ILIKE"):
            op = self.take().text
            return f"({left} {negate}{op} {self.literal()})"
        if self.peek("kw", "IN"):
            self.i += 1
            self.take("punct", "(", "'('")
            items = [self.literal()]
            while self.peek("punct", ","):
                self.i += 1
                items.append(self.literal())
            self.take("punct", ")", "')'")
            return f"({left} {negate}IN ({', '.join(items)}))"
        if self.peek("kw", "BETWEEN"):
            self.i += 1
            low = self.operand()
            self.take("kw", "AND", "AND")
            return f"({left} {negate}BETWEEN {low} AND {self.operand()})"
        if negate:
            raise _error(self.text, self.tokens[self.i - 1].pos, "NOT must precede IN, LIKE, "
                         "ILIKE or BETWEEN here")
        return left  # a bare boolean column (e.g. bit_exact) or literal

    def operand(self) -> str:
        if self.peek("word") or self.peek("qident"):
            tok = self.take()
            name = tok.text.strip('"') if tok.kind == "qident" else tok.text
            if self.peek("punct", "("):
                raise _error(self.text, tok.pos, f"function calls are not allowed ({name}(...))")
            if name not in COLUMN_NAMES:
                raise _error(self.text, tok.pos, f"unknown column {name!r}; columns: "
                             + ", ".join(COLUMN_NAMES))
            return f'"{name}"'
        return self.literal()

    def literal(self) -> str:
        if self.peek("string"):
            self.params.append(self.take().text[1:-1].replace("''", "'"))
            return "?"
        sign = ""
        if self.peek("punct", "-"):
            self.i += 1
            sign = "-"
        if self.peek("number"):
            text = sign + self.take().text
            self.params.append(float(text) if any(c in text for c in ".eE") else int(text))
            return "?"
        if sign:
            raise _error(self.text, self.tokens[self.i - 1].pos, "'-' must precede a number")
        if self.peek("kw", "TRUE") or self.peek("kw", "FALSE"):
            self.params.append(self.take().text == "TRUE")
            return "?"
        if self.peek("kw", "NULL"):
            self.i += 1
            return "NULL"
        pos = self.tokens[self.i].pos if self.i < len(self.tokens) else len(self.text)
        found = repr(self.tokens[self.i].text) if self.i < len(self.tokens) else "the end"
        raise _error(self.text, pos, f"expected a column or a literal, found {found}")


def parse_filter(text: str | None) -> Filter:
    """Validate a ``--where`` expression; raise GeroError pointing at the bad token."""
    if text is None or not text.strip():
        return Filter.everything()
    if len(text) > MAX_LENGTH:
        raise GeroError(f"--where filter is too long ({len(text)} > {MAX_LENGTH} characters)")
    parser = _Parser(text)
    sql = parser.parse()
    return Filter(sql, tuple(parser.params), text.strip())
