"""The explorer's view of one run: the one opener's ``obs``, plus the table's numbered views.

``gero_runner.storage.reader.open_run`` builds ``obs`` (the same view the CLI, export and
diff read); this module adds what the evaluations table needs on top of it.

The evaluations table reads a second view, ``evals``: the table's columns plus ``rn``, a
unique row number made from each file's Parquet row number. Nothing is copied into
memory: DuckDB filters Parquet's dictionary-encoded strings without decoding them, and a
page is found by sorting only ``rn`` and the sort keys, then fetching its rows by ``rn``
(a filter DuckDB pushes into the Parquet scan), see ``table.TableQuery.page``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from gero_runner.storage.index import KEY_COLUMN
from gero_runner.storage.reader import (
    OpenRun,
    absent_columns,
    file_columns,
    open_run,
    quote_path,
)

RunSource = OpenRun
"""The explorer's name for an open run (kept for its screens' annotations)."""

TABLE_COLUMNS = ("observation_id", "suite", "case_id", "op_type", "case_name", "check",
                 "dtype", "input_shapes", "output_name", "backend", "optimization", "reference",
                 "max_abs_error", "result", "reason", "arbiter", "scaled_error", "max_ulp",
                 "min_atol", "failed_path", "backend_version", "reference_version")
"""What the ``evals`` view holds besides ``rn``: the evaluations table's columns and filters."""
TABLE_RELATION = "evals"
NUMBERED_RELATION = "obs_numbered"
"""Every ``obs`` column plus ``rn``: one row fetched by its number is a pushed-down filter,
where one fetched by its id scans every id (about 8 against 96 ms on a million rows)."""
FILE_BITS = 40
"""``rn`` is (file index << FILE_BITS) | row number in the file: unique across files."""


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open_source(data_root: Path, run: str | None = None,
                connection: duckdb.DuckDBPyConnection | None = None) -> OpenRun:
    """Open a run (the newest, or a unique id prefix) for the explorer."""
    source = open_run(data_root, run, connection)
    _table_views(source)
    # Made again whenever a compaction underneath moves the run's rows (reader.OpenRun).
    source.extra_views = _table_views
    return source


def on_cursor(source: OpenRun, cursor: duckdb.DuckDBPyConnection) -> OpenRun:
    """The open run read through ``cursor``, a worker thread's own (DuckDB cursors are not
    shared between threads): for what takes a run and queries it from there (an export)."""
    return OpenRun(Path(source.data_root), source.run_id, cursor, list(source.problems))


def _table_views(source: OpenRun) -> None:
    """The evaluations table's views over what ``obs`` reads."""
    con = source.connection
    table_columns = ", ".join(_ident(name) for name in TABLE_COLUMNS)
    if source.direct:
        (own,) = source.files
        key = f", {KEY_COLUMN}" if KEY_COLUMN in file_columns(own) else ""
        present = file_columns(own)
        # a file of a gero before the facts (schema 3) lacks failed_path: NULL, as obs reads it
        direct_columns = ", ".join(
            _ident(name) if name in present or not present else f"NULL::VARCHAR AS {_ident(name)}"
            for name in TABLE_COLUMNS)
        con.execute(f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS SELECT file_row_number AS rn, "
                    f"{direct_columns} FROM read_parquet({quote_path(own)}, "
                    "file_row_number = true)")
        con.execute(f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS SELECT file_row_number AS rn, "
                    f"* EXCLUDE (file_row_number{key}){absent_columns(file_columns(own))} "
                    f"FROM read_parquet({quote_path(own)}, file_row_number = true)")
    elif source.sightings is not None:
        known = [file_columns(p) for p in source.files]
        absent = absent_columns(set().union(*known)) if all(known) else ""
        numbered = " UNION ALL BY NAME ".join(
            f"SELECT (file_row_number + {i << FILE_BITS}) AS rn, * EXCLUDE (file_row_number)"
            f"{absent} FROM read_parquet({quote_path(path)}, file_row_number = true)"
            for i, path in enumerate(source.files))
        if source.duplicates:  # read each observation once, as ``obs`` does
            numbered = (f"SELECT * FROM ({numbered}) QUALIFY row_number() OVER "
                        "(PARTITION BY observation_id ORDER BY created_at, rn) = 1")
        con.execute(f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS "
                    f"{source.sighted(f'({numbered})')}")
        con.execute(
            f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS SELECT rn, {table_columns} "
            f"FROM ({numbered}) WHERE {source.sighted_filter()}")
    else:
        con.execute(f"CREATE OR REPLACE VIEW {TABLE_RELATION} AS "
                    f"SELECT NULL::BIGINT AS rn, {table_columns} FROM obs")
        con.execute(f"CREATE OR REPLACE VIEW {NUMBERED_RELATION} AS "
                    "SELECT NULL::BIGINT AS rn, * FROM obs")
