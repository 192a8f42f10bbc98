"""Seeded input generators with edge values mixed in.

Edge values are part of the design: large and tiny magnitudes, subnormals, signed zeros,
rounding ties and, where an operator defines them, ±inf and NaN. Each generator places
them at fixed positions of the flattened tensor, so a case is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gero_runner.cases.base import Shape


def finfo(dtype: str) -> np.finfo[np.floating]:  # type: ignore[type-arg]
    return np.finfo(np.dtype(dtype))


def edge_values(dtype: str, *, nonfinite: bool = False, lo: float = -np.inf,
                hi: float = np.inf) -> list[float]:
    """Edge values representable in ``dtype`` and inside [lo, hi]."""
    fi = finfo(dtype)
    tiny = float(fi.smallest_normal)
    sub = float(fi.smallest_subnormal)
    values = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, sub, -sub, tiny, 3 * sub,
              float(fi.max) / 4, -float(fi.max) / 4, 1.0, -1.0]
    if nonfinite:
        values += [np.inf, -np.inf, np.nan]
    return [v for v in values if (lo <= v <= hi) or np.isnan(v)]


def with_edges(x: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Write ``edges`` into the first positions of ``x`` (flattened), keeping its dtype."""
    flat = x.reshape(-1).copy()
    n = min(len(edges), flat.size)
    flat[:n] = np.asarray(edges[:n], dtype=np.float64).astype(x.dtype)
    return flat.reshape(x.shape)


def uniform(rng: np.random.Generator, dtype: str, shape: Shape, lo: float = -3.0,
            hi: float = 3.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def normal(rng: np.random.Generator, dtype: str, shape: Shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(size=shape) * scale).astype(dtype)
