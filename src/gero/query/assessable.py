"""What cannot be assessed by construction, counted apart from a runtime's wrong numbers.

A non-passed row says nothing about a runtime's arithmetic when the case itself leaves
nothing to judge: NaN on both sides and nothing else (the suite feeds NaN on purpose, and
NaN == NaN never passes), or a path that refused an operator or tensor type it does not
implement; and a verdict about gero's own tooling that a gero before the notes recorded as a
failure (a note: read by ``storage.derivation.tooling_key_sql``, as the runner keys it), or
a path's time budget that ran out (gero's limit: the path may compute it, given the time). The
result classes stay as the runner wrote them; this is a presentation split that the
overview, ``gero summary``, the report and the findings' order read, derived here and
nowhere else.

From structured columns where the rows carry them: a comparison's NaN counts (NaN on the
same positions of both sides, and no other mismatch: ``mismatch_count`` counts NaN on both
sides, non-finite mismatches and finite pairs out of tolerance, so equality of the three
counts leaves only the NaN pairs), a determinism law's ``details.deterministic`` (identical
hashes that did not pass: NaN in them). A path failure records the key of its cause
(``cause_key``, schema 5): the operator the runtime lacks (``unsupported-op:``), tract's
"OP does not support T" and the runner's own "not supported:" refusal (``execution.paths``)
in its masked error. Only a row a gero before schema 5 wrote, without the key, has its
``reason`` read: ONNX Runtime's NOT_IMPLEMENTED status, tract's "Unimplemented(OP)" and
"OP does not support F64", the "not supported:" refusal.

Only the standard library (and SQL text): the explorer's overview imports it before its first
paint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from gero_runner.result_classes import CONTRACT_ISSUE, EXECUTION, PASSED, RESULT_CLASSES
from gero_runner.storage.derivation import out_of_budget_sql, tooling_key_sql

NAN: Final = "nan"
"""NaN on both sides and nothing else: the suite's NaN inputs propagated."""
NOT_IMPLEMENTED: Final = "not-implemented"
"""A path refused an operator (or tensor type) it does not implement."""
TOOLING_NOTE: Final = "tooling"
"""A verdict about gero's own tooling (a variant file it could not build, an output it does
not compare, its float64 shadow or fp16 yardstick that could not run) that a gero before
the notes wrote as a failure: a note, no runtime's failure (a run now records it on a
passed row)."""
REASONS: Final = (NAN, NOT_IMPLEMENTED, TOOLING_NOTE)
LABELS: Final = {
    NAN: "NaN in, NaN out: NaN == NaN cannot be assessed",
    NOT_IMPLEMENTED: "an operator or type the runtime does not implement",
    TOOLING_NOTE: "notes on gero's own tooling (its limits, no runtime's failure)",
}
"""Each reason in words (counts, headings)."""
SHORT_LABELS: Final = {NAN: "NaN inputs", NOT_IMPLEMENTED: "not implemented",
                       TOOLING_NOTE: "gero's limits"}
"""A few words each, for a narrow card."""

_NOT_IMPLEMENTED_MESSAGES: Final = (
    ": NOT_IMPLEMENTED : ",  # ONNX Runtime: "Could not find an implementation for Erf(13)"
    "Unimplemented(",  # tract: an ONNX operator it has no translation for
    " does not support ",  # tract: an operator without that element type ("Abs … F64")
    " failed: not supported: ",  # execution.paths: a runtime's supports() refused the case
)


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_NOT_IMPLEMENTED_KEYS: Final = (
    "starts_with({k}, 'unsupported-op:')",  # ONNX Runtime, tract, OpenVINO, the evaluator
    "regexp_matches({k}, '^error:.* OP does not support ')",  # tract: "Abs … F64"
    "starts_with({k}, 'error:not supported: ')",  # execution.paths: supports() refused it
)
"""A recorded cause key (``gero_runner.facts``) of an operator or type not implemented."""


