"""Locks on a data root: a short one around dedup-and-write, and one per running run.

They are POSIX record locks (``fcntl.lockf``): the kernel releases them when the process
dies, kill -9 included; forked workers do not inherit them; NFS honours them. Only the
standard library: the explorer asks whether a run is still running before it paints.

A POSIX lock is dropped when its process closes *any* descriptor of the file, so this
process never opens a lock file it already holds (``_HELD``). It is also held by the
process, not by a thread: threads of one process (two ``gero.run`` calls at once) take a
thread lock per root first, so they wait for each other as two processes do.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from gero_runner.errors import GeroError

ROOT_LOCK = ".lock"
"""In the data root: held while a writer reads the stored ids and writes its files."""
RUN_LOCK = ".running"
"""In a run's directory: held by the process that runs it, for as long as it runs."""

_HELD: dict[str, int] = {}
"""Lock files this process holds, by path, with their descriptors."""
_THREAD_LOCKS: dict[str, threading.RLock] = {}
"""Per root lock file: the thread that holds it in this process (re-entrant)."""
_THREAD_LOCKS_GUARD = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where /proc allows (thread-safe)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode ``open()`` gives a new file: what every file gero writes should have."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """The mode ``mkdir`` gives a new directory."""
    return 0o777 & ~_umask()


_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


@contextlib.contextmanager
def root_lock(data_root: Path, reading: bool = False) -> Iterator[None]:
    """Hold the data root's write lock (waiting for another writer to finish its write).

    A root this process cannot write is refused in one sentence; with ``reading`` (a dry
    run, which writes nothing) it is read without the lock instead."""
    path = str(Path(data_root).absolute() / ROOT_LOCK)
    with _THREAD_LOCKS_GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(path, threading.RLock())
    with thread_lock:  # another thread of this process holding it: wait, as a process would
        if path in _HELD:  # re-entered by this thread: already held
            yield
            return
        try:
            Path(data_root).mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, file_mode())
        except OSError as e:
            if e.errno not in _READ_ONLY:
                raise
            if reading:
                yield
                return
            raise GeroError(f"cannot write in the data root {data_root} ({e.strerror}): "
                            "gero needs to write there; give a --data-dir it may write, "
                            "or make this one writable") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            _HELD[path] = fd
            yield
        finally:
            _HELD.pop(path, None)
            os.close(fd)  # closing the descriptor releases the lock


class RunLock:
    """The lock a running run holds on its directory; ``release`` when the run ends."""

    def __init__(self, run_dir: Path) -> None:
        self.path = str(run_dir / RUN_LOCK)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, file_mode())
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise RunningError(run_dir.name) from e
            raise
        os.write(fd, f"{os.getpid()}\n".encode())
        _HELD[self.path] = fd

    def release(self) -> None:
        fd = _HELD.pop(self.path, None)
        if fd is None:
            return
        # Unlinked before the descriptor closes: nobody can take a lock on a dead file.
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(fd)


class RunningError(Exception):
    """Another process runs this run right now."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


def is_running(run_dir: Path) -> bool:
    """Whether a live process holds the run's lock (False once it has exited, however)."""
    path = str(run_dir / RUN_LOCK)
    if path in _HELD:
        return True
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EACCES, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


def effective_status(run_dir: Path, status: str) -> str:
    """A record that says ``running`` whose process is gone is an ``interrupted`` run."""
    if status == "running" and not is_running(run_dir):
        return "interrupted"
    return status
