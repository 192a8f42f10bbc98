"""Seeded input generators with edge values mixed in.

Edge values are part of the design: large and tiny magnitudes, subnormals, signed zeros,
rounding ties and, where an operator defines them, ±inf and NaN. Each generator places
them at fixed positions of the flattened tensor, so a case is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gero_runner.case import Shape


def finfo(dtype: str) -> np.finfo[np.floating[Any]]:
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


def magnitudes(rng: np.random.Generator, dtype: str, shape: Shape, lo_exp: float = -4.0,
               hi_exp: float = 4.0, *, signed: bool = True) -> np.ndarray:
    """Values spread over decades (10**lo_exp .. 10**hi_exp), with random signs if ``signed``."""
    x = 10.0 ** rng.uniform(lo_exp, hi_exp, size=shape)
    if signed:
        x *= rng.choice([-1.0, 1.0], size=shape)
    return x.astype(dtype)


def away_from_zero(rng: np.random.Generator, dtype: str, shape: Shape, lo: float = 0.5,
                   hi: float = 3.0) -> np.ndarray:
    """Uniform magnitudes in [lo, hi] with random signs (safe divisors)."""
    x: np.ndarray = rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x.astype(dtype)


def rounding_ties(dtype: str) -> list[float]:
    """Halfway cases and their neighbours, where naive floor(x + 0.5) rounding goes wrong."""
    fi = finfo(dtype)
    half_below = float(np.nextafter(np.asarray(0.5, dtype), np.asarray(0.0, dtype)))
    # The largest odd integer where x + 0.5 is not representable any more.
    big_odd = float(2.0 ** fi.nmant + 1)
    return [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, half_below, -half_below,
            big_odd, -big_odd, 0.0, -0.0]


def with_ties(x: np.ndarray, values: Sequence[float]) -> np.ndarray:
    """Make runs of equal values: ``values`` each appear twice at the start of every row."""
    out = x.copy()
    rows = out.reshape(-1, out.shape[-1])
    for row in rows:
        for i, v in enumerate(values):
            if 2 * i + 1 < row.size:
                row[2 * i] = row[2 * i + 1] = v
    return out


def cast_edges(dtype: str) -> list[float]:
    """Values at the edges of float16: overflow, halfway ties, subnormals (for narrowing casts)."""
    values = [65504.0, 65519.0, 65520.0, -65520.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
              2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 2.0 ** -26, -(2.0 ** -14), 1e-8,
              0.0, -0.0]
    return [v for v in values if abs(v) <= float(finfo(dtype).max)]
