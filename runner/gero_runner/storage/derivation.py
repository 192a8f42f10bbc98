"""The facts of a row a gero before schema 5 wrote, derived once from its reason and check:
the one place a reason is read (in DuckDB's RE2; ``\\b`` is ASCII's).

A row of schema 5 records its ``failure_kind``, ``scope`` and ``cause_key`` where it is built
(``gero_runner.facts``); a row written before has them NULL (``scope``, ``cause_key``) or as
a masked sentence (``failure_kind``, schema 4). ``derived_kind_sql`` and
``derived_key_sql`` give such a row the values the runner records now, so that a run reads
the same whichever gero wrote it. Standard library only: SQL text.
"""

from __future__ import annotations

from typing import Final

COMPARISON_CHECKS: Final = ("agreement", "analytic", "expected", "levels")
"""Checks whose failed comparison the runner records as ``outside`` when ``classify``
names no other kind (``result_classes.COMPARISON_CHECKS`` restated: a test holds them)."""

_FAILED = r"^(?:variant \S+: )?(?:(?:int8-dynamic|int8-static|fp16):)?(\S+) failed: "
_BUDGET = r"ran out of its \d+(?:\.\d+)? s budget"
_YARDSTICK = "the fp16 yardstick"
_SHADOW = "the float64 shadow could not run"
_NO_ARBITER = "no float64 arbiter"
# ``facts._UNSUPPORTED``, each runtime's words for an operator it lacks: (pattern, the
# group of the domain or 0, the group of the operator).
_UNSUPPORTED: Final = (
    (r"No conversion rule found for operations: (?:([a-z][\w.]*)\.)?([A-Z]\w*)", 1, 2),
    (r"for ONNX op '(?:([a-z][\w.]*)\.)?([A-Z]\w*)'", 1, 2),
    (r"Could not find an implementation for ([A-Z]\w*)\(\d+\) node", 0, 1),
    (r"([a-z][\w.]*):([A-Z]\w*)\(-?\d+\) is not a registered function/op", 1, 2),
    (r"Unimplemented\(([A-Z]\w*)\)", 0, 1),
    (r"Node type '(\w+)' from domain '([\w.]*)' is unknown", 2, 1),
    (r"No registered schema for operator '(\w+)' and domain '([\w.]*)'", 2, 1),
    (r"(?:Unable to find operator|No implementation for(?: operator)?) '?([A-Z]\w*)'?"
     r"(?: (?:from |and )?domain '([\w.]*)')?", 2, 1),
)


def template_sql(column: str) -> str:
    """The reason with the path prefix, operator and node names, quoted names, shapes,
    element types and numbers taken out (``facts.masked`` in SQL)."""
    out = f"regexp_replace({column}, '^(variant \\S+: )?\\S+ failed: ', '\\1PATH failed: ')"
    out = f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]*\\(\\d+\\)', 'OP(#)', 'g')"
    out = f"regexp_replace({out}, '\\([A-Z][A-Za-z0-9]*\\)', '(OP)', 'g')"
    out = f"regexp_replace({out}, '''[^'']*''', '''…''', 'g')"
    out = f"regexp_replace({out}, '\"[^\"]*\"( [A-Z][A-Za-z0-9]*)?', '\"…\" OP', 'g')"
    out = (f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]* does not support', "
           "'OP does not support', 'g')")
    out = f"regexp_replace({out}, '\\b[FIU](8|16|32|64)\\b', 'T', 'g')"
    out = f"regexp_replace({out}, '#?\\b\\d+(\\.\\d+)?([eE][-+]?\\d+)?\\b', '#', 'g')"
    out = f"regexp_replace({out}, '(#, )+#|(#,)+#', '…', 'g')"
    out = f"regexp_replace({out}, '(#,)+', '…,', 'g')"
    # a chained error (tract's "Caused by:" list) is named by its root cause, its last line
    out = (f"regexp_replace({out}, '^(PATH failed: [A-Za-z]+: )[\\s\\S]*\\n\\s*(?:#: )?"
           "([^\\n]*[^\\s])\\s*$', '\\1\\2')")
    return out


def kind_sql(template: str) -> str:
    """The kind a gero of schema 4 recorded (``facts.sentence_kind``), from a reason's
    template: ``nan``, ``defect:known upstream defect KEYS``, ``nonfinite:SIDE``,
    ``outside``, else ``law:`` and its first clause, masked."""
    body = f"regexp_replace({template}, '^(variant )?[A-Za-z0-9_.-]+: ', '')"
    nan_only = (f"{template} LIKE '%NaN on both sides%' AND NOT regexp_matches({template}, "
                "' is (NaN|\\+inf|-inf) at|elements outside|non-finite value')")
    side = (f"regexp_extract({body}, '(?:^|; )(actual|reference) is (NaN|\\+inf|-inf) at', "
            "1)")
    law = (f"trim(split_part(regexp_replace(regexp_replace({body}, "
           "' ?\\([^()]*\\)', '', 'g'), ' ?\\([^()]*\\)', '', 'g'), ';', 1))")
    return f"""CASE WHEN {nan_only} THEN 'nan'
                WHEN {template} LIKE '%known upstream defect%' THEN
                    'defect:known upstream defect ' || array_to_string(list_sort(list_distinct(
                        regexp_extract_all({template},
                                           'known upstream defect ([A-Za-z0-9_-]+)', 1))),
                        ', ')
                WHEN {side} <> '' THEN 'nonfinite:' || {side}
                WHEN regexp_matches({body}, '^# of # elements outside') THEN 'outside'
                ELSE 'law:' || {law} END"""


