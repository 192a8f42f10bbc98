"""Content hashes of files, tensors and observations."""

from __future__ import annotations

import functools
import hashlib
import io
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from gero_runner.schema import Observation


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tensor_hash(x: np.ndarray) -> str:
    """Hash of dtype, shape and bytes: equal hashes mean bit-identical tensors."""
    x = np.ascontiguousarray(x)
    h = hashlib.sha256(f"{x.dtype.str}{x.shape}".encode())
    h.update(x.tobytes())
    return h.hexdigest()


def tensors_hash(xs: Iterable[np.ndarray]) -> str:
    h = hashlib.sha256()
    for x in xs:
        h.update(tensor_hash(x).encode())
    return h.hexdigest()


def npy_bytes(x: np.ndarray) -> bytes:
    """The .npy serialisation of a tensor, without pickles (byte-identical to ``np.save``)."""
    x = np.asarray(x)
    if not x.flags.c_contiguous:  # not np.ascontiguousarray: it stores a scalar as [1]
        x = x.copy(order="C")
    if x.dtype.hasobject:
        raise ValueError("object arrays cannot be stored without pickles")
    return _npy_header(x.dtype.str, x.shape) + x.tobytes()


@functools.lru_cache(maxsize=4096)
def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    # np.save formats the header in Python on every call; cases repeat a few layouts.
    buffer = io.BytesIO()
    np.save(buffer, np.empty(shape, dtype=np.dtype(dtype)), allow_pickle=False)
    data = buffer.getvalue()
    return data[: len(data) - int(np.prod(shape)) * np.dtype(dtype).itemsize]


def load_npy(data: bytes) -> np.ndarray:
    """A .npy tensor, pickles disabled; ValueError when its header claims more (or fewer)
    bytes than it holds, before anything is allocated (a forged header can claim 10^12
    elements)."""
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:  # 3.0 (utf-8 field names): read by numpy's own, private, reader
        read: Any = getattr(np.lib.format, "_read_array_header", None)
        if read is None:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = read(stream, version)
    if dtype.hasobject:
        raise ValueError("object arrays are not loaded (they would need pickles)")
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = len(data) - stream.tell()
    if claimed != held:
        raise ValueError(f"its header claims {claimed} bytes of {dtype} {list(shape)} but it "
                         f"holds {held}")
    array: np.ndarray = np.load(io.BytesIO(data), allow_pickle=False)
    return array


_ROW_JSON = json.JSONEncoder(default=repr)  # built once: every row is hashed


def row_hash(row: Mapping[str, Any] | Observation, columns: Iterable[str]) -> str:
    """SHA-256 of the given columns of a row (floats written with repr, so exact)."""
    payload = _ROW_JSON.encode([[c, row.get(c)] for c in columns])
    return sha256(payload.encode())
