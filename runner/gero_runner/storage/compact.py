"""Compaction: the observation files of finished runs merged into one store file.

A reader opens the store's file and the few loose runs' files instead of one file per run
(a data root of a year of nightly runs holds hundreds). Compaction runs under the data
root's lock, the lock every writer takes to deduplicate and save, so a run saving during
a compaction waits for it and a run started during it loses nothing. It merges only runs
that are complete and not running (a running or interrupted run rewrites its own file at
its next save); rows stored without a key (runs of a gero before keys) get keys here.

The new store file is written and checked under a new name, then the index that names it
replaces the old index in one rename: a reader sees the old store or the new one, never a
mix. Files the new store replaces are removed at the next compaction (``index``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gero_runner.errors import StoreError
from gero_runner.storage.index import (
    KEY_COLUMN,
    STORE_DIR,
    StoreFile,
    StoreIndex,
    contradicted,
    inside_root,
    is_plain_name,
    loose_runs,
    read_index,
    refuse_hostile,
    run_observation_file,
    store_file_path,
    write_index,
)
from gero_runner.storage.layout import RUN_FILE, RUNS_DIR
from gero_runner.storage.locks import is_running, root_lock
from gero_runner.storage.runs import read_record
from gero_runner.storage.store import STORED_OBSERVATION_SCHEMA, DataRoot, atomic_write_table

AUTO_THRESHOLD = 8
"""Loose finished runs that make a run's end compact the store (``maybe_compact``)."""


@dataclass
class Compaction:
    """What a compaction merged (or, as a dry run, would merge)."""

    runs: list[str] = field(default_factory=list)
    rows: int = 0
    """Observations in the new store file."""
    keyed: int = 0
    """Observations stored without a key that got one."""
    removed: list[str] = field(default_factory=list)
    """Files replaced by an earlier compaction, removed now."""
    skipped: list[str] = field(default_factory=list)
    """Runs left loose, with why (running, interrupted, unreadable)."""
    missing: list[str] = field(default_factory=list)
    """Store files the index named that are gone (their rows are lost): left out."""
    repaired: list[str] = field(default_factory=list)
    """Runs the index listed as merged while their own files were never replaced: merged
    again."""
    store_file: str | None = None


def _mergeable(root: Path, run_id: str, skipped: list[str]) -> bool:
    """Whether a loose run's file may move into the store: it is finished for good."""
    if is_running(root / RUNS_DIR / run_id):
        skipped.append(f"{run_id}: running")
        return False
    try:
        status = read_record(root, run_id).get("status")
    except StoreError as e:
        skipped.append(f"{run_id}: {e}")
        return False
    if status != "complete":
        skipped.append(f"{run_id}: {status} (`gero run --resume` rewrites its file)")
        return False
    return True


def compact(root: DataRoot, *, dry_run: bool = False) -> Compaction:
    """Merge every finished loose run into a new store file (under the root's lock)."""
    with root_lock(root.path, reading=dry_run):
        return _compact(root.path, dry_run)


def maybe_compact(root: DataRoot) -> Compaction | None:
    """Compact when ``AUTO_THRESHOLD`` finished runs are loose or runs lack keys."""
    index = read_index(root.path)
    loose = loose_runs(root.path, index)
    if index.problem is None and not index.legacy and len(loose) < AUTO_THRESHOLD:
        return None
    return compact(root)


def _compact(root: Path, dry_run: bool) -> Compaction:
    index = read_index(root)
    refuse_hostile(index)
    result = Compaction()
    if index.problem is not None:
        index = _rebuilt(root)
    result.repaired = contradicted(root, index)
    index.compacted -= set(result.repaired)  # loose again: merged below (rows deduplicated)
    result.runs = [r for r in loose_runs(root, index) if _mergeable(root, r, result.skipped)]
    if dry_run:
        return result
    for path in leftover_temporaries(root):
        path.unlink(missing_ok=True)
        result.removed.append(path.relative_to(root).as_posix())
    if not result.runs:
        # Nothing mergeable now: written, so that it is not tried at every end.
        if index.legacy or not index.exists or result.repaired:
            index.legacy = False
            write_index(root, index)
        return result
    result.removed += remove_superseded(root, index.superseded)
    tables = []
    for f in index.files:
        path = store_file_path(root, f.name)
        if not path.exists():  # removed by hand: its rows are gone, the rest is merged
            result.missing.append(f"{STORE_DIR}/{f.name} ({f.rows:,} observations)")
            continue
        try:
            tables.append(pq.read_table(path))
        except (OSError, pa.ArrowException) as e:
            raise StoreError(f"{path} cannot be read ({e}); nothing was merged: restore it "
                             "(its observations are in no other file)") from None
    kept_runs = []
    for run_id in result.runs:
        try:
            tables.append(pq.read_table(run_observation_file(root, run_id)))
            kept_runs.append(run_id)
        except (OSError, pa.ArrowException) as e:
            result.skipped.append(f"{run_id}: unreadable observation file ({e})")
    result.runs = kept_runs
    superseded = [run_observation_file(root, r).relative_to(root).as_posix()
                  for r in result.runs]
    new = write_store(root, index, tables, index.compacted | set(result.runs), superseded)
    result.rows = new.files[0].rows
    result.keyed = sum(t.column(KEY_COLUMN).null_count if KEY_COLUMN in t.column_names
                       else t.num_rows for t in tables)
    result.store_file = f"{STORE_DIR}/{new.files[0].name}"
    return result


