"""Garbage in a data root, and retention: old runs and what only they referenced.

A run killed mid-way leaves the evidence its workers wrote after its last save (and, if a
worker died mid-write, a ``.tmp-*`` staging directory). With a retention rule (keep the
newest N runs, or the runs of the last D days) the older runs go too: their directories
(record, sightings, own observation file), the stored observations that no kept run
sighted, and the evidence directories that no kept observation references.

``plan`` lists what would go and the bytes freed; ``apply`` removes what a fresh plan
lists. Both hold the data root's lock (a run cannot start or save meanwhile), and nothing
is removed while a run is running (its evidence is referenced only at its next save) or
while an observation file cannot be read (its references are unknown).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gero_runner.errors import GeroError, StoreError
from gero_runner.storage import path_outputs
from gero_runner.storage.artifacts import ARTIFACTS_DIR
from gero_runner.storage.compact import leftover_temporaries, remove_superseded, write_store
from gero_runner.storage.index import (
    KEY_COLUMN,
    StoreIndex,
    contradicted,
    contradiction,
    observation_files,
    read_index,
    refuse_hostile,
    run_observation_file,
    store_file_path,
    write_index,
)
from gero_runner.storage.layout import (
    FINDINGS_CACHE_DIR,
    RUNS_DIR,
    SIGHTINGS_FILE,
    run_ids,
    run_started,
)
from gero_runner.storage.locks import is_running, root_lock
from gero_runner.storage.runs import read_record
from gero_runner.storage.store import DataRoot


@dataclass(frozen=True)
class Retention:
    """Which runs to keep: the newest ``keep_runs``, or those that started within the last
    ``older_than_days`` (at most one of the two; neither: every run is kept)."""

    keep_runs: int | None = None
    older_than_days: float | None = None

    def __post_init__(self) -> None:
        if self.keep_runs is not None and self.older_than_days is not None:
            raise GeroError("give --keep-runs or --older-than, not both")
        if self.keep_runs is not None and self.keep_runs < 1:
            raise GeroError(f"--keep-runs must be at least 1, not {self.keep_runs}")
        if self.older_than_days is not None and not self.older_than_days >= 0:
            raise GeroError(f"--older-than must be a number of days >= 0, not "
                            f"{self.older_than_days}")

    def dropped(self, root: Path, runs: list[str], now: datetime | None = None) -> list[str]:
        """The runs (of ``runs``, oldest first) this rule removes."""
        if self.keep_runs is not None:
            return runs[:-self.keep_runs] if len(runs) > self.keep_runs else []
        if self.older_than_days is None:
            return []
        cutoff = (now or datetime.now(UTC)) - timedelta(days=self.older_than_days)
        return [r for r in runs
                if (started := _started(root, r)) is not None and started < cutoff]


def _started(root: Path, run_id: str) -> datetime | None:
    """When a run started: its record's ``started_at``, else the date its id begins with."""
    try:
        started = datetime.fromisoformat(str(read_record(root, run_id).get("started_at")))
    except (StoreError, ValueError):
        try:
            started = datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S")
        except ValueError:
            return None
    return started if started.tzinfo else started.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Garbage:
    path: Path
    """Relative to the data root."""
    size_bytes: int
    why: str


@dataclass
class GcPlan:
    """What a collection would remove, and why it may not remove anything now."""

    root: DataRoot
    garbage: list[Garbage] = field(default_factory=list)
    """Evidence directories and, with a retention rule, the old runs' directories."""
    blockers: list[str] = field(default_factory=list)
    """Reasons nothing may be removed (a running run, an unreadable observation file)."""
    runs: list[str] = field(default_factory=list)
    """Runs a retention rule removes, oldest first."""
    observations: int = 0
    """Stored observations no kept run sighted (left out of the rewritten store)."""
    store_bytes: int = 0
    """Bytes the store shrinks by (a dry run estimates it from the rows it loses)."""

    @property
    def size_bytes(self) -> int:
        return sum(g.size_bytes for g in self.garbage) + self.store_bytes


