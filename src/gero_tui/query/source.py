"""The explorer's view of one run: DuckDB over the data root's Parquet files, nothing else.

Like ``store.open_run`` this gives an ``obs`` view of every observation the run made, but
it imports neither pyarrow nor the runner's store (0.2 s the explorer cannot spend before
its first paint), and it reads the run's own observation file directly, with no join,
when that file holds every observation the run sighted (always so for a first run).

The evaluations table reads a second view, ``evals``: the table's columns plus ``rn``, a
unique row number made from each file's Parquet row number. Nothing is copied into
memory: DuckDB filters Parquet's dictionary-encoded strings without decoding them, and a
page is found by sorting only ``rn`` and the sort keys, then fetching its rows by ``rn``
(a filter DuckDB pushes into the Parquet scan), see ``table.TableQuery.page``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from gero_tui.query.runs import OBSERVATIONS_FILE, RUNS_DIR, SIGHTINGS_FILE, resolve, run_ids

# Columns the explorer's table, filters and overview read, with their DuckDB types (the
# types of gero_runner.schema; tests hold the two in step).
EXPLORER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("observation_id", "VARCHAR"),
    ("suite", "VARCHAR"),
    ("case_id", "VARCHAR"),
    ("op_type", "VARCHAR"),
    ("case_name", "VARCHAR"),
    ("check", "VARCHAR"),
    ("dtype", "VARCHAR"),
    ("input_shapes", "VARCHAR"),
    ("backend", "VARCHAR"),
    ("optimization", "VARCHAR"),
    ("reference", "VARCHAR"),
    ("max_abs_error", "DOUBLE"),
    ("result", "VARCHAR"),
    ("reason", "VARCHAR"),
    ("actual_median_ms", "DOUBLE"),
    ("reference_median_ms", "DOUBLE"),
)
TIMING_COLUMNS = ("actual_median_ms", "reference_median_ms")
TABLE_COLUMNS = ("observation_id", "suite", "op_type", "case_name", "check", "dtype",
                 "input_shapes", "backend", "optimization", "max_abs_error", "result", "reason")
"""What the ``evals`` view holds besides ``rn``: the evaluations table's columns and filters."""
TABLE_RELATION = "evals"
NUMBERED_RELATION = "obs_numbered"
"""Every ``obs`` column plus ``rn``: one row fetched by its number is a pushed-down filter,
where one fetched by its id scans every id (about 8 against 96 ms on a million rows)."""
FILE_BITS = 40
"""``rn`` is (file index << FILE_BITS) | row number in the file: unique across files."""