TEMPORARY = ".gero-*.tmp"
"""What ``store.write_file`` names a file it is writing (renamed over the target when done)."""


def leftover_temporaries(root: Path) -> list[Path]:
    """Files a writer killed mid-write left (kill -9 during a save or a compaction): in the
    store (written only under the root's lock, which the caller holds) and in the
    directories of runs that are not running."""
    found = sorted((root / STORE_DIR).glob(TEMPORARY))
    for run_dir in sorted((root / RUNS_DIR).glob("*")):
        if run_dir.is_dir() and not run_dir.is_symlink() and not is_running(run_dir):
            found += sorted(run_dir.glob(TEMPORARY))
    return [p for p in found if p.is_file() and not p.is_symlink()]


def remove_superseded(root: Path, superseded: list[str]) -> list[str]:
    """Remove the files an index says were replaced, each only where it lies inside the
    data root (``read_index`` refused any other); the removed ones."""
    removed = []
    for relative in superseded:
        target = inside_root(root, relative)
        if target is not None and target.is_file() and not target.is_symlink():
            target.unlink()
            removed.append(relative)
    return removed


def write_store(root: Path, index: StoreIndex, tables: list[pa.Table], compacted: set[str],
                superseded: list[str]) -> StoreIndex:
    """One new store file of ``tables`` (rows without a key get one), then the index that
    names it in place of ``index``'s files (which join ``superseded``). The caller holds
    the data root's lock."""
    merged = _merge(tables)
    keys = pc.fill_null(merged.column(KEY_COLUMN), -1).to_numpy().astype(np.int64)
    missing = keys < 0
    first = max(index.next_key, int(keys.max(initial=-1)) + 1)
    keys[missing] = np.arange(first, first + int(missing.sum()), dtype=np.int64)
    merged = merged.set_column(merged.schema.get_field_index(KEY_COLUMN),
                               merged.schema.field(KEY_COLUMN), pa.array(keys))
    merged = merged.take(pa.array(np.argsort(keys, kind="stable")))
    generation = 1 + max((_generation(f.name) for f in index.files), default=0)
    name = f"observations-{generation:06d}.parquet"
    path = store_file_path(root, name)
    atomic_write_table(path, merged)
    written = pq.read_table(path)  # every page decodes before readers are sent to it
    if written.num_rows != merged.num_rows:
        raise StoreError(f"{path}: wrote {merged.num_rows} rows, read back {written.num_rows}")
    st = path.stat()
    new = StoreIndex(next_key=first + int(missing.sum()),
                     files=[StoreFile(name, merged.num_rows, st.st_size, st.st_mtime_ns)],
                     compacted=compacted,
                     superseded=[f"{STORE_DIR}/{f.name}" for f in index.files] + superseded)
    write_index(root, new)
    return new


def _generation(name: str) -> int:
    digits = name.removeprefix("observations-").removesuffix(".parquet")
    return int(digits) if digits.isdigit() else 0


def _merge(tables: list[pa.Table]) -> pa.Table:
    """One table of every observation once (the first stored), with today's columns first
    and a key column (null where a row has none)."""
    conformed = []
    for table in tables:
        if KEY_COLUMN not in table.column_names:
            table = table.append_column(STORED_OBSERVATION_SCHEMA.field(KEY_COLUMN),
                                        pa.nulls(table.num_rows, pa.int64()))
        conformed.append(table)
    if not conformed:
        return STORED_OBSERVATION_SCHEMA.empty_table()
    merged = pa.concat_tables(conformed, promote_options="permissive").combine_chunks()
    # Files of older concurrent runs may store one observation twice: the first is kept.
    ids = merged.column("observation_id").to_numpy(zero_copy_only=False)
    _, first = np.unique(ids, return_index=True)
    if len(first) < merged.num_rows:
        merged = merged.take(pa.array(np.sort(first)))
    names = [f.name for f in STORED_OBSERVATION_SCHEMA if f.name in merged.column_names]
    return merged.select(names + [n for n in merged.column_names if n not in names])


def _rebuilt(root: Path) -> StoreIndex:
    """An index for a root whose index is unreadable: the newest store file, whose rows'
    runs count as compacted, and keys past every key a file holds."""
    store = root / STORE_DIR
    names = sorted((p.name for p in store.glob("observations-*.parquet")), key=_generation)
    if not names:
        return StoreIndex(legacy=True)
    path = store / names[-1]
    table = pq.read_table(path, columns=["run_id", KEY_COLUMN])
    st = path.stat()
    runs = {str(r) for r in pc.unique(table.column("run_id")).to_pylist() if r}
    top = pc.max(table.column(KEY_COLUMN)).as_py()
    compacted = {r for r in runs if is_plain_name(r) and (root / RUNS_DIR / r / RUN_FILE).is_file()}
    return StoreIndex(next_key=(-1 if top is None else int(top)) + 1,
                      files=[StoreFile(names[-1], table.num_rows, st.st_size, st.st_mtime_ns)],
                      compacted=compacted, legacy=True)

