"""Garbage in a data root: evidence directories no stored observation references.

A run killed mid-way leaves the evidence its workers wrote after its last save (and, if a
worker died mid-write, a ``.tmp-*`` staging directory). ``plan`` lists them; ``apply``
removes what a plan lists. Planning and removing happen under the data root's lock, and
nothing is removed while a run is running (its evidence is referenced only at its next
save) or while an observation file cannot be read (its references are unknown).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.storage.artifacts import ARTIFACTS_DIR
from gero_runner.storage.layout import OBSERVATIONS_FILE
from gero_runner.storage.locks import is_running, root_lock
from gero_runner.storage.store import DataRoot


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
    blockers: list[str] = field(default_factory=list)
    """Reasons nothing may be removed (a running run, an unreadable observation file)."""

    @property
    def size_bytes(self) -> int:
        return sum(g.size_bytes for g in self.garbage)


def _size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def _referenced(root: DataRoot, blockers: list[str]) -> set[str]:
    """Every artifact path in every run directory's observation file."""
    referenced: set[str] = set()
    if not root.runs_dir.is_dir():
        return referenced
    for run_dir in sorted(root.runs_dir.iterdir()):
        path = run_dir / OBSERVATIONS_FILE
        if not path.is_file():
            continue
        try:
            column = pq.read_table(path, columns=["artifact_path"]).column(0)
        except (OSError, pa.ArrowException, KeyError) as e:
            blockers.append(f"{path} cannot be read, so its references are unknown ({e})")
            continue
        referenced.update(p for p in column.to_pylist() if isinstance(p, str) and p)
    return referenced


def plan(root: DataRoot) -> GcPlan:
    """List unreferenced evidence directories (removes nothing)."""
    with root_lock(root.path):
        return _plan(root)


def _plan(root: DataRoot) -> GcPlan:
    result = GcPlan(root)
    if root.runs_dir.is_dir():
        result.blockers += [f"run {d.name} is running: its evidence is not referenced yet"
                            for d in sorted(root.runs_dir.iterdir()) if is_running(d)]
    referenced = _referenced(root, result.blockers)
    artifacts = root.path / ARTIFACTS_DIR
    if not artifacts.is_dir():
        return result
    for prefix in sorted(p for p in artifacts.iterdir() if p.is_dir() and not p.is_symlink()):
        for directory in sorted(prefix.iterdir()):
            relative = directory.relative_to(root.path)
            if directory.name.startswith(".tmp-"):
                why = "unfinished evidence of a worker that stopped mid-write"
            elif relative.as_posix() in referenced:
                continue
            else:
                why = "no stored observation references it"
            result.garbage.append(Garbage(relative, _size(directory), why))
    return result


def apply(root: DataRoot) -> GcPlan:
    """Plan again under the lock and remove what it lists, unless something blocks it."""
    with root_lock(root.path):
        result = _plan(root)
        if result.blockers:
            return result
        for g in result.garbage:
            target = root.path / g.path
            if target.is_symlink() or not target.is_dir():
                target.unlink(missing_ok=True)
            else:
                shutil.rmtree(target)
        return result