def unassessable_sql(table: str = "") -> str:
    """SQL: why a row cannot be assessed by construction (``'nan'``, ``'not-implemented'``,
    ``'tooling'``), or ``''`` for a row that can (every passed row, every other non-passed
    row). ``table``: the alias its columns are read through (``'o'`` reads ``o.result``)."""
    t = f"{table}." if table else ""
    messages = " OR ".join(f"contains({t}reason, {_sql_text(m)})"
                           for m in _NOT_IMPLEMENTED_MESSAGES)
    keys = " OR ".join(k.format(k=f"{t}cause_key") for k in _NOT_IMPLEMENTED_KEYS)
    return f"""CASE
        WHEN {t}result = '{PASSED}' THEN ''
        WHEN {t}nan_actual > 0 AND {t}nan_actual = {t}nan_reference
             AND {t}mismatch_count = {t}nan_actual THEN '{NAN}'
        WHEN {t}"check" = 'contract:determinism' AND {t}result = '{CONTRACT_ISSUE}'
             AND coalesce(TRY_CAST(json_extract({t}details, '$.deterministic') AS BOOLEAN),
                          false) THEN '{NAN}'
        -- gero's own tooling, recorded as a failure by a gero before the notes
        -- (and a path's time budget spent: gero's limit, the path may well compute it)
        WHEN {t}result = '{EXECUTION}' AND (starts_with(coalesce({t}cause_key, ''), 'tooling:')
             OR {tooling_key_sql(f'{t}"check"', f'{t}reason')} <> ''
             OR {out_of_budget_sql(f'{t}reason')}) THEN '{TOOLING_NOTE}'
        -- the recorded fact; a row of a gero before schema 5 (no key) has its reason read
        WHEN {t}result = '{EXECUTION}' AND coalesce({t}cause_key, '') <> ''
            THEN CASE WHEN {keys} THEN '{NOT_IMPLEMENTED}' ELSE '' END
        WHEN {t}result = '{EXECUTION}' AND ({messages}) THEN '{NOT_IMPLEMENTED}'
        ELSE '' END"""


class Queryable(Protocol):
    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True)
class Split:
    """A run's non-passed observations, split: what a user acts on, and what cannot be
    assessed by construction (counted apart, per reason). Each class's two parts add up to
    its count."""

    assessable: dict[str, int]
    """Per non-passed result class: a runtime's numbers, laws, failures to act on."""
    not_assessable: dict[str, dict[str, int]]
    """Per reason (``REASONS`` order, only those met): observations per result class."""

    @property
    def not_assessable_total(self) -> int:
        return sum(sum(by.values()) for by in self.not_assessable.values())

    def not_assessable_in(self, result: str) -> int:
        return sum(by.get(result, 0) for by in self.not_assessable.values())

    def as_dict(self) -> dict[str, Any]:
        """``gero summary --format json``'s form: the assessable counts per class, and one
        entry per reason with its label and its counts per class."""
        return {"assessable_counts": dict(self.assessable),
                "not_assessable": [{"reason": why, "label": LABELS[why],
                                    "observations": sum(by.values()), "by_class": dict(by)}
                                   for why, by in self.not_assessable.items()]}


def split_counts(source: Queryable) -> Split:
    """The run's non-passed observations split by ``unassessable_sql`` (one scan)."""
    rows = source.query(f"""SELECT result, {unassessable_sql()} AS why, count(*) FROM obs
                            WHERE result <> '{PASSED}' GROUP BY ALL""")
    assessable = dict.fromkeys((c for c in RESULT_CLASSES if c != PASSED), 0)
    apart: dict[str, dict[str, int]] = {}
    for result, why, n in rows:
        if why:
            by = apart.setdefault(str(why), {})
            by[str(result)] = by.get(str(result), 0) + int(n)
        else:
            assessable[str(result)] = assessable.get(str(result), 0) + int(n)
    return Split(assessable, {why: apart[why] for why in REASONS if why in apart})