def quote_path(path: Path) -> str:
    """A path of ours (listed from the data root) as an SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def _quoted_list(paths: list[Path]) -> str:
    return "[" + ", ".join(quote_path(p) for p in paths) + "]"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class RunSource:
    """An open DuckDB database with an ``obs`` view over one run's observations."""

    data_root: Path
    run_id: str
    connection: duckdb.DuckDBPyConnection
    problems: list[str] = field(default_factory=list)
    """One line per file that could not be read and was left out."""
    direct: bool = False
    """Whether ``obs`` reads the run's own observation file without a join."""
    relation: str = TABLE_RELATION
    """What table queries read: the ``evals`` view (``rn`` and the table's columns)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection to the same database for one thread (cursors are not shared)."""
        with self._lock:
            return self.connection.cursor()

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run on a fresh cursor, so that any thread may call it."""
        cur = self.cursor()
        try:
            return cur.execute(sql, params or []).fetchall()
        finally:
            cur.close()

    def close(self) -> None:
        self.connection.close()


def _row_count(con: duckdb.DuckDBPyConnection, path: Path, problems: list[str]) -> int | None:
    """Rows in a Parquet file from its footer, or None (and a problem) when it is unreadable."""
    try:
        row = con.execute("SELECT num_rows FROM parquet_file_metadata(?)", [str(path)]).fetchone()
    except duckdb.Error as e:
        problems.append(f"{path}: unreadable Parquet file, skipped ({e})")
        return None
    return int(row[0]) if row else 0


def open_source(data_root: Path, run: str | None = None,
                connection: duckdb.DuckDBPyConnection | None = None) -> RunSource:
    """Open a run (the newest, or a unique id prefix) for the explorer."""
    run_id = resolve(data_root, run)
    con = connection or duckdb.connect()
    # Parquet files written with float min/max statistics (pyarrow's default, older runs)
    # leave NaN out of them; DuckDB 2.0 then folds isnan(max_abs_error) to false, even in
    # the table's sort key. Without statistics propagation it looks at the values.
    con.execute("SET GLOBAL disabled_optimizers = 'statistics_propagation'")
    problems: list[str] = []
    run_dir = data_root / RUNS_DIR / run_id
    own = run_dir / OBSERVATIONS_FILE
    sightings = run_dir / SIGHTINGS_FILE
    own_rows = _row_count(con, own, problems) if own.is_file() else None
    sighted = _row_count(con, sightings, problems) if sightings.is_file() else None
    direct = own_rows is not None and (sighted is None or sighted == own_rows)
    table_columns = ", ".join(_ident(name) for name in TABLE_COLUMNS)
    if direct:
        # The run's own file holds only observations it sighted; as many rows as sightings
        # means all of them, each with this run's timings.
        con.execute(f"CREATE OR REPLACE VIEW obs AS SELECT * FROM read_parquet({quote_path(own)})")
        con.execute(f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS SELECT file_row_number AS rn, "
                    f"{table_columns} FROM read_parquet({quote_path(own)}, "
                    "file_row_number = true)")
        con.execute(f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS SELECT file_row_number AS rn, "
                    f"* EXCLUDE (file_row_number) FROM read_parquet({quote_path(own)}, "
                    "file_row_number = true)")
    else:
        files = []
        for rid in run_ids(data_root):
            path = data_root / RUNS_DIR / rid / OBSERVATIONS_FILE
            readable = (own_rows is not None if path == own else
                        path.is_file() and _row_count(con, path, problems) is not None)
            if readable:
                files.append(path)
        if files and sighted is not None:
            timings = ", ".join(f"s.{c} AS {c}" for c in TIMING_COLUMNS)
            con.execute(
                f"CREATE OR REPLACE VIEW obs AS SELECT o.* REPLACE ({timings}) "
                f"FROM read_parquet({_quoted_list(files)}, union_by_name = true) o "
                f"JOIN read_parquet({quote_path(sightings)}) s USING (observation_id)"
            )
            numbered = " UNION ALL BY NAME ".join(
                f"SELECT (file_row_number + {i << FILE_BITS}) AS rn, * EXCLUDE (file_row_number) "
                f"FROM read_parquet({quote_path(path)}, file_row_number = true)"
                for i, path in enumerate(files))
            con.execute(
                f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS SELECT o.* REPLACE ({timings}) "
                f"FROM ({numbered}) o JOIN read_parquet({quote_path(sightings)}) s "
                "USING (observation_id)")
            con.execute(
                f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS SELECT rn, {table_columns} "
                f"FROM ({numbered}) WHERE observation_id IN "
                f"(SELECT observation_id FROM read_parquet({quote_path(sightings)}))")
        else:
            columns = ", ".join(f"NULL::{t} AS {_ident(n)}" for n, t in EXPLORER_COLUMNS)
            con.execute(f"CREATE OR REPLACE VIEW obs AS SELECT {columns} WHERE false")
            con.execute(f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS "
                        f"SELECT NULL::BIGINT AS rn, {table_columns} FROM obs")
            con.execute(f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS "
                        "SELECT NULL::BIGINT AS rn, * FROM obs")
    return RunSource(data_root, run_id, con, problems, direct=direct)
