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
from datetime import datetime

import pyarrow as pa

from gero_runner.errors import GeroError
from gero_runner.schema import COLUMN_NAMES, OBSERVATION_COLUMNS

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
MAX_DEPTH = 50
"""Nesting of parentheses and NOT: deeper is refused with a sentence, not a RecursionError."""


def _kind(t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "text"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return "number"


_COLUMN_KINDS = {c.name: _kind(c.type) for c in OBSERVATION_COLUMNS}
_EXAMPLES = {"text": "a quoted value like 'passed'", "number": "a number like 1e-6",
             "boolean": "TRUE or FALSE", "timestamp": "a quoted date like '2025-01-31'"}


@dataclass(frozen=True)
class _Operand:
    sql: str
    kind: str
    """text | number | boolean | timestamp | null"""
    pos: int
    column: str = ""
    value: object = None


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
        self.depth = 0
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
            self.enter()
            inner = self.not_()
            self.depth -= 1
            return f"(NOT {inner})"
        return self.predicate()

    def predicate(self) -> str:
        if self.peek("punct", "("):
            self.i += 1
            self.enter()
            inner = self.or_()
            self.depth -= 1
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
            right = self.operand()
            self.check(left, right)
            return f"({left.sql} {op} {right.sql})"
        if self.peek("kw", "IS"):
            self.i += 1
            no = "NOT " if self.peek("kw", "NOT") else ""
            if no:
                self.i += 1
            self.take("kw", "NULL", "NULL")
            return f"({left.sql} IS {no}NULL)"
        if self.peek("kw", "LIKE") or self.peek("kw", "ILIKE"):
            op = self.take().text
            pattern = self.literal()
            if left.column and left.kind != "text":
                raise GeroError(f"--where: {left.column} is a {left.kind} column; {op} "
                                "matches text columns only")
            self.check(left, pattern)
            return f"({left.sql} {negate}{op} {pattern.sql})"
        if self.peek("kw", "IN"):
            self.i += 1
            self.take("punct", "(", "'('")
            items = [self.literal()]
            while self.peek("punct", ","):
                self.i += 1
                items.append(self.literal())
            self.take("punct", ")", "')'")
            self.check(left, *items)
            return f"({left.sql} {negate}IN ({', '.join(i.sql for i in items)}))"
        if self.peek("kw", "BETWEEN"):
            self.i += 1
            low = self.operand()
            self.take("kw", "AND", "AND")
            high = self.operand()
            self.check(left, low, high)
            return f"({left.sql} {negate}BETWEEN {low.sql} AND {high.sql})"
        if negate:
            raise _error(self.text, self.tokens[self.i - 1].pos, "NOT must precede IN, LIKE, "
                         "ILIKE or BETWEEN here")
        if left.kind not in ("boolean", "null"):
            raise GeroError(f"--where: {left.column or repr(left.value)} alone is not a "
                            "condition; compare it, e.g. max_abs_error > 1e-6")
        return left.sql  # a bare boolean column (e.g. bit_exact) or literal

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise GeroError(f"--where filter is nested more than {MAX_DEPTH} levels deep "
                            "(parentheses and NOT); simplify it")

    def operand(self) -> _Operand:
        if self.peek("word") or self.peek("qident"):
            tok = self.take()
            name = tok.text.strip('"') if tok.kind == "qident" else tok.text
            if self.peek("punct", "("):
                raise _error(self.text, tok.pos, f"function calls are not allowed ({name}(...))")
            if name not in COLUMN_NAMES:
                raise _error(self.text, tok.pos, f"unknown column {name!r}; columns: "
                             + ", ".join(COLUMN_NAMES))
            return _Operand(f'"{name}"', _COLUMN_KINDS[name], tok.pos, column=name)
        return self.literal()

    def literal(self) -> _Operand:
        pos = self.tokens[self.i].pos if self.i < len(self.tokens) else len(self.text)
        if self.peek("string"):
            value = self.take().text[1:-1].replace("''", "'")
            self.params.append(value)
            return _Operand("?", "text", pos, value=value)
        sign = ""
        if self.peek("punct", "-"):
            self.i += 1
            sign = "-"
        if self.peek("number"):
            text = sign + self.take().text
            number = float(text) if any(c in text for c in ".eE") else int(text)
            self.params.append(number)
            return _Operand("?", "number", pos, value=number)
        if sign:
            raise _error(self.text, self.tokens[self.i - 1].pos, "'-' must precede a number")
        if self.peek("kw", "TRUE") or self.peek("kw", "FALSE"):
            truth = self.take().text == "TRUE"
            self.params.append(truth)
            return _Operand("?", "boolean", pos, value=truth)
        if self.peek("kw", "NULL"):
            self.i += 1
            return _Operand("NULL", "null", pos)
        found = repr(self.tokens[self.i].text) if self.i < len(self.tokens) else "the end"
        raise _error(self.text, pos, f"expected a column or a literal, found {found}")

    def check(self, *operands: _Operand) -> None:
        """Operands compared with a column must be of its type: say which, in one sentence."""
        columns = [o for o in operands if o.column]
        if not columns:
            return
        column = columns[0]
        for other in operands:
            if other is column or other.kind == "null" or other.kind == column.kind:
                continue
            if other.kind == "text" and column.kind == "number" and _is_number(other.value):
                continue
            if other.kind == "text" and column.kind == "timestamp" and _is_time(other.value):
                continue
            what = f"column {other.column}" if other.column else repr(other.value) \
                if other.kind == "text" else str(other.value).upper() \
                if other.kind == "boolean" else repr(other.value)
            raise GeroError(
                f"--where: {column.column} is a {column.kind} column and {what} is not "
                f"{'a ' + column.kind if column.kind != 'number' else 'a number'}; compare "
                f"it with {_EXAMPLES[column.kind]}")


def _is_number(value: object) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _is_time(value: object) -> bool:
    try:
        datetime.fromisoformat(str(value))
    except ValueError:
        return False
    return True


def parse_filter(text: str | None) -> Filter:
    """Validate a ``--where`` expression; raise GeroError pointing at the bad token."""
    if text is None or not text.strip():
        return Filter.everything()
    if len(text) > MAX_LENGTH:
        raise GeroError(f"--where filter is too long ({len(text)} > {MAX_LENGTH} characters)")
    parser = _Parser(text)
    sql = parser.parse()
    return Filter(sql, tuple(parser.params), text.strip())
