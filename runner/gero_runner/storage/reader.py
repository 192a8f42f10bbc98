"""Reading a data root without a UI: list runs, open one as a DuckDB ``obs`` view, find rows.

The one way to open a run: the CLI (summary, export, diff), the explorer and any script
read observations through ``open_run`` (or ``Results``, its sqlite-utils-like front).
``obs`` holds every observation the run made, with that run's timings. A corrupt or
truncated Parquet file is named in ``problems`` and left out; it never stops a query.
Every value that comes from a user goes in as a parameter, never into the SQL text.

Neither pyarrow nor the runner's store is imported here (0.2 s the explorer cannot spend
before its first paint); DuckDB reads the Parquet files in place.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import duckdb

from gero_runner.distribution import DISTRIBUTION_NAMES
from gero_runner.errors import StoreError
from gero_runner.facts import FACT_NAMES
from gero_runner.storage.index import (
    KEY_COLUMN,
    StoreIndex,
    contradicted,
    contradiction,
    read_index,
    run_observation_file,
    verified_rows,
)
from gero_runner.storage.index import observation_files as indexed_files
from gero_runner.storage.layout import RUNS_DIR, SIGHTINGS_FILE, run_ids
from gero_runner.storage.runs import (
    RunInfo,
    list_runs,
    read_record,
    record_problems,
    resolve_run,
)

if TYPE_CHECKING:
    import pyarrow as pa

TIMING_COLUMNS = ("actual_median_ms", "reference_median_ms")
"""Columns a run's sighting overrides: each run has its own timings of a shared observation."""
MIN_PREFIX = 4
"""Hex digits an observation id prefix needs at least."""
_HEX = re.compile(r"[0-9a-f]+")


def quote_path(path: Path) -> str:
    """A path of ours (listed from the data root) as an SQL string literal; never user text."""
    return "'" + str(path).replace("'", "''") + "'"


def quoted_list(paths: list[Path] | tuple[Path, ...]) -> str:
    return "[" + ", ".join(quote_path(p) for p in paths) + "]"


class RunGone(StoreError):
    """The open run was removed from its data root underneath its reader (``gero gc
    --apply``, or by hand): there is nothing of it left to read."""

    def __init__(self, data_root: Path, run_id: str) -> None:
        super().__init__(f"run {run_id} is gone: it was removed from {data_root} while it was "
                         "open (gero gc --apply, or by hand)")
        self.run_id = run_id


