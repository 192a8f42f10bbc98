"""The data root: runs, their observation and sighting tables, and the artifacts.

Layout::

    DATA_ROOT/
      runs/RUN_ID/run.json                 the run record
      runs/RUN_ID/observations.parquet     observations first made by this run
      runs/RUN_ID/sightings.parquet        every observation this run made, with its timings
      store/index.json, store/*.parquet    the compacted observation store (``index``)
      artifacts/AB/ABCDEF.../              evidence directories (content-addressed)

An observation made again by a later run is not stored twice: only its sighting is, by the
observation's integer key (``index.KEY_COLUMN``).
Every file is written to a temporary name and renamed, so readers never see half a file.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.errors import GeroError
from gero_runner.schema import OBSERVATION_SCHEMA, SIGHTING_SCHEMA, Observation, RunRecord
from gero_runner.storage.index import KEY_COLUMN
from gero_runner.storage.index import observation_files as indexed_observation_files
from gero_runner.storage.layout import (
    OBSERVATIONS_FILE,
    RUN_FILE,
    RUNS_DIR,
    SIGHTINGS_FILE,
    run_ids,
)
from gero_runner.storage.locks import file_mode
from gero_runner.storage.runs import read_record

KEY_FIELD: Final = pa.field(KEY_COLUMN, pa.int64())
STORED_OBSERVATION_SCHEMA: Final = OBSERVATION_SCHEMA.append(KEY_FIELD)
"""An observation file as a run writes it: the observation columns and the key."""
STORED_SIGHTING_SCHEMA: Final = pa.schema([
    SIGHTING_SCHEMA.field("run_id"), KEY_FIELD, SIGHTING_SCHEMA.field("observation_id"),
    SIGHTING_SCHEMA.field("actual_median_ms"), SIGHTING_SCHEMA.field("reference_median_ms"),
    SIGHTING_SCHEMA.field("seen_at")])
"""A sightings file as a run writes it: the observation's key, or (for an observation
stored without one, by an older gero) its id."""


def default_data_root() -> Path:
    return Path(os.environ.get("GERO_DATA_DIR", "data"))


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


MAX_NAME_BYTES = 255
"""The longest file name (in bytes) that common file systems accept."""


def _check_name(path: Path) -> None:
    size = len(os.fsencode(path.name))
    if size > MAX_NAME_BYTES:
        raise GeroError(f"file name {path.name[:40]}... is {size} bytes long; file systems "
                        f"accept at most {MAX_NAME_BYTES}")


def write_file(path: Path, write: Callable[[str], None]) -> None:
    """Write ``path`` through ``write(name)``: complete or not at all, with the usual mode.

    A regular file (or a new path) is written to a temporary name beside it and renamed over
    it, so a reader never sees half a file; the result gets 0o666 less the umask, like any
    Unix tool's output. Anything else that exists (``/dev/null``, a FIFO, a terminal) is
    written in place. A symbolic link is followed: its target is what gets written.
    """
    path = Path(path)
    _check_name(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise GeroError(f"{path} is a directory; give a file name")
        write(str(path))  # a device or a FIFO: written through, never replaced
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # A short temporary name: the target's own name may already be near the length limit.
    fd, tmp = tempfile.mkstemp(prefix=".gero-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    def write(name: str) -> None:
        with open(name, "wb") as f:
            f.write(data)

    write_file(path, write)


def atomic_write_table(path: Path, table: pa.Table) -> None:
    names = table.schema.names
    # Keys ascend (a rerun sights them in the order they were stored): delta-coded, they
    # take about a bit each, where a dictionary would take more than the ids' count.
    encoding: dict[str, Any] = ({"use_dictionary": [n for n in names if n != KEY_COLUMN],
                                 "column_encoding": {KEY_COLUMN: "DELTA_BINARY_PACKED"}}
                                if KEY_COLUMN in names else {})
    write_file(path, lambda name: pq.write_table(
        table, name, compression="zstd", write_statistics=statistics_columns(table.schema),
        **encoding))


def statistics_columns(schema: pa.Schema) -> list[str]:
    """Columns that get Parquet min/max statistics: all but the floating-point ones.

    Parquet statistics leave NaN out, and DuckDB (2.0) prunes with them: ``WHERE
    isnan(max_abs_error)`` then finds nothing. Without float statistics it scans correctly.
    """
    return [f.name for f in schema if not pa.types.is_floating(f.type)]


def rows_to_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) to an Arrow table with exactly the observation schema."""
    return pa.Table.from_pylist(rows, schema=OBSERVATION_SCHEMA)


