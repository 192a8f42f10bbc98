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
    array: np.ndarray = np.load(io.BytesIO(data), allow_pickle=False)
    return array


_ROW_JSON = json.JSONEncoder(default=repr)  # built once: every row is hashed


def row_hash(row: Mapping[str, Any] | Observation, columns: Iterable[str]) -> str:
    """SHA-256 of the given columns of a row (floats written with repr, so exact)."""
    payload = _ROW_JSON.encode([[c, row.get(c)] for c in columns])
    return sha256(payload.encode())