@dataclass
class OpenRun:
    """An open DuckDB database with an ``obs`` view over one run's observations."""

    data_root: Path
    run_id: str
    connection: duckdb.DuckDBPyConnection
    problems: list[str] = field(default_factory=list)
    """One line per file that could not be read and was left out."""
    files: tuple[Path, ...] = ()
    """The observation files ``obs`` reads."""
    sightings: Path | None = None
    """The run's sightings file, when ``obs`` joins the files with it."""
    direct: bool = False
    """Whether ``obs`` reads the run's own observation file without a join."""
    duplicates: int = 0
    """Observations stored by more than one run's file (read once each)."""
    keyed: bool = False
    """Whether any of ``files`` has the ``observation_key`` column (left out of ``obs``)."""
    sighted_by: tuple[str, ...] = ()
    """The columns the run's sightings name observations by: ``observation_key`` and/or
    ``observation_id`` (runs of a gero before keys, observations stored without one)."""
    extra_views: Callable[[OpenRun], None] | None = field(default=None, repr=False)
    """Makes the caller's own views over ``obs`` again (the explorer's) after a reopen."""
    on_gone: Callable[[RunGone], None] | None = field(default=None, repr=False)
    """Told (from whichever thread asked for a cursor) when the run itself was removed
    underneath, before ``RunGone`` is raised: the explorer then leaves the run."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection to the same database for one thread (cursors are not shared)."""
        with self._lock:
            self._reopen_if_moved()
            return self.connection.cursor()

    def _reopen_if_moved(self) -> None:
        """A compaction or gc since the run was opened (an explorer left open) removes the
        files ``obs`` reads: its views are made again over the store as it is now, on the
        same connection (cursors already made see them too). The caller holds ``_lock``."""
        paths = [*self.files, *([self.sightings] if self.sightings is not None else [])]
        if all(p.exists() for p in paths):
            return
        if self.run_id not in run_ids(Path(self.data_root)):
            gone = RunGone(Path(self.data_root), self.run_id)
            if self.on_gone is not None:
                self.on_gone(gone)
            raise gone
        fresh = open_run(self.data_root, self.run_id, self.connection)
        for name in ("problems", "files", "sightings", "direct", "duplicates", "keyed",
                     "sighted_by"):
            setattr(self, name, getattr(fresh, name))
        if self.extra_views is not None:
            self.extra_views(self)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of a query, run on a fresh cursor, so that any thread may call it."""
        cur = self.cursor()
        try:
            return cur.execute(sql, params or []).fetchall()
        finally:
            cur.close()

    def arrow(self, sql: str = "SELECT * FROM obs", params: list[Any] | None = None,
              cursor: duckdb.DuckDBPyConnection | None = None) -> pa.Table:
        """A query's result as an Arrow table (every observation by default)."""
        return arrow_table(cursor or self.connection, sql, params or [])

    def relation(self) -> duckdb.DuckDBPyRelation:
        """The observations as a lazy DuckDB relation (filter, aggregate, then fetch)."""
        return self.connection.sql("SELECT * FROM obs")

    def sighted(self, stored: str, columns: str = "o.*") -> str:
        """SQL: the rows of ``stored`` (a FROM item) this run sighted, with its timings and
        without the key column (``columns`` names ``stored`` as ``o``)."""
        assert self.sightings is not None
        exclude = f" EXCLUDE ({KEY_COLUMN})" if self.keyed and columns.endswith("*") else ""
        timings = ", ".join(f"s.{c} AS {c}" for c in TIMING_COLUMNS)
        return " UNION ALL ".join(
            f"SELECT {columns}{exclude} REPLACE ({timings}) FROM {stored} o JOIN "
            f"(SELECT DISTINCT ON ({by}) * FROM read_parquet({quote_path(self.sightings)}) "
            f"WHERE {by} IS NOT NULL) s ON o.{by} = s.{by}" for by in self.sighted_by)

    def sighted_filter(self) -> str:
        """SQL condition on a stored row (its columns unqualified): this run sighted it."""
        assert self.sightings is not None
        return "(" + " OR ".join(
            f"{by} IN (SELECT {by} FROM read_parquet({quote_path(self.sightings)}) "
            f"WHERE {by} IS NOT NULL)" for by in self.sighted_by) + ")"

    def record(self) -> dict[str, Any]:
        """The run's ``run.json``: versions, settings, status, counts."""
        return read_record(self.data_root, self.run_id)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> OpenRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def arrow_table(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pa.Table:
    """A query's result as Arrow, without the extra copy of the DB-API path."""
    relation = con.sql(sql, params=params or None)
    # duckdb 2 names it to_arrow_table, duckdb 1 arrow(); both majors are allowed.
    fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
    table: pa.Table = fetch()
    return table


DEEP_CHECK_ROWS = 250_000
"""Files up to this many rows have every page decoded when a run is opened (about 45 ms per
17,000 rows): a page corrupt behind a valid footer is found then, not mid-query. Larger
files are checked by footer and schema only."""
# Columns readers rely on, by DuckDB type family ("schema.OBSERVATION_COLUMNS" restated
# without pyarrow; a test holds the two in step).
OBSERVATION_TYPES: dict[str, str] = {
    "observation_id": "VARCHAR", "run_id": "VARCHAR", "suite": "VARCHAR",
    "case_id": "VARCHAR", "op_type": "VARCHAR", "case_name": "VARCHAR", "check": "VARCHAR",
    "dtype": "VARCHAR", "backend": "VARCHAR", "optimization": "VARCHAR",
    "reference": "VARCHAR", "max_abs_error": "FLOAT", "result": "VARCHAR", "reason": "VARCHAR",
    "artifact_path": "VARCHAR", "actual_median_ms": "FLOAT", "reference_median_ms": "FLOAT",
    "graph_hash": "VARCHAR", "input_hash": "VARCHAR", "output_name": "VARCHAR",
    "mismatch_count": "INTEGER", "element_count": "INTEGER", "created_at": "TIMESTAMP",
}
SIGHTING_TYPES: dict[str, str] = {
    "observation_id": "VARCHAR", "actual_median_ms": "FLOAT", "reference_median_ms": "FLOAT"}
_FAMILIES = {
    "VARCHAR": ("VARCHAR",),
    "FLOAT": ("DOUBLE", "FLOAT", "REAL", "DECIMAL"),
    "INTEGER": ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "HUGEINT"),
    "TIMESTAMP": ("TIMESTAMP",),
}
_checked: dict[tuple[str, int, int], tuple[str | None, frozenset[str], int]] = {}
"""Files already checked in this process, by (path, mtime, size): None or the problem,
the file's columns and its rows."""
_checked_lock = threading.Lock()


