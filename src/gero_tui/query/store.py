"""A DuckDB view of one run's observations, read straight from the data root's Parquet files.

A corrupt or truncated Parquet file is named in ``problems`` and left out; it never stops a
query. Every value that comes from a user goes in as a parameter, never into the SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.schema import OBSERVATION_SCHEMA
from gero_runner.storage.layout import OBSERVATIONS_FILE, SIGHTINGS_FILE
from gero_runner.storage.store import DataRoot
from gero_tui.query import runs


@dataclass
class RunView:
    """An open DuckDB connection with an ``obs`` view over one run's observations."""

    root: DataRoot
    run_id: str
    connection: duckdb.DuckDBPyConnection
    problems: list[str] = field(default_factory=list)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql, params or []).fetchall()

    def arrow(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        return self.connection.sql(sql, params=params or None).to_arrow_table()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for another thread (DuckDB connections are not shared across threads)."""
        return self.connection.cursor()


def readable(path: Path, problems: list[str]) -> bool:
    """Whether a Parquet file's footer reads; otherwise say which file and why."""
    try:
        pq.read_metadata(path)
    except (OSError, pa.ArrowException) as e:
        problems.append(f"{path}: unreadable Parquet file, skipped ({e})")
        return False
    return True


def resolve_run(root: DataRoot, prefix: str | None) -> str:
    """The newest run, or the one run whose id starts with ``prefix`` (like git)."""
    return runs.resolve(root.path, prefix)


def _list_sql(paths: list[Path]) -> str:
    # Paths are ours (listed from the data root), quoted for SQL; not user text.
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


list_sql = _list_sql  # public name for other query modules (ids, diff)


def open_run(root: DataRoot, run_id: str | None = None,
             connection: duckdb.DuckDBPyConnection | None = None) -> RunView:
    """Open a run: ``obs`` has every observation the run made, with that run's timings."""
    run = resolve_run(root, run_id)
    con = connection or duckdb.connect()
    problems: list[str] = []
    files = [p for p in root.observation_files() if readable(p, problems)]
    sightings = root.run_dir(run) / SIGHTINGS_FILE
    has_sightings = sightings.is_file() and readable(sightings, problems)
    columns = ", ".join(f.name for f in OBSERVATION_SCHEMA)
    own = root.run_dir(run) / OBSERVATIONS_FILE
    if files and has_sightings:
        con.execute(
            f"CREATE OR REPLACE VIEW obs AS SELECT {columns_with_timings()} "
            f"FROM read_parquet({_list_sql(files)}) o "
            f"JOIN read_parquet({_list_sql([sightings])}) s USING (observation_id)"
        )
    elif own in files:
        con.execute(f"CREATE OR REPLACE VIEW obs AS SELECT {columns} "
                    f"FROM read_parquet({_list_sql([own])})")
    else:
        empty = pa.Table.from_pylist([], schema=OBSERVATION_SCHEMA)
        con.register("obs_empty", empty)
        con.execute("CREATE OR REPLACE VIEW obs AS SELECT * FROM obs_empty")
    return RunView(root, run, con, problems)


def columns_with_timings() -> str:
    """Observation columns, with timings taken from this run's sighting."""
    out = []
    for f in OBSERVATION_SCHEMA:
        if f.name in ("actual_median_ms", "reference_median_ms"):
            out.append(f"s.{f.name} AS {f.name}")
        elif f.name == "observation_id":
            out.append("observation_id")
        else:
            out.append(f"o.{f.name}")
    return ", ".join(out)
