"""Scratch directories that never outlive their process for long.

A ``finally`` removes a scratch directory on every exit path a process lives through; a
kill -9 (or a crash on a signal) gives it none. So each scratch directory's name carries the
pid of the process it belongs to (``PREFIX<pid>-<random>``), and making one first removes
the directories of the same prefix whose process has ended: what a killed ``gero localize``
left is gone at the next one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def owner(name: str, prefix: str) -> int | None:
    """The pid a scratch directory named ``name`` belongs to (None: not one of ``prefix``)."""
    found = re.fullmatch(re.escape(prefix) + r"(\d+)-.+", name)
    return int(found.group(1)) if found else None


def sweep(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the scratch directories of ``prefix`` in ``parent`` (default: the temporary
    directory) whose process has ended; the removed ones. A directory of someone else's
    (another user's process, whose liveness this process may not see) is left alone."""
    folder = Path(parent if parent is not None else tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            pid = owner(path.name, prefix)
            if pid is None or pid == os.getpid() or alive(pid):
                continue
            with contextlib.suppress(OSError):
                if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                    continue
                shutil.rmtree(path)
                removed.append(path)
    return removed


def make(prefix: str, parent: Path | None = None) -> Path:
    """A new scratch directory of this process (its stale siblings swept first); the caller
    removes it."""
    sweep(prefix, parent)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-",
                                 dir=None if parent is None else str(parent)))


@contextlib.contextmanager
def directory(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """``make``, removed again however the block ends."""
    path = make(prefix, parent)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
