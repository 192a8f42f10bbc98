"""The observation store's index: which files hold a data root's stored observations.

Only the standard library: every reader consults it before it opens a file (the explorer
before its first paint). Layout::

    DATA_ROOT/store/index.json                 this index (written under the root's lock)
    DATA_ROOT/store/observations-GEN.parquet   observations of compacted runs, with keys

Every stored observation has an integer ``observation_key``, handed out in order under the
data root's lock (``next_key``); a run's sightings name observations by key, 8 bytes that
compress to almost nothing where the hex id took 64. Runs written by a gero before keys
have no keys: their observation files and sightings (by id) stay readable as they are,
and ``gero compact`` (also done automatically) gives their observations keys.

``compacted`` lists the runs whose observation file has been merged into the store:
readers ignore such a file even where it still exists. A compaction removes the files it
replaced at the next compaction (``superseded``), not at once, so a reader that listed
them just before (an explorer left open) keeps working through one compaction.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gero_runner.errors import StoreError
from gero_runner.storage.layout import OBSERVATIONS_FILE, RUNS_DIR, run_ids
from gero_runner.storage.locks import file_mode

STORE_DIR = "store"
INDEX_FILE = "index.json"
KEY_COLUMN = "observation_key"
"""The integer key of a stored observation (in observation files and sightings)."""
FORMAT = 1


@dataclass(frozen=True)
class StoreFile:
    """A store file as the compaction that wrote it left it (a matching file was checked)."""

    name: str
    rows: int
    size: int
    mtime_ns: int


@dataclass
class StoreIndex:
    next_key: int = 0
    files: list[StoreFile] = field(default_factory=list)
    compacted: set[str] = field(default_factory=set)
    superseded: list[str] = field(default_factory=list)
    """Paths (relative to the data root) replaced by the last compaction."""
    legacy: bool = False
    """Whether the root holds observation files written without keys (to be compacted)."""
    exists: bool = False
    """Whether the index was read from disk (a root written by a gero before the store has
    none)."""
    problem: str | None = None
    """Why an index file could not be read (it is then rebuilt by the next compaction)."""
    hostile: bool = False
    """Whether the index names a path outside the places it may name (``problem`` says
    which): compaction and gc refuse to work on its word."""


def index_path(data_root: Path) -> Path:
    return Path(data_root) / STORE_DIR / INDEX_FILE


STORE_FILE_NAME = re.compile(r"observations-[0-9]{1,12}\.parquet")
"""The names compaction gives store files (the only ones an index may list)."""
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A run id: a plain name (no separator, not '.' or '..')."""


def is_plain_name(name: str) -> bool:
    return bool(PLAIN_NAME.fullmatch(name)) and name not in (".", "..")


def replaceable_place(relative: str) -> bool:
    """Whether a ``superseded`` entry names a file compaction may remove: a store file
    (``store/observations-N.parquet``) or a run's own observation file."""
    parts = relative.split("/")
    if len(parts) == 2:
        return parts[0] == STORE_DIR and bool(STORE_FILE_NAME.fullmatch(parts[1]))
    return (len(parts) == 3 and parts[0] == RUNS_DIR and is_plain_name(parts[1])
            and parts[2] == OBSERVATIONS_FILE)


def inside_root(data_root: Path, relative: str) -> Path | None:
    """``data_root / relative`` when it stays inside the root with no symbolic link on
    the way (a link could send a removal anywhere), else None."""
    root = Path(data_root)
    path = root / relative
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        return None
    try:
        real_root = root.resolve(strict=True)
        real_parent = path.parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if real_parent != real_root.joinpath(*Path(relative).parent.parts):
        return None
    return path


def read_index(data_root: Path) -> StoreIndex:
    """The index, or an empty one (no store yet, or an unreadable index: ``problem``)."""
    path = index_path(data_root)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return StoreIndex()
    except (OSError, ValueError) as e:
        return StoreIndex(problem=f"{path}: unreadable store index, ignored ({e})")
    try:
        return _parse(raw)
    except _Hostile as e:
        return StoreIndex(problem=f"{path} names {e} outside the places a store index may "
                          "name, so gero will not act on it", hostile=True)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        return StoreIndex(problem=f"{path}: not a gero store index, ignored ({e})")


class _Hostile(ValueError):
    """An index entry naming a path outside the places it may name."""