def _size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def _read(path: Path, columns: list[str] | None, blockers: list[str]) -> pa.Table | None:
    """A file's ``columns`` (those it has; None: all), or None and a blocker."""
    try:
        names = pq.read_schema(path).names
        return pq.read_table(path, columns=None if columns is None else
                             [c for c in columns if c in names])
    except (OSError, pa.ArrowException, KeyError) as e:
        blockers.append(f"{path} cannot be read, so its references are unknown ({e})")
        return None


@dataclass
class _Sighted:
    """Keys and ids the kept runs sighted."""

    keys: pa.Array
    ids: pa.Array

    def kept(self, table: pa.Table) -> pa.Array:
        """Which of ``table``'s rows a kept run sighted (by key, or by id)."""
        by_id = pc.is_in(table.column("observation_id"), value_set=self.ids)
        if KEY_COLUMN not in table.column_names:
            return by_id
        by_key = pc.fill_null(pc.is_in(table.column(KEY_COLUMN), value_set=self.keys), False)
        return pc.or_(by_key, by_id)


def _sighted(root: Path, kept_runs: list[str], blockers: list[str]) -> _Sighted:
    keys: list[pa.Array] = []
    ids: list[pa.Array] = []
    for run_id in kept_runs:
        path = root / RUNS_DIR / run_id / SIGHTINGS_FILE
        if not path.is_file():
            continue
        table = _read(path, [KEY_COLUMN, "observation_id"], blockers)
        if table is None:
            continue
        if KEY_COLUMN in table.column_names:
            keys.append(table.column(KEY_COLUMN).combine_chunks().drop_null())
        ids.append(table.column("observation_id").combine_chunks().drop_null())
    return _Sighted(pc.unique(pa.chunked_array(keys, pa.int64())),
                    pc.unique(pa.chunked_array(ids, pa.string())))


@dataclass
class _Retained:
    """The stored rows a retention rule keeps (``apply`` writes them as the new store)."""

    tables: list[pa.Table]
    removed_rows: int
    removed_bytes: int
    artifacts: set[str]


def _retained(root: Path, index: StoreIndex, dropped: set[str], blockers: list[str],
              read_all: bool) -> _Retained:
    """The store's and the dropped runs' rows that a kept run sighted, and the artifact
    directories those rows name."""
    sighted = _sighted(root, [r for r in run_ids(root) if r not in dropped], blockers)
    columns = None if read_all else ["observation_id", KEY_COLUMN, "artifact_path"]
    tables: list[pa.Table] = []
    removed_rows = removed_bytes = 0
    paths = [store_file_path(root, f.name) for f in index.files] + [
        run_observation_file(root, r) for r in sorted(dropped - index.compacted)
        if run_observation_file(root, r).is_file()]
    for path in paths:
        table = _read(path, columns, blockers)
        if table is None:
            continue
        kept = table.filter(sighted.kept(table))
        removed_rows += table.num_rows - kept.num_rows
        if path.parent.name != run_observation_file(root, "x").parent.name:
            removed_bytes += round(path.stat().st_size * (1 - kept.num_rows
                                                          / max(1, table.num_rows)))
        tables.append(kept)
    artifacts = {p for t in tables for p in t.column("artifact_path").to_pylist()
                 if isinstance(p, str) and p}
    return _Retained(tables, removed_rows, removed_bytes, artifacts)


def _referenced(root: DataRoot, index: StoreIndex, blockers: list[str],
                skip: set[Path]) -> set[str]:
    """Every artifact path in the files that store observations (but ``skip``)."""
    referenced: set[str] = set()
    # Every run's own file too, whatever the index says: evidence any stored row names stays.
    own = [p for r in run_ids(root.path) if (p := run_observation_file(root.path, r)).is_file()]
    for path in dict.fromkeys([*observation_files(root.path, index), *own]):
        if path in skip:
            continue
        table = _read(path, ["artifact_path"], blockers)
        if table is not None and "artifact_path" in table.column_names:
            referenced.update(p for p in table.column("artifact_path").to_pylist()
                              if isinstance(p, str) and p)
    return referenced


def plan(root: DataRoot, retention: Retention | None = None) -> GcPlan:
    """List what a collection would remove (removes nothing)."""
    with root_lock(root.path, reading=True):
        return _plan(root, retention or Retention(), read_all=False)[0]