def skipped(path: Path, why: str) -> str:
    """How every reader names a file it left out: the same words in every command."""
    return f"{path}: skipped, {why}"


def row_count(con: duckdb.DuckDBPyConnection, path: Path, problems: list[str]) -> int | None:
    """Rows in a Parquet file from its footer, or None (and a problem) when it is unreadable."""
    try:
        row = con.execute("SELECT num_rows FROM parquet_file_metadata(?)", [str(path)]).fetchone()
    except duckdb.Error as e:
        problems.append(skipped(path, f"not a readable Parquet file ({_first_line(e)})"))
        return None
    return int(row[0]) if row else 0


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__


def _schema_problem(types: dict[str, str], expected: dict[str, str]) -> str | None:
    if "observation_id" not in types:
        return "it has no observation_id column"
    for name, family in expected.items():
        if name in types and not types[name].startswith(_FAMILIES[family]):
            return f"column {name} is {types[name]}, expected {family}"
    return None


def _columns(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    return {str(r[0]): str(r[1]) for r in described}


def file_columns(path: Path) -> frozenset[str]:
    """The columns of a file ``check_file`` accepted in this process (empty: not checked)."""
    try:
        st = path.stat()
    except OSError:
        return frozenset()
    with _checked_lock:
        found = _checked.get((str(path), st.st_mtime_ns, st.st_size))
    return found[1] if found else frozenset()


def check_file(con: duckdb.DuckDBPyConnection, path: Path, problems: list[str],
               expected: dict[str, str] = OBSERVATION_TYPES,
               verified: int | None = None) -> int | None:
    """Rows in a Parquet file gero can read, or None (and a problem) when it must be left
    out: an unreadable footer, a foreign schema, or (up to ``DEEP_CHECK_ROWS`` rows) a data
    page that does not decode. ``verified``: the rows of a store file that is as its
    compaction wrote and decoded it (only its schema is read)."""
    try:
        st = path.stat()
    except OSError as e:
        if row_count(con, path, problems) is not None:
            problems.append(skipped(path, f"cannot be read ({e.strerror})"))
        return None
    key = (str(path), st.st_mtime_ns, st.st_size)
    with _checked_lock:
        cached = _checked.get(key)
    if cached is None:
        rows = verified if verified is not None else row_count(con, path, problems)
        if rows is None:
            return None
        columns: frozenset[str] = frozenset()
        try:
            types = _columns(con, path)
            columns = frozenset(types)
            problem = _schema_problem(types, expected)
            if problem is None and rows <= DEEP_CHECK_ROWS and verified is None:
                con.execute("SELECT max(hash(COLUMNS(*))) FROM read_parquet(?)", [str(path)])
        except duckdb.Error as e:
            problem = f"its data does not decode ({_first_line(e)})"
        cached = (problem, columns, rows)
        with _checked_lock:
            _checked[key] = cached
    problem, _, rows = cached
    if problem is not None:
        problems.append(skipped(path, problem))
        return None
    return rows


def _check_together(con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
    """Check small observation files in three queries, not three each (the loose runs of a
    long history); on any error each is checked alone, to name the one at fault."""
    keys = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            return  # each is checked alone, and the missing one named
        keys[path] = (str(path), st.st_mtime_ns, st.st_size)
    try:
        rows = dict(con.execute("SELECT file_name, num_rows FROM parquet_file_metadata(?)",
                                [[str(p) for p in paths]]).fetchall())
        types = {p: _columns(con, p) for p in paths}
        if any(_schema_problem(t, OBSERVATION_TYPES) for t in types.values()) or any(
                rows.get(str(p), DEEP_CHECK_ROWS + 1) > DEEP_CHECK_ROWS for p in paths):
            return
        con.execute(f"SELECT max(hash(COLUMNS(*))) FROM read_parquet({quoted_list(paths)}, "
                    "union_by_name = true)")
    except (duckdb.Error, OSError):
        return
    with _checked_lock:
        for path in paths:
            _checked[keys[path]] = (None, frozenset(types[path]), int(rows[str(path)]))


def observation_files(data_root: Path, con: duckdb.DuckDBPyConnection,
                      problems: list[str], index: StoreIndex | None = None,
                      runs: list[str] | None = None) -> list[Path]:
    """Every file of stored observations gero can read: the store's, then loose runs'."""
    index = read_index(data_root) if index is None else index
    if index.problem is not None:
        problems.append(index.problem)
    paths = indexed_files(data_root, index, runs)
    verified = {path: verified_rows(data_root, path, index) for path in paths}
    unknown = [path for path in paths if verified[path] is None and not file_columns(path)]
    if len(unknown) > 1:
        _check_together(con, unknown)
    return [path for path in paths
            if check_file(con, path, problems, verified=verified[path]) is not None]


def absent_columns(present: Iterable[str]) -> str:
    """SQL select items that add, as NULL, the columns files of an older gero lack (the
    error distribution, schema version 2; the facts, version 3):
    ``', NULL::DOUBLE AS "p99_abs_error"'``, or '' (also when ``present`` is empty: columns
    not known, none is added twice)."""
    have = set(present)
    if not have:
        return ""
    typed = [*((name, "DOUBLE") for name in DISTRIBUTION_NAMES),
             *((name, "VARCHAR") for name in FACT_NAMES)]
    return "".join(f', NULL::{kind} AS "{name}"' for name, kind in typed if name not in have)


def _empty_columns() -> str:
    """Every observation column as a typed NULL (a view with no rows but the full schema)."""
    # Deferred: the schema imports pyarrow (~0.15 s); only a run without observations needs it.
    from gero_runner.schema import OBSERVATION_COLUMNS

    names = {"string": "VARCHAR", "double": "DOUBLE", "int32": "INTEGER", "int64": "BIGINT",
             "bool": "BOOLEAN"}
    return ", ".join(f'NULL::{names.get(str(c.type), "TIMESTAMPTZ")} AS "{c.name}"'
                     for c in OBSERVATION_COLUMNS)


def open_run(data_root: str | os.PathLike[str], run: str | None = None,
             connection: duckdb.DuckDBPyConnection | None = None) -> OpenRun:
    """Open a run (the newest, or a unique id prefix): ``obs`` has every observation it made.

    The run's own observation file is read directly, with no join, when it holds every
    observation the run sighted (always so for a first run not yet compacted); otherwise
    the store's files and the loose runs' files are read (``union_by_name``: older files
    may lack newer columns) and joined with the run's sightings, by key (or, for runs of a
    gero before keys, by id), which also give this run's timings.
    """
    root = Path(data_root)
    runs = run_ids(root)
    run_id = resolve_run(root, run, runs)
    con = connection or duckdb.connect()
    # Parquet files written with float min/max statistics (pyarrow's default, older runs)
    # leave NaN out of them; DuckDB 2.0 then folds isnan(max_abs_error) to false, even in
    # a sort key. Without statistics propagation it looks at the values.
    con.execute("SET GLOBAL disabled_optimizers = 'statistics_propagation'")
    problems: list[str] = []
    index = read_index(root)
    if contradicted(root, index, [run_id]):
        # Its rows would be looked for in the store only: it would read as clean.
        raise StoreError(contradiction(root, [run_id]))
    own = run_observation_file(root, run_id)
    sightings = root / RUNS_DIR / run_id / SIGHTINGS_FILE
    problems += record_problems(root, run_id)
    own_rows = (check_file(con, own, problems) if run_id not in index.compacted
                and own.is_file() else None)
    sighted = (check_file(con, sightings, problems, SIGHTING_TYPES) if sightings.is_file()
               else None)
    if own_rows is not None and (sighted is None or sighted == own_rows):
        # The run's own file holds only observations it sighted; as many rows as sightings
        # means all of them, each with this run's timings.
        columns = "* EXCLUDE (observation_key)" if KEY_COLUMN in file_columns(own) else "*"
        con.execute(f"CREATE OR REPLACE VIEW obs AS SELECT {columns}"
                    f"{absent_columns(file_columns(own))} FROM read_parquet({quote_path(own)})")
        return OpenRun(root, run_id, con, problems, files=(own,), direct=True)
    before = list(problems)
    files = [path for path in observation_files(root, con, problems, index, runs)
             if path != own or own_rows is not None]
    # The own file was checked above: its problem is not named twice.
    problems[:] = before + [p for p in problems[len(before):] if p not in before]
    if files and sighted is not None:
        keyed = any(KEY_COLUMN in file_columns(path) for path in files)
        by = [KEY_COLUMN] if keyed and KEY_COLUMN in file_columns(sightings) else []
        if KEY_COLUMN not in file_columns(sightings) or con.execute(
                f"SELECT count(observation_id) > 0 FROM read_parquet({quote_path(sightings)})"
        ).fetchone() == (True,):
            by.append("observation_id")
        stored = f"read_parquet({quoted_list(files)}, union_by_name = true)"
        known = [file_columns(p) for p in files]
        absent = absent_columns(set().union(*known)) if all(known) else ""
        if absent:  # every file is of an older gero: its rows lack the newer columns
            stored = f"(SELECT *{absent} FROM {stored})"
        twice = con.execute(f"SELECT count(*) - count(DISTINCT observation_id) FROM {stored}"
                            ).fetchone()
        duplicates = int(twice[0]) if twice else 0
        if duplicates:
            # Runs of an older gero, or files copied by hand, may store an observation
            # twice: each is read once (the first stored).
            problems.append(f"{duplicates} observations are stored in more than one run's "
                            "file; each is read once")
            stored = (f"(SELECT * FROM {stored} QUALIFY row_number() OVER "
                      "(PARTITION BY observation_id ORDER BY created_at) = 1)")
        source = OpenRun(root, run_id, con, problems, files=tuple(files), sightings=sightings,
                         duplicates=duplicates, keyed=keyed, sighted_by=tuple(by))
        con.execute(f"CREATE OR REPLACE VIEW obs AS {source.sighted(stored)}")
        if (own_rows is None and run_id not in index.compacted) or len(problems) > len(before):
            # Its own file is gone or unreadable, or a file of the store is: what the
            # readable files hold may be all that is left (counted only in these damaged
            # cases).
            _refuse_if_lost(con, root, run_id, own, problems,
                            source.query("SELECT count(*) FROM obs")[0][0])
        return source
    _refuse_if_lost(con, root, run_id, own, problems, 0)
    con.execute(f"CREATE OR REPLACE VIEW obs AS SELECT {_empty_columns()} WHERE false")
    return OpenRun(root, run_id, con, problems)


def _refuse_if_lost(con: duckdb.DuckDBPyConnection, root: Path, run_id: str, own: Path,
                    problems: list[str], readable: int) -> None:
    """A StoreError when the run recorded observations and none can be read (an empty view
    would report it clean: 0 findings, exit 0); a problem line when its own file is missing
    and only part of them can."""
    recorded = _recorded_observations(root, run_id)
    if not recorded:
        return
    why = "; ".join(problems) if problems else f"{own} is missing"
    if readable == 0:
        con.close()
        raise StoreError(f"run {run_id} recorded {recorded:,} observations but none can be "
                         f"read: {why}. Restore the file, or run the suite again")
    if readable < recorded and problems:
        problems.append(f"{readable:,} of the run's {recorded:,} observations can be read "
                        "(those the readable files store) and are shown")
    elif not own.is_file():
        problems.append(f"{own} is missing: {readable:,} of the run's {recorded:,} "
                        "observations (those other runs also store) are shown")


def _recorded_observations(root: Path, run_id: str) -> int:
    """How many observations ``run.json`` says the run made (0 when it cannot say)."""
    try:
        count = read_record(root, run_id).get("observation_count")
    except StoreError:
        return 0
    return count if isinstance(count, int) else 0


def sighted_ids(data_root: str | os.PathLike[str], run: str | None = None) -> list[str]:
    """The ids of the observations a run made (its sightings, by key or by id)."""
    with open_run(data_root, run) as source:
        return [str(r[0]) for r in source.query("SELECT observation_id FROM obs")]


def resolve_observation(data_root: str | os.PathLike[str], prefix: str,
                        problems: list[str] | None = None) -> dict[str, Any]:
    """The one observation row (from any run) whose id starts with ``prefix``, like git."""
    root = Path(data_root)
    prefix = prefix.strip().lower()
    if len(prefix) < MIN_PREFIX or not _HEX.fullmatch(prefix):
        raise StoreError(f"bad observation id {prefix!r}: give at least {MIN_PREFIX} hex "
                         "digits of an observation_id (see `gero export` or the explorer)")
    problems = [] if problems is None else problems
    # Closed at once: an open DuckDB leaves threads that a later fork (the runner's worker
    # pool, in the same process) would inherit.
    with duckdb.connect() as con:
        files = observation_files(root, con, problems)
        if not files:
            raise StoreError(f"no observations in {root}: create a run with "
                             f"`gero run --data-dir {root}`")
        cursor = con.execute(
            f"SELECT COLUMNS(lambda c: c <> '{KEY_COLUMN}') FROM "
            f"read_parquet({quoted_list(files)}, union_by_name = true) "
            "WHERE starts_with(observation_id, ?) ORDER BY observation_id LIMIT 11", [prefix])
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    ids = sorted({r["observation_id"] for r in rows})
    if not ids:
        raise StoreError(f"no observation id starts with {prefix!r} in {root}")
    if len(ids) > 1:
        listed = "\n".join(f"  {r['observation_id'][:16]}  {r['case_id']}  {r['check']}  "
                           f"{r['backend']} {r['optimization']}  {r['result']}"
                           for r in rows[:10])
        more = " (first 10)" if len(rows) > 10 else ""
        raise StoreError(f"observation prefix {prefix!r} is ambiguous; candidates{more}:\n"
                         f"{listed}")
    return rows[0]


class Results:
    """A data root opened for reading, in the spirit of sqlite-utils' ``Database``::

        results = Results("data")
        results.runs()                         # newest first, with status and counts
        with results.open_run() as run:        # the newest run, or an id prefix
            table = run.arrow()                # every observation as Arrow
            worst = run.relation().filter("result <> 'passed'")
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Results({str(self.path)!r})"

    def runs(self) -> list[RunInfo]:
        """Every run, newest first; an unreadable record has ``problem`` set."""
        return list_runs(self.path)

    def resolve(self, prefix: str | None = None) -> str:
        """The full id of the newest run, or of the one run whose id starts with ``prefix``."""
        return resolve_run(self.path, prefix)

    def open_run(self, run: str | None = None) -> OpenRun:
        """A run's observations as a DuckDB ``obs`` view (see ``open_run``)."""
        return open_run(self.path, run)

    def record(self, run: str | None = None) -> dict[str, Any]:
        """A run's ``run.json``."""
        return read_record(self.path, self.resolve(run))

    def observation(self, prefix: str) -> dict[str, Any]:
        """The observation (from any run) whose id starts with ``prefix``."""
        return resolve_observation(self.path, prefix)
