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
import pyarrow.parquet as pq

from gero_runner.errors import GeroError, StoreError
from gero_runner.schema import OBSERVATION_SCHEMA, RESULT_CLASSES, SIGHTING_SCHEMA, RunRecord
from gero_runner.storage.layout import OBSERVATIONS_FILE, RUN_FILE, SIGHTINGS_FILE
from gero_runner.storage.locks import RunLock, RunningError, effective_status, root_lock
from gero_runner.storage.store import (
    DataRoot,
    atomic_write_bytes,
    atomic_write_table,
    with_constants,
)

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


class KnownIds:
    """Observation ids stored by other runs, re-read only from files that changed."""

    def __init__(self, root: DataRoot, own_run: str) -> None:
        self.root = root
        self.own_run = own_run
        self.ids: set[str] = set()
        self._stamps: dict[Path, tuple[int, int]] = {}

    def refresh(self, warn: Warn | None) -> set[str]:
        for run_id in self.root.run_ids():
            if run_id == self.own_run:
                continue
            path = self.root.run_dir(run_id) / OBSERVATIONS_FILE
            try:
                st = path.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            if self._stamps.get(path) == stamp:
                continue
            try:
                column = pq.read_table(path, columns=["observation_id"]).column(0)
            except (OSError, pa.ArrowException, KeyError) as e:
                if warn is not None:
                    warn(f"{path}: unreadable observation file, skipped ({e})")
                continue
            self._stamps[path] = stamp
            self.ids.update(i for i in column.to_pylist() if isinstance(i, str))
        return self.ids


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
        self.seen: set[str] = set()
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
        observations = _read_table(self.directory / OBSERVATIONS_FILE, OBSERVATION_SCHEMA)
        sightings = _read_table(self.directory / SIGHTINGS_FILE, SIGHTING_SCHEMA)
        self.observations.add(observations, np.full(observations.num_rows, -1))
        self.sightings.add(sightings, np.full(sightings.num_rows, -1))
        self.seen = {i for i in sightings.column("observation_id").to_pylist()
                     if isinstance(i, str)}
        self.new_count = observations.num_rows
        cases = self.directory / CASES_FILE
        self.case_ids = cases.read_text().splitlines() if cases.is_file() else []
        self.counts = self._stored_counts(observations)
        for name in self.seconds:
            value = record.get(name)
            self.seconds[name] = float(value) if isinstance(value, int | float) else 0.0
        self.saved_cases = len(self.case_ids)

    def _stored_counts(self, own: pa.Table) -> dict[str, int]:
        """Result classes of the ids this run sighted, from whichever file stores each."""
        results = dict(zip(own.column("observation_id").to_pylist(),
                           own.column("result").to_pylist(), strict=True))
        missing = self.seen - results.keys()
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
        for oid in self.seen:
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
            known = self.known.refresh(self.warn)
            if self._pending:
                self._take(self._pending, known, now)
                self._pending = []
            atomic_write_table(self.directory / OBSERVATIONS_FILE,
                               self.observations.in_case_order(OBSERVATION_SCHEMA))
            atomic_write_table(self.directory / SIGHTINGS_FILE,
                               self.sightings.in_case_order(SIGHTING_SCHEMA))
        atomic_write_bytes(self.directory / CASES_FILE,
                           "".join(f"{c}\n" for c in self.case_ids).encode())
        self._save_cost = time.perf_counter() - start
        self.seconds["store_seconds"] += self._save_cost
        record = self._write_record(status, now)
        self.saved_cases = len(self.case_ids)
        self._last_save = time.monotonic()
        return record

    def _take(self, pending: Sequence[_Pending], known: set[str], now: datetime) -> None:
        pending = sorted(pending, key=lambda p: p.position)
        rows = pa.Table.from_batches([p.batch for p in pending],
                                     schema=OBSERVATION_SCHEMA).combine_chunks()
        positions = np.repeat([p.position for p in pending], [p.batch.num_rows for p in pending])
        first: list[bool] = []  # first sighting in this run
        new: list[bool] = []  # ... and stored by no other run
        for oid, result in zip(rows.column("observation_id").to_pylist(),
                               rows.column("result").to_pylist(), strict=True):
            is_first = oid not in self.seen
            first.append(is_first)
            new.append(is_first and oid not in known)
            if is_first:
                self.seen.add(oid)
                self.counts[result] = self.counts.get(result, 0) + 1
        new_mask = pa.array(new, pa.bool_())
        observations = with_constants(rows.filter(new_mask), run_id=self.run_id, created_at=now)
        self.observations.add(observations, positions[np.asarray(new, dtype=bool)])
        self.new_count += observations.num_rows
        first_mask = np.asarray(first, dtype=bool)
        sighted = rows.filter(pa.array(first_mask))
        sightings = with_constants(
            pa.table({f.name: sighted.column(f.name) if f.name in sighted.column_names else
                      pa.nulls(sighted.num_rows, f.type) for f in SIGHTING_SCHEMA},
                     schema=SIGHTING_SCHEMA),
            run_id=self.run_id, seen_at=now)
        self.sightings.add(sightings, positions[first_mask])
        self.case_ids += [p.case_id for p in pending]

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
        """The last save (``complete`` or ``interrupted``), then the run's lock is released."""
        try:
            return self.save(status)
        finally:
            self.close()

    def close(self) -> None:
        self.lock.release()


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
     "models", "backends"))
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


def _read_table(path: Path, schema: pa.Schema) -> pa.Table:
    if not path.is_file():
        return schema.empty_table()
    try:
        return pq.read_table(path, schema=schema)
    except (OSError, pa.ArrowException) as e:
        raise StoreError(f"{path}: unreadable Parquet file ({e}); cannot resume") from e