def _parse(raw: Any) -> StoreIndex:
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ValueError(f"format {raw.get('format') if isinstance(raw, dict) else '?'}")
    files = [StoreFile(str(f["name"]), int(f["rows"]), int(f["size"]), int(f["mtime_ns"]))
             for f in raw["files"]]
    for f in files:
        if not STORE_FILE_NAME.fullmatch(f.name):
            raise _Hostile(f"the store file {f.name[:200]!r}")
    if not isinstance(raw["compacted"], list) or not isinstance(raw.get("superseded", []),
                                                                  list):
        raise ValueError("compacted and superseded must be lists")
    compacted = {str(r) for r in raw["compacted"]}
    for run_id in compacted:
        if not is_plain_name(run_id):
            raise _Hostile(f"the run {run_id[:200]!r}")
    superseded = [str(p) for p in raw.get("superseded", [])]
    for relative in superseded:
        if not replaceable_place(relative):
            raise _Hostile(f"the file {relative[:200]!r}")
    return StoreIndex(next_key=int(raw["next_key"]), files=files, compacted=compacted,
                      superseded=superseded, legacy=bool(raw.get("legacy", False)),
                      exists=True)


def refuse_hostile(index: StoreIndex) -> None:
    """A StoreError when the index names paths it may not (nothing is removed)."""
    if index.hostile:
        raise StoreError(f"{index.problem}; nothing was removed: check who wrote it, then "
                         "delete it (`gero compact` rebuilds it from the store's files)")


def write_index(data_root: Path, index: StoreIndex) -> None:
    """Write the index atomically (the caller holds the data root's lock)."""
    path = index_path(data_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT, "next_key": index.next_key,
        "files": [f.__dict__ for f in index.files],
        "compacted": sorted(index.compacted), "superseded": index.superseded,
        "legacy": index.legacy,
    }
    fd, tmp = tempfile.mkstemp(prefix=".gero-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, indent=1)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    index.exists = True


def store_file_path(data_root: Path, name: str) -> Path:
    return Path(data_root) / STORE_DIR / name


def run_observation_file(data_root: Path, run_id: str) -> Path:
    return Path(data_root) / RUNS_DIR / run_id / OBSERVATIONS_FILE


def loose_runs(data_root: Path, index: StoreIndex | None = None,
               runs: list[str] | None = None) -> list[str]:
    """Runs (oldest first; of ``runs`` when the caller listed them) whose observation file
    is read as it is, not from the store."""
    index = read_index(data_root) if index is None else index
    runs = run_ids(Path(data_root)) if runs is None else runs
    return [r for r in runs if r not in index.compacted
            and run_observation_file(data_root, r).is_file()]


def contradicted(data_root: Path, index: StoreIndex, runs: list[str] | None = None
                 ) -> list[str]:
    """Runs the index lists as merged whose own observation file is still there and is not
    one the last compaction replaced: the index contradicts them (their rows may be in no
    store file), so no reader, and no gc, may take its word for them."""
    runs = run_ids(Path(data_root)) if runs is None else runs
    replaced = set(index.superseded)
    return [r for r in runs if r in index.compacted
            and f"{RUNS_DIR}/{r}/{OBSERVATIONS_FILE}" not in replaced
            and run_observation_file(data_root, r).is_file()]


def contradiction(data_root: Path, run_ids_: list[str]) -> str:
    """The sentence that names runs an index contradicts."""
    return (f"{index_path(data_root)} lists {', '.join(run_ids_)} as merged into the store, "
            "but each still has its own observation file, which no compaction replaced: the "
            "index contradicts the runs; `gero compact` merges them again")


def observation_files(data_root: Path, index: StoreIndex | None = None,
                      runs: list[str] | None = None) -> list[Path]:
    """Every file that stores observations: the store's, then each loose run's, oldest
    first. Each observation is in one of them (older concurrent runs: possibly two)."""
    index = read_index(data_root) if index is None else index
    root = Path(data_root)
    return ([store_file_path(root, f.name) for f in index.files]
            + [run_observation_file(root, r) for r in loose_runs(root, index, runs)])


def verified_rows(data_root: Path, path: Path, index: StoreIndex) -> int | None:
    """Rows of a store file that is as its compaction wrote and checked it, else None."""
    for f in index.files:
        if store_file_path(data_root, f.name) == path:
            try:
                st = path.stat()
            except OSError:
                return None
            if (st.st_size, st.st_mtime_ns) == (f.size, f.mtime_ns):
                return f.rows
    return None
