"""Arrays of a user's ``.npz`` (``--inputs``, ``--calibration``), read without trusting it.

``np.load`` allocates what an array's header declares before reading a byte of it (a
236-byte file declaring 10^12 elements is a MemoryError) and inflates whatever a zip member
holds. Here every size is checked from the headers first: a member's declared uncompressed
size (``ZipInfo.file_size``) must be exactly its ``.npy`` header plus shape × itemsize, each
array at most ``max_array_bytes`` (``--max-tensor-mb``) and all of them together at most
``max_total_bytes``; only then is an array allocated, and it is filled in bounded chunks
from a stream that cannot yield more than the declared size. No pickles (object arrays).
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from gero_runner.errors import GeroError
from gero_runner.storage.budget import mib

CHUNK_BYTES = 1 << 20
"""How much of a member is inflated at a time."""


def memory_budget() -> int:
    """All the arrays of one archive together: half the machine's memory (they are copied
    into each case's feeds), or no bound where the platform does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 1 << 62


class _Counted:
    """A member's stream that counts what was read of it (the ``.npy`` header's length)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.count = stream, 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.count += len(data)
        return data


def _header(stream: _Counted, what: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """The shape, Fortran order and dtype an ``.npy`` header declares (nothing else read;
    numpy bounds the header's own length)."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"npy format version {version[0]}.{version[1]}")
    except (ValueError, EOFError) as e:
        raise GeroError(f"{what}: not an .npy array ({str(e)[:200]})") from None
    if dtype.hasobject:
        raise GeroError(f"{what}: holds Python objects (a pickle); gero reads numbers only")
    if dtype.subdtype is not None or dtype.itemsize == 0:
        raise GeroError(f"{what}: has dtype {dtype}; gero reads arrays of plain numbers")
    return tuple(int(d) for d in shape), bool(fortran), dtype


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str,
                 max_array_bytes: int) -> np.ndarray:
    try:
        return _read_checked(archive, info, what, max_array_bytes)
    except zipfile.BadZipFile as e:  # a bad CRC: the bytes inflated are not those stored
        raise GeroError(f"{what}: damaged ({str(e)[:200]})") from None


def _read_checked(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str,
                  max_array_bytes: int) -> np.ndarray:
    with archive.open(info) as member:
        stream = _Counted(member)
        shape, fortran, dtype = _header(stream, what)
        data_bytes = math.prod(shape) * dtype.itemsize
        if data_bytes > max_array_bytes:
            raise GeroError(f"{what}: shape {list(shape)} of {dtype} would take "
                            f"{mib(data_bytes)}, over the {mib(max_array_bytes)} a tensor "
                            "may take (--max-tensor-mb)")
        if stream.count + data_bytes != info.file_size:
            raise GeroError(f"{what}: its header declares shape {list(shape)} of {dtype} "
                            f"({data_bytes} bytes) but the archive declares "
                            f"{info.file_size - stream.count} bytes of data; the file is "
                            "damaged or forged")
        # Allocated only now, at the size both headers agree on. zipfile never inflates
        # past a member's declared size, and checks its CRC once that much was read.
        flat = np.empty(math.prod(shape), dtype=dtype)
        raw = flat.view(np.uint8)
        done = 0
        while done < data_bytes:
            chunk = stream.read(min(CHUNK_BYTES, data_bytes - done))
            if not chunk:
                raise GeroError(f"{what}: ends after {done} of its {data_bytes} bytes of data")
            raw[done:done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            done += len(chunk)
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)


def read_arrays(path: str, flag: str, max_array_bytes: int,
                max_total_bytes: int | None = None) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path`` by name, each checked as the module says;
    ``flag`` names the option in the messages. An archive with no array is refused."""
    total_cap = memory_budget() if max_total_bytes is None else max_total_bytes
    p = Path(path)
    if not p.is_file():
        raise GeroError(f"{flag} {path}: no such file")
    try:
        with p.open("rb") as f:
            is_npy = f.read(6) == b"\x93NUMPY"
        if is_npy:
            raise GeroError(f"{flag} {path}: a single array, not an .npz archive of arrays "
                            "named by input")
        with zipfile.ZipFile(p) as archive:
            members = [i for i in archive.infolist() if not i.is_dir()]
            others = [i.filename for i in members if not i.filename.endswith(".npy")]
            if others:
                raise GeroError(f"{flag} {path}: member {others[0]!r} is not an .npy array; "
                                "an .npz holds one NAME.npy per input")
            if not members:
                raise GeroError(f"{flag} {path}: holds no arrays; save one per input, e.g. "
                                "numpy.savez(FILE, x=array)")
            declared = sum(i.file_size for i in members)
            if declared > total_cap:
                raise GeroError(f"{flag} {path}: its arrays would take "
                                f"{mib(declared)} together, over the "
                                f"{mib(total_cap)} gero reads from one archive (half this "
                                "machine's memory)")
            arrays: dict[str, np.ndarray] = {}
            for info in members:
                name = info.filename[:-len(".npy")]
                what = f"{flag} {path}: array {name!r}"
                if info.file_size > max_array_bytes + (1 << 16):  # before reading a byte
                    raise GeroError(f"{what} would take {mib(info.file_size)}, over the "
                                    f"{mib(max_array_bytes)} a tensor may take "
                                    "(--max-tensor-mb)")
                if name in arrays:
                    raise GeroError(f"{what} is in the archive twice")
                arrays[name] = _read_member(archive, info, what, max_array_bytes)
            return arrays
    except GeroError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError,
            RuntimeError) as e:
        # zipfile says BadZipFile for a file that is no zip, NotImplementedError for an
        # unknown compression, RuntimeError for an encrypted member.
        raise GeroError(f"{flag} {path}: not a readable .npz without pickles "
                        f"({type(e).__name__}: {str(e)[:200]})") from None
