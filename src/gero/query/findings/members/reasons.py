"""Stages 2 and 3: each distinct reason of a row a gero before schema 5 wrote, read once,
as a template and a kind (``gero_runner.storage.derivation``, the one place a reason is
read); a row of schema 5 records its facts and is not read here.

The regular expressions run once per distinct reason of such rows, not once per row.
"""

from __future__ import annotations

from gero_runner.storage.derivation import kind_sql, template_sql

__all__ = ["kind_sql", "reasons_sql", "template_sql", "templates_sql"]


def reasons_sql() -> str:
    """``reasons`` (reads ``raw``): each distinct reason of a row written before schema 5
    (``old``), its template and whether a row of it was recorded without its kind
    (``unkinded``, before schema 4)."""
    return f"""
    SELECT reason, {template_sql('reason')} AS template, unkinded
    FROM (SELECT reason, bool_or(failure_kind IS NULL) AS unkinded FROM raw WHERE old
          GROUP BY reason)"""


def templates_sql() -> str:
    """``templates`` (reads ``reasons``): the schema-4 kind of each template whose rows a
    gero before schema 4 wrote (NULL where every row of it records one)."""
    return f"""
    SELECT reason, template, CASE WHEN unkinded THEN {kind_sql('template')} END AS kind
    FROM reasons"""
