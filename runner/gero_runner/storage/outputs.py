"""Files gero writes for a person (a report, findings, an export, a bundle, a repro
directory) and the results it keeps beside the evidence (a localization, a blame).

A person's file never lands inside the data root, whose files only the store writes (a
report written over ``runs/RUN/observations.parquet`` loses the run). Every file is written
whole or not at all: to a temporary file beside it, renamed over it (``store.write_file``),
so a full disk or a kill leaves the old file as it was, never half of one. A failure is
one sentence, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path

from gero_runner.errors import GeroError
from gero_runner.storage.store import write_file

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""A full disk, a quota, a file size limit: the same to a person (no room)."""
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def refuse_inside_root(output: str | os.PathLike[str], data_root: str | os.PathLike[str],
                       flag: str = "-o") -> None:
    """Refuse an ``output`` that is the data root or lies inside it (symbolic links
    resolved, so a link into the root is refused too)."""
    target = Path(os.path.realpath(output))
    root = Path(os.path.realpath(data_root))
    if target == root or root in target.parents:
        raise GeroError(f"{flag} {output} is inside the data root {data_root}, whose files "
                        "only gero's store writes: give a path outside it")


def refuse_unusable_directory(output: Path, flag: str = "-o") -> None:
    """Refuse a directory ``output`` that gero cannot make (or fill) as a new directory: a
    file, a device, a symbolic link (dangling or not), a directory that is not empty, or
    one below a file."""
    if output.is_symlink():
        raise GeroError(f"{flag} {output} is a symbolic link: give a new or empty directory")
    if output.exists() and not output.is_dir():
        raise GeroError(f"{flag} {output} is not a directory: give a new or empty directory")
    if output.is_dir() and any(output.iterdir()):
        raise GeroError(f"{flag} {output}: the directory exists and is not empty")
    parent = next((p for p in output.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise GeroError(f"{flag} {output}: {parent} is not a directory")


def write_output(path: str | os.PathLike[str], data: bytes | str | Callable[[str], None],
                 flag: str = "-o") -> Path:
    """Write ``data`` (bytes, text as UTF-8, or a function that writes a file name) to
    ``path`` whole or not at all; a failure says the file there is as it was."""
    target = Path(path)

    def write(name: str) -> None:
        if callable(data):
            data(name)
            return
        with open(name, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)

    try:
        write_file(target, write)
    except OSError as e:
        raise output_error(target, e, flag) from None
    return target


def output_error(path: Path, error: OSError, flag: str = "-o") -> GeroError:
    """One sentence for a person's file that could not be written."""
    why = "the disk is full" if error.errno in _FULL else error.strerror or str(error)
    above = next((p for p in path.absolute().parents if p.exists()), None)
    if above is not None and not above.is_dir():
        why = f"{above} is not a directory"
    kept = "what was there is as it was" if path.exists() else "nothing was written"
    return GeroError(f"{flag} {path}: cannot write it ({why}); {kept}")


def store_beside_evidence(path: Path, data: bytes | Callable[[str], None],
                          data_root: Path) -> None:
    """Write a result kept beside the evidence (``localize/ID.json``, ``blame/ID.json``)
    whole or not at all; a read-only root or a full disk is one sentence, and a folder
    made for it is removed again when nothing went in."""
    made = not path.parent.exists()

    def write(name: str) -> None:
        if callable(data):
            data(name)
            return
        with open(name, "wb") as f:
            f.write(data)

    try:
        path.parent.mkdir(exist_ok=True)
        write_file(path, write)
    except OSError as e:
        if made:
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when empty
        raise stored_error(data_root, e) from None


def check_writable(data_root: Path, directory: Path) -> None:
    """Refuse, before any work, to compute a result that could not be stored in
    ``directory`` (an evidence directory of ``data_root``)."""
    if not os.access(directory, os.W_OK):
        code = errno.EROFS if _read_only(directory) else errno.EACCES
        raise stored_error(data_root, OSError(code, os.strerror(code)))


def _read_only(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def stored_error(data_root: Path, error: OSError) -> GeroError:
    """One sentence for a result that could not be kept in the data root."""
    if error.errno in _FULL:
        return GeroError(f"the disk is full ({error.filename or data_root}): nothing was "
                         "stored and the data root is as it was; free some space and run it "
                         "again")
    if error.errno in _READ_ONLY:
        return GeroError(f"cannot write in the data root {data_root} ({error.strerror}): "
                         "gero needs to write there; give a --data-dir it may write, or make "
                         "this one writable")
    return GeroError(f"cannot store the result in the data root {data_root} "
                     f"({error.strerror or error})")