def scope_sql(suite: str, check: str) -> str:
    """``facts.scope_of`` in SQL: the variant file a model row names, the model, the graph."""
    return f"""CASE WHEN regexp_matches({check}, '^model:(int8-dynamic|int8-static|fp16)(:|$)')
                     THEN split_part({check}, ':', 2)
                     WHEN {suite} IN ('model', 'models') THEN 'model' ELSE 'graph' END"""


def law_name_sql(check: str) -> str:
    """``facts.law_name`` in SQL: ``law:`` and the law (``contract:NAME``), the gate
    (``model:fp16:scaled``) or the check."""
    return f"""'law:' || CASE
                WHEN {check} LIKE 'model:%' THEN regexp_extract({check}, '([^:]+)$', 1)
                WHEN {check} LIKE '%:%' THEN split_part({check}, ':', 2)
                ELSE {check} END"""


def tooling_key_sql(check: str, reason: str) -> str:
    """The ``tooling:`` cause key of a row about gero's own tooling, from its check and reason
    ('' for any other row): a variant file gero could not build, an output it does not
    compare, its float64 shadow or fp16 yardstick that could not run (out of its budget
    too). A gero before the notes wrote such a row as a failure (class ``execution``); the
    runner records it now as a note on a passed row."""
    return f"""CASE WHEN {check} LIKE '%:build' THEN 'tooling:variant-build'
                WHEN {check} = 'model:outputs' THEN 'tooling:tensor-outputs'
                WHEN starts_with({reason}, '{_YARDSTICK}') THEN 'tooling:fp16-yardstick'
                WHEN {check} = 'model:float64-shadow' OR starts_with({reason}, '{_SHADOW}')
                     OR starts_with({reason}, '{_NO_ARBITER}') THEN 'tooling:shadow'
                ELSE '' END"""


def out_of_budget_sql(reason: str) -> str:
    """Whether a failure's reason says its path ran out of its time budget
    (``facts._BUDGET_WORDS``)."""
    return f"regexp_matches({reason}, '{_BUDGET}')"


def derived_kind_sql(old_kind: str, result: str, check: str, reason: str) -> str:
    """The typed kind of a row written before schema 5, from the kind it recorded or was
    derived (``old_kind``), its result, check and reason."""
    checks = ", ".join(f"'{c}'" for c in COMPARISON_CHECKS)
    return f"""CASE WHEN {result} = 'passed' THEN ''
                WHEN {old_kind} LIKE 'defect:%' THEN 'defect'
                WHEN {result} = 'execution' AND {tooling_key_sql(check, reason)} <> ''
                    THEN 'tooling'
                WHEN {check} = 'model:fp16:precision' THEN 'law:precision'
                WHEN {result} = 'execution' AND {out_of_budget_sql(reason)}
                    THEN 'out-of-budget'
                WHEN {result} = 'execution' THEN 'cannot-run'
                WHEN {old_kind} IN ('nan', 'outside') OR {old_kind} LIKE 'nonfinite:%'
                    THEN {old_kind}
                WHEN {check} IN ({checks}) THEN 'outside'
                WHEN {check} LIKE 'contract:%'
                     AND regexp_matches({reason}, 'non-finite|NaN|[+-]?inf\\b')
                    THEN {law_name_sql(check)} || ':nonfinite'
                ELSE {law_name_sql(check)} END"""


def unsupported_sql(reason: str) -> str:
    """``facts.unsupported_op`` in SQL: ``unsupported-op:DOMAIN::OP`` or '' (a message that
    names no domain says ``ai.onnx``: the graph is not at hand here)."""
    cases = []
    for raw, domain, op in _UNSUPPORTED:
        pattern = raw.replace("'", "''")  # an SQL string literal
        d = (f"coalesce(nullif(regexp_extract({reason}, '{pattern}', {domain}), ''), "
             "'ai.onnx')" if domain else "'ai.onnx'")
        cases.append(f"WHEN regexp_matches({reason}, '{pattern}') THEN 'unsupported-op:' || "
                     f"{d} || '::' || regexp_extract({reason}, '{pattern}', {op})")
    return "CASE " + " ".join(cases) + " ELSE '' END"


def derived_key_sql(kind: str, old_kind: str, check: str, reason: str, template: str) -> str:
    """The cause key of a row written before schema 5 (``kind``: its derived kind): the
    registered defects, gero's tooling, a precision rewrite, the operator a runtime lacks,
    else a failure's masked error (``facts.error_key``)."""
    return f"""CASE WHEN {kind} = 'defect' THEN 'defect:' || replace(
                    substr({old_kind}, {len('defect:known upstream defect ') + 1}), ', ', ',')
                WHEN {kind} = 'tooling' THEN {tooling_key_sql(check, reason)}
                WHEN {kind} = 'law:precision' THEN 'precision-rewrite'
                WHEN {kind} = 'cannot-run' THEN coalesce(nullif({unsupported_sql(reason)}, ''),
                    'error:' || regexp_replace({template},
                                               '^(variant \\S+: )?(PATH failed: )?', ''))
                ELSE '' END"""


FAILED_PATH_SQL: Final = _FAILED
"""The path a failure's reason names (``facts.FAILED_PATH``)."""
