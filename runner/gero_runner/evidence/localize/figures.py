"""The figures two sides' tensors are compared by: the scaled error ``max|a−r| / max|r|``,
a dtype's roundings, the noisy inputs a floor is measured from, bit-for-bit sameness."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gero_runner.evidence.localize.bounds import NOISE_RELATIVE, ROUNDINGS


def rounding(dtype: np.dtype[Any]) -> float:
    """``ROUNDINGS`` roundings of ``dtype`` (float32's where it is not a float type)."""
    try:
        eps = float(np.finfo(dtype).eps)
    except (TypeError, ValueError):
        eps = 2.0 ** -23
    return ROUNDINGS * eps / 2


def figure(a: np.ndarray, r: np.ndarray) -> tuple[float, int]:
    """(scaled error, non-finite mismatches); a shape or non-finite mismatch is inf."""
    a, r = np.asarray(a), np.asarray(r)
    if a.shape != r.shape:
        return math.inf, 0
    if a.size == 0:
        return 0.0, 0
    if a.dtype.kind not in "fiub" or r.dtype.kind not in "fiub":
        return (0.0 if np.array_equal(a, r) else math.inf), 0
    if a.dtype == r.dtype and a.dtype in (np.float32, np.float64):
        # Most tensors: finite on both sides. Their difference in their own dtype (rounded
        # to 2^-24 of itself at worst) is finite exactly when no element is NaN or inf on
        # either side: two passes and one temporary instead of a dozen float64 ones.
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.atleast_1d(np.subtract(a, r))  # a 0-d difference is a scalar
            np.abs(d, out=d)
            diff = float(d.max())
        if math.isfinite(diff):
            scale = max(float(r.max()), -float(r.min()))
            if scale == 0:
                return (0.0 if diff == 0 else math.inf), 0
            return diff / scale, 0
    x, y = a.astype(np.float64), r.astype(np.float64)
    fx, fy = np.isfinite(x), np.isfinite(y)
    both = fx & fy
    same = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
    bad = int(np.sum(~both & ~same))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = float(np.max(np.abs(x - y), where=both, initial=0.0))
        scale = float(np.max(np.abs(y), where=fy, initial=0.0))
    if bad:
        return math.inf, bad
    if scale == 0:
        return (0.0 if diff == 0 else math.inf), 0
    return diff / scale, 0


def with_noise(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``inputs`` with ``NOISE_RELATIVE`` relative noise on the float ones (seeded): the run
    a tensor's floor is measured against."""
    rng = np.random.default_rng(20260)
    out = {}
    for k, x in inputs.items():
        if x.dtype.kind == "f":
            x = (x.astype(np.float64) * (1.0 + NOISE_RELATIVE * rng.standard_normal(x.shape))
                 ).astype(x.dtype)
        out[k] = x
    return out


def bit_exact(a: np.ndarray | None, stored: np.ndarray | None) -> bool | None:
    """Whether ``a`` is ``stored`` bit for bit (None: one of them is missing)."""
    if a is None or stored is None:
        return None
    return bool(a.shape == stored.shape and a.tobytes() == stored.astype(a.dtype).tobytes())
