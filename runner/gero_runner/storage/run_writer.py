"""Writing one run into a data root as it goes, so that nothing it finished is lost.

A run's directory holds ``run.json`` (its record), ``request.json`` (what was asked, for
``--resume``), ``cases.txt`` (the ids of the cases it finished), and its two Parquet
tables. The record says ``running`` from the start; every save rewrites the tables and then
the record, each atomically, so a run stopped by anything (kill -9, SIGTERM, a full disk)
keeps everything up to its last save and a reader sees a consistent run. While it runs,
the run holds the lock ``.running`` in its directory; a record that says ``running``
without a live holder is an interrupted run (``locks.effective_status``).

Deduplication against the other runs happens under the data root's lock: the stored ids
are read, this run's new observations are chosen and written, then the lock is released.
Two runs into one root therefore never store one observation twice, and a run id can only
be created once (``mkdir`` under the same lock).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gero_runner.errors import GeroError, StoreError
from gero_runner.schema import OBSERVATION_SCHEMA, RESULT_CLASSES, RunRecord
from gero_runner.storage.compact import compact, maybe_compact
from gero_runner.storage.index import (
    KEY_COLUMN,
    StoreIndex,
    loose_runs,
    observation_files,
    read_index,
    refuse_hostile,
    run_observation_file,
    write_index,
)
from gero_runner.storage.layout import OBSERVATIONS_FILE, RUN_FILE, SIGHTINGS_FILE
from gero_runner.storage.locks import RunLock, RunningError, effective_status, root_lock
from gero_runner.storage.store import (
    KEY_FIELD,
    STORED_OBSERVATION_SCHEMA,
    STORED_SIGHTING_SCHEMA,
    DataRoot,
    atomic_write_bytes,
    atomic_write_table,
    with_constants,
)

TIMING_COLUMNS = ("actual_median_ms", "reference_median_ms")
"""What a sighting keeps of its observation's row besides the key: this run's timings."""
REQUEST_FILE = "request.json"
CASES_FILE = "cases.txt"
SAVE_EVERY_S = 1.0
"""Least seconds between two saves of a running run."""
SAVE_COST_SHARE = 0.05
"""...and saves take at most this share of the run's time (a save rewrites the tables)."""

Warn = Callable[[str], None]


@dataclass
class _Stored:
    """Rows kept by this run so far, each table with the case position of its rows."""

    tables: list[pa.Table] = field(default_factory=list)
    positions: list[np.ndarray] = field(default_factory=list)

    def add(self, table: pa.Table, positions: np.ndarray) -> None:
        self.tables.append(table)
        self.positions.append(positions)

    def in_case_order(self, schema: pa.Schema) -> pa.Table:
        """One table, rows in case order (so it does not depend on the worker count)."""
        if not self.tables:
            return schema.empty_table()
        table = pa.concat_tables(self.tables).combine_chunks()
        order = np.argsort(np.concatenate(self.positions), kind="stable")
        return table.take(pa.array(order))

    def max_key(self) -> int:
        """The largest key these rows hold (-1: none)."""
        tops = [pc.max(t.column(KEY_COLUMN)).as_py() for t in self.tables if t.num_rows]
        return max((int(k) for k in tops if k is not None), default=-1)


