"""Observations addressed by id prefix, like git commits: unique prefix in, full row out."""

from __future__ import annotations

import re
from typing import Any

import duckdb

from gero_runner.errors import StoreError
from gero_runner.storage.store import DataRoot
from gero_tui.query.store import list_sql, readable

MIN_PREFIX = 4
_HEX = re.compile(r"[0-9a-f]+")


def _source(root: DataRoot, problems: list[str]) -> str:
    files = [p for p in root.observation_files() if readable(p, problems)]
    if not files:
        raise StoreError(f"no observations in {root.path}: create a run with "
                         f"`gero run --data-dir {root.path}`")
    return f"read_parquet({list_sql(files)}, union_by_name = true)"


def resolve_observation(root: DataRoot, prefix: str,
                        problems: list[str] | None = None) -> dict[str, Any]:
    """The one observation row (from any run) whose id starts with ``prefix``."""
    prefix = prefix.strip().lower()
    if len(prefix) < MIN_PREFIX or not _HEX.fullmatch(prefix):
        raise StoreError(f"bad observation id {prefix!r}: give at least {MIN_PREFIX} hex "
                         "digits of an observation_id (see `gero export` or the explorer)")
    problems = [] if problems is None else problems
    # Closed at once: an open DuckDB leaves threads that a later fork (the runner's worker
    # pool, in the same process) would inherit.
    with duckdb.connect() as con:
        cursor = con.execute(
            f"SELECT * FROM {_source(root, problems)} WHERE starts_with(observation_id, ?) "
            "ORDER BY observation_id LIMIT 11", [prefix])
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    ids = sorted({r["observation_id"] for r in rows})
    if not ids:
        raise StoreError(f"no observation id starts with {prefix!r} in {root.path}")
    if len(ids) > 1:
        listed = "\n".join(f"  {r['observation_id'][:16]}  {r['case_id']}  {r['check']}  "
                           f"{r['backend']} {r['optimization']}  {r['result']}"
                           for r in rows[:10])
        more = " (first 10)" if len(rows) > 10 else ""
        raise StoreError(f"observation prefix {prefix!r} is ambiguous; candidates{more}:\n"
                         f"{listed}")
    return rows[0]