def _plan(root: DataRoot, retention: Retention, read_all: bool
          ) -> tuple[GcPlan, _Retained | None]:
    result = GcPlan(root)
    runs = run_ids(root.path)
    result.blockers += [f"run {r} is running: its evidence is not referenced yet"
                        for r in runs if is_running(root.run_dir(r))]
    index = read_index(root.path)
    refuse_hostile(index)
    if index.problem is not None:
        result.blockers.append(f"{index.problem}; `gero compact` rebuilds it")
    lying = contradicted(root.path, index, runs)
    if lying:
        result.blockers.append(contradiction(root.path, lying))
    result.runs = [r for r in retention.dropped(root.path, runs)
                   if not is_running(root.run_dir(r))]
    dropped = set(result.runs)
    retained = None
    if dropped:
        retained = _retained(root.path, index, dropped, result.blockers, read_all)
        result.observations = retained.removed_rows
        result.store_bytes = retained.removed_bytes
        skip = ({store_file_path(root.path, f.name) for f in index.files}
                | {run_observation_file(root.path, r) for r in dropped})
        referenced = retained.artifacts | _referenced(root, index, result.blockers, skip)
        for run_id in result.runs:
            directory = root.run_dir(run_id)
            result.garbage.append(Garbage(directory.relative_to(root.path), _size(directory),
                                          "an old run (retention)"))
    else:
        referenced = _referenced(root, index, result.blockers, skip=set())
    # The findings kept for runs that are gone (removed by hand, or by this retention).
    cache = root.path.joinpath(*FINDINGS_CACHE_DIR)
    if cache.is_dir():
        for directory in sorted(p for p in cache.iterdir() if p.is_dir() and not p.is_symlink()):
            if directory.name in dropped or directory.name not in runs:
                result.garbage.append(Garbage(directory.relative_to(root.path), _size(directory),
                                              "findings of a run that is gone"))
    # Kept path outputs no kept run used (each use touches its entry): older than the
    # oldest kept run's start, or every one where no run is kept.
    kept = [root.run_dir(r) for r in runs if r not in dropped]
    since = min((run_started(d) for d in kept), default=None)
    for path in path_outputs.unused(root.path, since):
        result.garbage.append(Garbage(path.relative_to(root.path), path.stat().st_size,
                                      "kept path outputs no kept run used"))
    for path in leftover_temporaries(root.path):
        result.garbage.append(Garbage(path.relative_to(root.path), path.stat().st_size,
                                      "a file a writer killed mid-write left"))
    artifacts = root.path / ARTIFACTS_DIR
    if not artifacts.is_dir():
        return result, retained
    for prefix in sorted(p for p in artifacts.iterdir() if p.is_dir() and not p.is_symlink()):
        for directory in sorted(prefix.iterdir()):
            relative = directory.relative_to(root.path)
            if directory.name.startswith(".tmp-"):
                why = "unfinished evidence of a worker that stopped mid-write"
            elif relative.as_posix() in referenced:
                continue
            elif dropped:
                why = "no kept observation references it"
            else:
                why = "no stored observation references it"
            result.garbage.append(Garbage(relative, _size(directory), why))
    return result, retained


def apply(root: DataRoot, retention: Retention | None = None) -> GcPlan:
    """Plan again under the lock and remove what it lists, unless something blocks it: the
    store without the dropped rows first (one rename of its index), then the directories."""
    with root_lock(root.path):
        result, retained = _plan(root, retention or Retention(), read_all=True)
        if result.blockers:
            return result
        if retained is not None:
            index = read_index(root.path)
            before = sum(store_file_path(root.path, f.name).stat().st_size
                         for f in index.files)
            new = write_store(root.path, index, retained.tables,
                              index.compacted - set(result.runs), list(index.superseded))
            result.store_bytes = before - new.files[0].size
            # Removed now, not at the next compaction: gc is asked to free the space.
            remove_superseded(root.path, new.superseded)
            new.superseded = []
            write_index(root.path, new)
        for g in result.garbage:
            target = root.path / g.path
            if target.is_symlink() or not target.is_dir():
                target.unlink(missing_ok=True)
            else:
                shutil.rmtree(target)
        return result