class KnownIds:
    """Observations stored by other runs (id and key), re-read only from files that changed."""

    def __init__(self, root: DataRoot, own_run: str) -> None:
        self.root = root
        self.own_run = own_run
        self._tables: dict[Path, tuple[tuple[int, int], pa.Table]] = {}
        self._ids: pa.ChunkedArray = pa.chunked_array([], pa.string())
        self._keys: pa.ChunkedArray = pa.chunked_array([], pa.int64())

    def refresh(self, index: StoreIndex, warn: Warn | None) -> None:
        own = run_observation_file(self.root.path, self.own_run)
        tables: dict[Path, tuple[tuple[int, int], pa.Table]] = {}
        for path in observation_files(self.root.path, index):
            if path == own:
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self._tables.get(path)
            if cached is not None and cached[0] == stamp:
                tables[path] = cached
                continue
            try:
                tables[path] = (stamp, _ids_and_keys(path))
            except (OSError, pa.ArrowException, KeyError) as e:
                if warn is not None:
                    warn(f"{path}: unreadable observation file, skipped ({e})")
        if tables.keys() != self._tables.keys() or any(
                tables[p][0] != self._tables[p][0] for p in tables):
            self._tables = tables
            parts = [t for _, t in tables.values()]
            self._ids = pa.chunked_array([t.column(0) for t in parts], pa.string())
            self._keys = pa.chunked_array([t.column(1) for t in parts], pa.int64())

    def lookup(self, ids: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """For each id: whether another run stores it, and its key there (null: none)."""
        found = pc.index_in(ids, value_set=self._ids.combine_chunks())
        keys = self._keys.combine_chunks().take(found)
        return found.is_valid().to_numpy(zero_copy_only=False), keys

    def ids_for(self, keys: pa.Array) -> pa.Array:
        """The ids of stored keys (null where no other run's file holds the key)."""
        found = pc.index_in(keys, value_set=self._keys.combine_chunks())
        return self._ids.combine_chunks().take(found)

    def max_key(self) -> int:
        """The largest key any other run's file holds (-1: none)."""
        top = pc.max(self._keys).as_py()
        return -1 if top is None else int(top)


def _ids_and_keys(path: Path) -> pa.Table:
    """A file's ids and keys (null keys for a file written without them)."""
    names = pq.read_schema(path).names
    columns = ["observation_id"] + ([KEY_COLUMN] if KEY_COLUMN in names else [])
    table = pq.read_table(path, columns=columns)
    ids = table.column("observation_id").cast(pa.string())
    keys = (table.column(KEY_COLUMN).cast(pa.int64()) if KEY_COLUMN in names
            else pa.nulls(table.num_rows, pa.int64()))
    return pa.table({"observation_id": ids, KEY_COLUMN: keys})


class _Seen:
    """The ids a run has sighted, as Arrow arrays (a run sights tens of thousands)."""

    def __init__(self) -> None:
        self._chunks: list[pa.Array] = []
        self._count = 0

    def add(self, ids: pa.Array) -> None:
        """Ids not seen before (the caller makes sure)."""
        self._chunks.append(ids)
        self._count += len(ids)

    def contains(self, ids: pa.Array) -> np.ndarray:
        if not self._count:
            return np.zeros(len(ids), dtype=bool)
        values = pa.chunked_array(self._chunks, pa.string()).combine_chunks()
        self._chunks = [values]
        found: np.ndarray = pc.is_in(ids, value_set=values).to_numpy(zero_copy_only=False)
        return found

    def to_set(self) -> set[str]:
        return {i for c in self._chunks for i in c.to_pylist() if isinstance(i, str)}

    def __len__(self) -> int:
        return self._count


@dataclass
class _Pending:
    position: int
    case_id: str
    batch: pa.RecordBatch


class RunWriter:
    """One run being written: ``add`` finished cases, ``save_if_due``, ``finish``."""

    def __init__(self, root: DataRoot, run_id: str, fields: dict[str, Any], lock: RunLock,
                 warn: Warn | None = None) -> None:
        self.root = root
        self.run_id = run_id
        self.fields = fields
        """The record's fixed fields (versions, settings, started_at, ...)."""
        self.lock = lock
        self.warn = warn
        self.known = KnownIds(root, run_id)
        self.seen = _Seen()
        self.counts = dict.fromkeys(RESULT_CLASSES, 0)
        self.case_ids: list[str] = []
        self.observations = _Stored()
        self.sightings = _Stored()
        self.new_count = 0
        self.seconds = {"backend_seconds": 0.0, "evidence_seconds": 0.0, "case_seconds": 0.0,
                        "store_seconds": 0.0, "wall_seconds": 0.0}
        self._pending: list[_Pending] = []
        self._wall_start = time.perf_counter()
        self._last_save = time.monotonic()
        self._save_cost = 0.0
        self.saved_cases = 0
        """Cases on disk as of the last successful save."""

    @property
    def directory(self) -> Path:
        return self.root.run_dir(self.run_id)

    # -- creating and reopening ------------------------------------------------------------

    @classmethod
    def create(cls, root: DataRoot, run_id: str, fields: dict[str, Any],
               request: dict[str, Any] | None = None, warn: Warn | None = None) -> RunWriter:
        """A new run directory; refused when the id exists at this moment (under the lock)."""
        with root_lock(root.path):
            _repair_index(root, warn)
            root.runs_dir.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(root.run_dir(run_id))
            except FileExistsError:
                raise GeroError(f"run {run_id!r} already exists in {root.path}; choose another "
                                "--run-id") from None
            lock = RunLock(root.run_dir(run_id))
        writer = cls(root, run_id, fields, lock, warn)
        try:
            if request is not None:
                atomic_write_bytes(writer.directory / REQUEST_FILE,
                                   json.dumps(request, indent=2, sort_keys=True).encode())
            writer._write_record("running")
        except BaseException:
            writer.close()
            raise
        return writer

    @classmethod
    def resume(cls, root: DataRoot, run_id: str, warn: Warn | None = None
               ) -> tuple[RunWriter, dict[str, Any]]:
        """Reopen an interrupted run: its stored rows, finished cases and request."""
        directory = root.run_dir(run_id)
        record = _read_json(directory / RUN_FILE, dict)
        status = effective_status(directory, str(record.get("status")))
        if status == "running":
            raise GeroError(f"run {run_id} is still running; wait for it or stop it first")
        if status != "interrupted":
            raise GeroError(f"run {run_id} is {status}, not interrupted: nothing to resume")
        request = _read_json(directory / REQUEST_FILE, dict)
        with root_lock(root.path):
            _repair_index(root, warn)
            try:
                lock = RunLock(directory)
            except RunningError:
                raise GeroError(f"run {run_id} is being resumed by another process") from None
            try:
                fields = {k: v for k, v in record.items() if k in _FIXED_FIELDS}
                writer = cls(root, run_id, fields, lock, warn)
                writer._load(record)
            except BaseException:
                lock.release()
                raise
        return writer, request

    def _load(self, record: dict[str, Any]) -> None:
        """The interrupted run's rows (the caller holds the root's lock), in today's form:
        observations of a run written before keys get theirs now."""
        index = self._index()
        self.known.refresh(index, self.warn)
        observations = _read_table(self.directory / OBSERVATIONS_FILE)
        if KEY_COLUMN not in observations.column_names:
            first = self._next_key(index)
            observations = observations.append_column(KEY_FIELD, pa.array(
                np.arange(first, first + observations.num_rows, dtype=np.int64)))
            index.next_key = first + observations.num_rows
            write_index(self.root.path, index)
        observations = _conform(observations, STORED_OBSERVATION_SCHEMA)
        sightings = _conform(_read_table(self.directory / SIGHTINGS_FILE),
                             STORED_SIGHTING_SCHEMA)
        self.observations.add(observations, np.full(observations.num_rows, -1))
        self.sightings.add(sightings, np.full(sightings.num_rows, -1))
        # Sighted ids: by id where a sighting has one, else from the key (own or stored).
        own_keys = observations.column(KEY_COLUMN).combine_chunks()
        own_ids = observations.column("observation_id").combine_chunks()
        keys = sightings.column(KEY_COLUMN).combine_chunks()
        mine = pc.index_in(keys, value_set=own_keys)
        ids = pc.coalesce(sightings.column("observation_id").combine_chunks(),
                          own_ids.take(mine), self.known.ids_for(keys))
        self.seen = _Seen()
        self.seen.add(pc.unique(ids.drop_null()))
        self.new_count = observations.num_rows
        cases = self.directory / CASES_FILE
        self.case_ids = cases.read_text().splitlines() if cases.is_file() else []
        self.counts = self._stored_counts(observations)
        for name in self.seconds:
            value = record.get(name)
            self.seconds[name] = float(value) if isinstance(value, int | float) else 0.0
        self.saved_cases = len(self.case_ids)

    def _index(self) -> StoreIndex:
        """The store's index (under the root's lock); an unreadable one stops the save."""
        index = read_index(self.root.path)
        if index.problem is not None:
            raise StoreError(f"{index.problem}; `gero compact` rebuilds it from the files")
        if not index.exists and any(r != self.run_id for r in loose_runs(self.root.path, index)):
            index.legacy = True  # runs of a gero before keys: compacted when this one ends
        return index

    def _next_key(self, index: StoreIndex) -> int:
        """The first unused key: the index's, or past every key a file holds."""
        own = self.observations.max_key()
        return max(index.next_key, self.known.max_key() + 1, own + 1)

    def _stored_counts(self, own: pa.Table) -> dict[str, int]:
        """Result classes of the ids this run sighted, from whichever file stores each."""
        results = dict(zip(own.column("observation_id").to_pylist(),
                           own.column("result").to_pylist(), strict=True))
        seen = self.seen.to_set()
        missing = seen - results.keys()
        for path in self.root.observation_files():
            if not missing:
                break
            try:
                other = pq.read_table(path, columns=["observation_id", "result"])
            except (OSError, pa.ArrowException, KeyError):
                continue
            for oid, result in zip(other.column(0).to_pylist(), other.column(1).to_pylist(),
                                   strict=True):
                if oid in missing:
                    results[oid] = result
                    missing.discard(oid)
        counts = dict.fromkeys(RESULT_CLASSES, 0)
        for oid in seen:
            result = results.get(oid)
            if result in counts:
                counts[result] += 1
        return counts

    # -- adding and saving -----------------------------------------------------------------

    def add(self, position: int, case_id: str, batch: pa.RecordBatch, backend_seconds: float,
            evidence_seconds: float, case_seconds: float) -> None:
        """A finished case (its rows as one batch); kept in memory until the next save."""
        self._pending.append(_Pending(position, case_id, batch))
        self.seconds["backend_seconds"] += backend_seconds
        self.seconds["evidence_seconds"] += evidence_seconds
        self.seconds["case_seconds"] += case_seconds

    @property
    def case_count(self) -> int:
        return len(self.case_ids) + len(self._pending)

    def save_if_due(self) -> None:
        elapsed = time.monotonic() - self._last_save
        if self._pending and elapsed >= max(SAVE_EVERY_S, self._save_cost / SAVE_COST_SHARE):
            self.save("running")

    def save(self, status: str) -> RunRecord:
        """Deduplicate what finished since the last save and rewrite the run's files.

        Ctrl-C and SIGTERM wait until the save is done: a save half-applied in memory
        would lose or double-count cases.
        """
        with _signals_deferred():
            return self._save(status)

    def _save(self, status: str) -> RunRecord:
        start = time.perf_counter()
        now = datetime.now(UTC)
        with root_lock(self.root.path):
            index = self._index()
            self.known.refresh(index, self.warn)
            if self._pending:
                first = self._next_key(index)
                stored = self._take(self._pending, first, now)
                self._pending = []
                if stored or not index.exists:
                    # Keys are reserved before any file holds them: a crash leaves a gap.
                    index.next_key = first + stored
                    write_index(self.root.path, index)
            atomic_write_table(self.directory / OBSERVATIONS_FILE,
                               self.observations.in_case_order(STORED_OBSERVATION_SCHEMA))
            atomic_write_table(self.directory / SIGHTINGS_FILE,
                               self.sightings.in_case_order(STORED_SIGHTING_SCHEMA))
        atomic_write_bytes(self.directory / CASES_FILE,
                           "".join(f"{c}\n" for c in self.case_ids).encode())
        self._save_cost = time.perf_counter() - start
        self.seconds["store_seconds"] += self._save_cost
        record = self._write_record(status, now)
        self.saved_cases = len(self.case_ids)
        self._last_save = time.monotonic()
        return record

    def _take(self, pending: Sequence[_Pending], first_key: int, now: datetime) -> int:
        """Deduplicate finished cases: new observations get keys from ``first_key`` on,
        every first sighting in this run is kept by key. Returns the keys used."""
        pending = sorted(pending, key=lambda p: p.position)
        rows = pa.Table.from_batches([p.batch for p in pending],
                                     schema=OBSERVATION_SCHEMA).combine_chunks()
        positions = np.repeat([p.position for p in pending], [p.batch.num_rows for p in pending])
        ids = rows.column("observation_id").combine_chunks()
        stored_elsewhere, stored_keys = self.known.lookup(ids)
        # First sighting in this run: the first row of its id here, not seen in a save before.
        first = (pc.index_in(ids, value_set=ids).to_numpy(zero_copy_only=False)
                 == np.arange(rows.num_rows)) & ~self.seen.contains(ids)
        self.seen.add(ids.filter(pa.array(first)))
        for item in pc.value_counts(rows.column("result").filter(pa.array(first))).to_pylist():
            self.counts[item["values"]] = self.counts.get(item["values"], 0) + item["counts"]
        new = first & ~stored_elsewhere  # ... and stored by no other run
        new_keys = np.full(rows.num_rows, -1, dtype=np.int64)
        new_keys[new] = np.arange(first_key, first_key + int(new.sum()), dtype=np.int64)
        observations = with_constants(rows.filter(pa.array(new)), run_id=self.run_id,
                                      created_at=now).append_column(
            KEY_FIELD, pa.array(new_keys[new]))
        self.observations.add(observations, positions[new])
        self.new_count += observations.num_rows
        keys = pc.if_else(pa.array(new), pa.array(new_keys), stored_keys).filter(
            pa.array(first))
        sighted = rows.select(["observation_id", *TIMING_COLUMNS]).filter(pa.array(first))
        # An observation stored without a key (by a gero before keys) is sighted by id.
        sightings = with_constants(pa.table({
            "run_id": pa.nulls(sighted.num_rows, pa.string()), KEY_COLUMN: keys,
            "observation_id": pc.if_else(keys.is_null(), sighted.column("observation_id"),
                                         pa.nulls(sighted.num_rows, pa.string())),
            **{name: sighted.column(name) for name in TIMING_COLUMNS},
            "seen_at": pa.nulls(sighted.num_rows, STORED_SIGHTING_SCHEMA.field("seen_at").type),
        }, schema=STORED_SIGHTING_SCHEMA), run_id=self.run_id, seen_at=now)
        self.sightings.add(sightings, positions[first])
        self.case_ids += [p.case_id for p in pending]
        return int(new.sum())

    def _write_record(self, status: str, now: datetime | None = None) -> RunRecord:
        now = now or datetime.now(UTC)
        s = self.seconds
        record = RunRecord(
            **self.fields, finished_at=now.isoformat(), status=status,
            case_count=len(self.case_ids), observation_count=len(self.seen),
            new_observation_count=self.new_count, counts=dict(self.counts),
            wall_seconds=s["wall_seconds"] + time.perf_counter() - self._wall_start,
            backend_seconds=s["backend_seconds"], evidence_seconds=s["evidence_seconds"],
            store_seconds=s["store_seconds"], case_seconds=s["case_seconds"])
        atomic_write_bytes(self.directory / RUN_FILE,
                           json.dumps(asdict(record), indent=2, sort_keys=True).encode())
        return record

    def finish(self, status: str) -> RunRecord:
        """The last save (``complete`` or ``interrupted``), then the run's lock is released
        and, past a number of loose runs, the store is compacted."""
        try:
            record = self.save(status)
        finally:
            self.close()
        try:
            maybe_compact(self.root)
        except (OSError, pa.ArrowException, GeroError) as e:
            if self.warn is not None:
                self.warn(f"compacting {self.root.path} failed, the run is saved ({e}); "
                          "`gero compact` tries again")
        return record

    def close(self) -> None:
        self.lock.release()


def _repair_index(root: DataRoot, warn: Warn | None) -> None:
    """Before a run writes anything (under the root's lock): an index naming paths it may
    not is refused; an unreadable one is rebuilt from the store's files (else the run's
    first save would stop it)."""
    index = read_index(root.path)
    refuse_hostile(index)
    if index.problem is None:
        return
    compact(root)
    if warn is not None:
        warn(f"{index.problem}; rebuilt it from the store's files")


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back until the block ends (then they are delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


_FIXED_FIELDS = frozenset(
    ("run_id", "started_at", "suite", "command_line", "seed", "jobs", "threads", "cpu_model",
     "python_version", "numpy_version", "onnx_version", "onnxruntime_version", "tolerances",
     "models", "backends", "gero_version"))
"""RunRecord fields a run keeps from its start (the rest are recounted at every save)."""


def _read_json(path: Path, kind: type) -> Any:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist") from None
    except (OSError, ValueError) as e:
        raise StoreError(f"{path}: unreadable ({e})") from e
    if not isinstance(value, kind):
        raise StoreError(f"{path}: expected a JSON {kind.__name__}")
    return value


def _read_table(path: Path) -> pa.Table:
    if not path.is_file():
        return pa.table({})
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise StoreError(f"{path}: unreadable Parquet file ({e}); cannot resume") from e


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones null, extra ones dropped."""
    try:
        return pa.table({f.name: table.column(f.name).cast(f.type) if f.name in
                         table.column_names else pa.nulls(table.num_rows, f.type)
                         for f in schema}, schema=schema)
    except (pa.ArrowException, ValueError) as e:
        raise StoreError(f"a stored table does not fit gero's schema ({e}); cannot resume"
                         ) from e
