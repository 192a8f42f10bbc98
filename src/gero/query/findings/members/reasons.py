"""Stages 2 and 3: each distinct reason read once, as a template and, for a row recorded
without its kind, a kind.

The template is the reason with the path prefix, operator and node names, quoted names,
shapes, element types and numbers taken out (a failure's grouping key, still read from the
English ``reason``); the kind is what a failed comparison or law says, its figures aside:
the runner records it (``failure_kind``, schema 4, ``gero_runner.facts``), and ``kind_sql``
derives it, once, for the rows of a gero before (``rows`` takes the recorded one first). The
regular expressions run once per distinct reason, not once per row.
"""

from __future__ import annotations


def template_sql(column: str) -> str:
    """The reason with the path prefix, operator and node names, quoted names, shapes,
    element types and numbers taken out."""
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
    """What a failed comparison or law says, its figures aside: NaN fed on both sides and
    nothing else (``nan``), a registered upstream defect (``defect:…``), a non-finite
    mismatch naming the side that is non-finite (``nonfinite:actual``,
    ``nonfinite:reference``), finite values out of tolerance (``outside``), or the law's
    own sentence with its details cut (``law:…``)."""
    body = f"regexp_replace({template}, '^(variant )?[A-Za-z0-9_.-]+: ', '')"
    nan_only = (f"{template} LIKE '%NaN on both sides%' AND NOT regexp_matches({template}, "
                "' is (NaN|\\+inf|-inf) at|elements outside|non-finite value')")
    side = (f"regexp_extract({body}, '(?:^|; )(actual|reference) is (NaN|\\+inf|-inf) at', "
            "1)")
    law = (f"trim(split_part(regexp_replace(regexp_replace({body}, "
           "' ?\\([^()]*\\)', '', 'g'), ' ?\\([^()]*\\)', '', 'g'), ';', 1))")
    return f"""CASE WHEN {nan_only} THEN 'nan'
                WHEN {template} LIKE '%known upstream defect%' THEN
                    -- the registry keys alone: the entry's description holds an apostrophe
                    -- ("the batch's"), which the template masks up to the next one, so a
                    -- split at ' — ' kept each row's own figures (one defect, 3 findings)
                    'defect:known upstream defect ' || array_to_string(list_sort(list_distinct(
                        regexp_extract_all({template},
                                           'known upstream defect ([A-Za-z0-9_-]+)', 1))),
                        ', ')
                WHEN {side} <> '' THEN 'nonfinite:' || {side}
                WHEN regexp_matches({body}, '^# of # elements outside') THEN 'outside'
                ELSE 'law:' || {law} END"""


def reasons_sql() -> str:
    """``reasons`` (reads ``raw``): each distinct reason, its template (the path a failure
    names is a recorded fact, ``raw``'s ``failed_path``) and whether a row of it was
    recorded without its kind (``unkinded``)."""
    return f"""
    SELECT reason, {template_sql('reason')} AS template, unkinded
    FROM (SELECT reason, bool_or(failure_kind IS NULL) AS unkinded FROM raw GROUP BY reason)"""


def templates_sql() -> str:
    """``templates`` (reads ``reasons``): the kind derived from each template whose rows a
    gero before schema 4 wrote (NULL where every row of it records its own)."""
    return f"""
    SELECT reason, template, CASE WHEN unkinded THEN {kind_sql('template')} END AS kind
    FROM reasons"""