def rows_to_batch(rows: Sequence[Observation]) -> pa.RecordBatch:
    """One case's rows as an Arrow batch of the observation schema."""
    return pa.RecordBatch.from_arrays(
        [pa.array([getattr(r, f.name) for r in rows], f.type) for f in OBSERVATION_SCHEMA],
        schema=OBSERVATION_SCHEMA)


def batch_bytes(rows: Sequence[Observation]) -> bytes:
    """Rows as one Arrow IPC record-batch message (a worker's answer to the parent: it
    decodes ten times faster than a pickled batch)."""
    return bytes(rows_to_batch(rows).serialize())


def batch_from_bytes(data: bytes) -> pa.RecordBatch:
    return pa.ipc.read_record_batch(pa.py_buffer(data), OBSERVATION_SCHEMA)


def with_constants(table: pa.Table, **values: Any) -> pa.Table:
    """``table`` with the named columns set to one value on every row."""
    for name, value in values.items():
        i = table.schema.get_field_index(name)
        field = table.schema.field(i)
        table = table.set_column(i, field, pa.repeat(pa.scalar(value, field.type), table.num_rows))
    return table


class DataRoot:
    """A directory of runs and artifacts."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __fspath__(self) -> str:
        """A DataRoot stands for its path wherever one is expected (the reader's functions)."""
        return str(self.path)

    @property
    def runs_dir(self) -> Path:
        return self.path / RUNS_DIR

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def run_ids(self) -> list[str]:
        """Runs with a record, oldest first (ids sort by time)."""
        return run_ids(self.path)

    def read_run(self, run_id: str) -> dict[str, Any]:
        return read_record(self.path, run_id)

    def observation_files(self) -> list[Path]:
        """Every file that stores observations (the store's, then loose runs')."""
        return indexed_observation_files(self.path)

    def known_observation_ids(self, warn: Any = None) -> set[str]:
        """Ids already stored; a corrupt file is reported through ``warn`` and skipped."""
        known: set[str] = set()
        for path in self.observation_files():
            try:
                column = pq.read_table(path, columns=["observation_id"]).column(0)
            except (OSError, pa.ArrowException) as e:
                if warn is not None:
                    warn(f"skipping unreadable {path}: {e}")
                continue
            known.update(column.to_pylist())
        return known

    def write_run(self, record: RunRecord, new_rows: list[dict[str, Any]] | pa.Table,
                  sightings: Iterable[dict[str, Any]] | pa.Table) -> Path:
        """Write the run's tables as given and its record (the record last, so a run is
        complete or absent): sightings by id, observations without keys, as a gero before
        the store wrote them (``run_writer.RunWriter`` writes runs as ``gero run`` does)."""
        directory = self.run_dir(record.run_id)
        if not isinstance(new_rows, pa.Table):
            new_rows = rows_to_table(new_rows)
        if not isinstance(sightings, pa.Table):
            sightings = pa.Table.from_pylist(list(sightings), schema=SIGHTING_SCHEMA)
        atomic_write_table(directory / OBSERVATIONS_FILE, new_rows)
        atomic_write_table(directory / SIGHTINGS_FILE, sightings)
        atomic_write_bytes(directory / RUN_FILE,
                           json.dumps(asdict(record), indent=2, sort_keys=True).encode())
        return directory
