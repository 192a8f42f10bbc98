"""Each path's outputs kept in the data root, to be reused by a later run.

A path's outputs depend only on the model's bytes, the inputs, the path's settings, the
runtime's version and gero's own code that feeds the runtime and reads its outputs; an
entry is named by the SHA-256 of all of them (``path_key``), so a rerun after upgrading one
runtime finds every other runtime's entries and recomputes only that runtime's paths.

An entry is ``ROOT/cache/outputs/<key>.npz`` (``layout.OUTPUTS_DIR``): the outputs as .npy
members (no pickles) and a JSON member with the timing the path had and the hash of its
outputs. It is written whole or not at all (a temporary file renamed over it). One that
cannot be read, was changed or belongs to another key is not used: the path is computed
again and its entry rewritten, and the rows say so in one sentence. ``gero gc`` removes
the entries no kept run could have used (``unused``: each use touches its entry).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.storage.hashing import load_npy, npy_bytes, tensor_hash, tensors_hash
from gero_runner.storage.layout import OUTPUTS_DIR
from gero_runner.storage.store import write_file

FORMAT = 1
"""Bumped when an entry's layout changes: older entries are then never found."""
_META = "meta.json"
_KEY = re.compile(r"[0-9a-f]{64}")
_MAX_META_BYTES = 1 << 20


@dataclass(frozen=True)
class Stored:
    """What a path gave: its outputs and the timing of the run that computed them."""

    outputs: list[np.ndarray]
    median_ms: float
    build_ms: float
    repeats: int
    deterministic: bool


@functools.cache
def evaluator_version() -> str:
    """gero's own code between a runtime and its outputs (the backend adapters, the
    ReferenceEvaluator's corrections): a hash of the ``gero_runner.backends`` sources and
    gero's version, so that a change to either recomputes every path."""
    import gero_runner
    from gero_runner import backends

    h = hashlib.sha256(f"{gero_runner.__version__}/{FORMAT}".encode())
    for directory in backends.__path__:
        for source in sorted(Path(directory).glob("*.py")):
            h.update(source.name.encode())
            h.update(source.read_bytes())
    return h.hexdigest()


def path_key(model: bytes, inputs: dict[str, np.ndarray], backend: str, version: str,
             optimization: str, threads: int, settings: Mapping[str, Any], repeats: int) -> str:
    """The entry of a path run ``repeats`` times on ``model`` and ``inputs`` (the repeats
    are part of it: they make the entry's determinism and timing)."""
    h = hashlib.sha256()
    h.update(json.dumps([FORMAT, evaluator_version(), backend, version, optimization, threads,
                         repeats, dict(settings)], sort_keys=True, default=repr).encode())
    h.update(hashlib.sha256(model).digest())
    for name, x in inputs.items():
        h.update(json.dumps(name).encode())
        h.update(tensor_hash(np.asarray(x)).encode())
    return h.hexdigest()


class PathOutputs:
    """The entries of one data root (``root``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def relative(self, key: str) -> str:
        """The entry's path relative to the data root, as rows name it."""
        return "/".join((*OUTPUTS_DIR, f"{key}.npz"))

    def _file(self, key: str) -> Path | None:
        """The entry's file, or None where it would lie outside the data root (a folder of
        the cache replaced by a link elsewhere) or the key is not one."""
        if not _KEY.fullmatch(key):
            return None
        directory = self.root.joinpath(*OUTPUTS_DIR)
        root = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(directory))
        if real != root.joinpath(*OUTPUTS_DIR) or directory.is_symlink():
            return None
        return directory / f"{key}.npz"

    def load(self, key: str) -> tuple[Stored | None, str | None]:
        """The entry (None: there is none), and the sentence saying why one that exists is
        not used (unreadable, changed, another key's)."""
        path = self._file(key)
        if path is None or not path.exists():
            return None, None
        if path.is_symlink() or not path.is_file():
            return None, self._unused(key, "it is not a plain file")
        try:
            stored = _read(path, key)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile,
                json.JSONDecodeError) as e:
            return None, self._unused(key, str(e) or type(e).__name__)
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: gc keeps it while a run that used it is kept
        return stored, None

    def _unused(self, key: str, why: str) -> str:
        return (f"the stored outputs {self.relative(key)} could not be used ({why}); the "
                "path was computed again")

    def store(self, key: str, stored: Stored) -> bool:
        """Keep the entry (True: it is kept); a root gero cannot write (read-only, full)
        keeps none: the outputs are only not reused."""
        path = self._file(key)
        if path is None:
            return False
        meta = {"format": FORMAT, "key": key, "outputs": len(stored.outputs),
                "hash": tensors_hash(stored.outputs), "median_ms": stored.median_ms,
                "build_ms": stored.build_ms, "repeats": stored.repeats,
                "deterministic": stored.deterministic}

        def write(name: str) -> None:
            with zipfile.ZipFile(name, "w", zipfile.ZIP_STORED) as z:
                for i, x in enumerate(stored.outputs):
                    z.writestr(f"{i}.npy", npy_bytes(x))
                z.writestr(_META, json.dumps(meta))

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file(path, write)
        except (OSError, ValueError):  # ValueError: an object array, never stored
            return False
        return True


def _read(path: Path, key: str) -> Stored:
    with zipfile.ZipFile(path) as z:
        # Stored, never compressed: a member inflates to no more than the file holds.
        if any(i.compress_type != zipfile.ZIP_STORED for i in z.infolist()):
            raise ValueError("it is compressed, as gero never writes it")
        info = z.getinfo(_META)
        if info.file_size > _MAX_META_BYTES:
            raise ValueError("its description is too large")
        meta = json.loads(z.read(_META))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError("it was written in another format")
        if meta.get("key") != key:
            raise ValueError("it holds another path's outputs")
        count = meta["outputs"]
        if not isinstance(count, int) or count < 0:
            raise ValueError("its output count is not a number")
        outputs = [load_npy(z.read(f"{i}.npy")) for i in range(count)]
    if tensors_hash(outputs) != meta["hash"]:
        raise ValueError("its outputs do not match their recorded hash")
    return Stored(outputs, float(meta["median_ms"]), float(meta["build_ms"]),
                  int(meta["repeats"]), bool(meta["deterministic"]))


def unused(root: Path, since: float | None) -> list[Path]:
    """Entries (and files a writer killed mid-write left) last used before ``since`` (POSIX
    seconds: the oldest kept run's start; None: no run is kept, every entry goes)."""
    directory = root.joinpath(*OUTPUTS_DIR)
    if directory.is_symlink() or not directory.is_dir():
        return []
    found = []
    for entry in sorted(directory.iterdir()):
        try:
            if entry.is_symlink() or not entry.is_file():
                continue
            if entry.name.startswith(".gero-") or since is None or (
                    entry.stat().st_mtime < since):
                found.append(entry)
        except OSError:
            continue
    return found

