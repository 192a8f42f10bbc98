"""The members table: one row per non-passed observation with its finding (one per defect for
a row that hits several registered defects), built in DuckDB by named stages composed in
order.

Per row: the path it blames (its own, or the side its float64 arbiter does not side with).
Per case and check family: when every runtime that ran the case is blamed, the case is one
group (``every path``); otherwise each blamed runtime's rows are a group, its outlier the
runtime (or ``runtime@settings`` when only some of its settings are off). A group's
template is its decisive row's (rows against float64 first). Each stage is one common table
expression that reads the stages above it by name, so a test runs one alone on tables of
hand-made rows named like its inputs.
"""

from __future__ import annotations

from pathlib import Path

from gero.query.findings.members.groups import (
    blamed_sql,
    everyone_sql,
    grouped_sql,
    groups_sql,
    kind_sets_sql,
    kinds_sql,
    labelled_sql,
    off_on_file_sql,
    off_sql,
)
from gero.query.findings.members.keys import hashed_sql, keyed_sql, members_select, signed_sql
from gero.query.findings.members.reasons import reasons_sql, templates_sql
from gero.query.findings.members.rows import (
    decided_sql,
    facts_sql,
    present_sql,
    raw_sql,
    rows_sql,
    runtime_rows_sql,
    runtimes_sql,
)
from gero.query.findings.model import MEMBERS_TABLE, ORDER_TABLE, Queryable

MATERIALIZED = frozenset({"raw", "present"})
"""Stages read by several later ones and costly to recompute: DuckDB computes them once."""


def stages(relation: str = "obs") -> tuple[tuple[str, str], ...]:
    """Each stage's name and SELECT, in the order they run (a stage reads those above it)."""
    return (
        ("raw", raw_sql(relation)),
        ("reasons", reasons_sql()),
        ("templates", templates_sql()),
        ("facts", facts_sql()),
        ("rows", rows_sql()),
        ("present", present_sql(relation)),
        ("runtimes", runtimes_sql()),
        ("decided", decided_sql(relation)),
        ("runtime_rows", runtime_rows_sql()),
        ("kind_sets", kind_sets_sql()),
        ("everyone", everyone_sql()),
        ("off", off_sql()),
        ("off_on_file", off_on_file_sql()),
        ("blamed", blamed_sql()),
        ("grouped", grouped_sql()),
        ("kinds", kinds_sql()),
        ("groups", groups_sql()),
        ("labelled", labelled_sql()),
        ("keyed", keyed_sql()),
        ("signed", signed_sql()),
        ("hashed", hashed_sql()),
    )


def members_sql(relation: str = "obs", through: str | None = None) -> str:
    """SQL that selects one row per non-passed observation of ``relation`` with its finding;
    ``through``: the rows of that stage instead (the stages it reads composed before it)."""
    chain = stages(relation)
    names = [name for name, _ in chain]
    if through is not None:
        chain = chain[:names.index(through) + 1]
    ctes = ",\n".join(f"{name} AS {'MATERIALIZED ' if name in MATERIALIZED else ''}({sql}\n)"
                      for name, sql in chain)
    last = members_select() if through is None else f"SELECT * FROM {through}"
    return f"WITH {ctes}\n{last}\n"


def build_members(source: Queryable, relation: str = "obs", table: str = MEMBERS_TABLE,
                  cached: Path | None = None) -> None:
    """Write the members table into the source's database (kept for filters and grouping),
    and, for the default table, each member's finding rank (worst first, as listed).
    ``cached``: a members file of this run written earlier, read instead of grouping."""
    if cached is not None:
        source.query(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM read_parquet(?)",
                     [str(cached)])
    else:
        source.query(f"CREATE OR REPLACE TABLE {table} AS {members_sql(relation)}")
    if table == MEMBERS_TABLE:
        # one rank per observation: a row that hits two registered defects is a member of
        # both findings, and sorts with the worse
        source.query(f"""CREATE OR REPLACE TABLE {ORDER_TABLE} AS
            SELECT m.observation_id, min(r.finding_rank) AS finding_rank FROM {table} m JOIN (
                -- finding_order's keys: the assessable first, then severity, size, id
                SELECT finding_id, row_number() OVER (
                    ORDER BY bool_and(why <> ''), max(severity) DESC, count(*) DESC,
                             finding_id) AS finding_rank
                FROM {table} GROUP BY finding_id) r USING (finding_id)
            GROUP BY m.observation_id""")


def has_members(source: Queryable) -> bool:
    """Whether the findings of this source were computed (their tables exist)."""
    rows = source.query("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                        [ORDER_TABLE])
    return bool(rows and rows[0][0])
