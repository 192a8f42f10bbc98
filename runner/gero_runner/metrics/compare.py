"""Element-wise comparison of an actual tensor against a reference: every figure, not a bool.

Policy on non-finite values (explicit, as in Polygraphy): equal infinities of the same sign
match; NaN never matches anything, NaN included (NaN == NaN is never a passing result);
a non-finite value against a finite one is a mismatch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

_ORDERED_INT: dict[np.dtype[Any], type[np.signedinteger[Any]]] = {
    np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64,
}


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Every figure of one comparison; the result class is decided elsewhere from these.

    Fields named like observation columns are stored on rows as they are
    (``execution.evaluate.METRIC_COLUMNS``); the others decide the result class.
    """

    element_count: int
    mismatch_count: int
    max_abs_error: float
    max_rel_error: float
    max_ulp: float
    scaled_error: float
    floored_rel_error: float
    nan_actual: int
    inf_actual: int
    nan_reference: int
    inf_reference: int
    nan_both: int
    """Positions where both sides are NaN: agreement, but never a pass."""
    unexpected_nonfinite: int
    """Positions where the actual is NaN or ±inf and the reference is finite."""
    min_atol: float
    min_rtol: float
    bit_exact: bool
    shape_mismatch: bool = False
    exact_only: bool = False
    """Compared for equality only (strings): no error figures, any difference mismatches."""
    actual_shape: tuple[int, ...] = ()
    reference_shape: tuple[int, ...] = ()

    @property
    def within_tolerance(self) -> bool:
        return not self.shape_mismatch and self.mismatch_count == 0


def ulp_distance(actual: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of ``actual``'s float dtype (reference cast to it).

    +0 and -0 are 0 apart. Non-finite pairs give 0 here; they are counted separately.
    """
    dtype = actual.dtype
    int_type = _ORDERED_INT.get(dtype)
    if int_type is None:
        return np.zeros(actual.shape, dtype=np.float64)
    ref = reference.astype(dtype)
    a = actual.view(int_type).astype(np.int64)
    r = ref.view(int_type).astype(np.int64)
    sign_mask = np.int64(np.iinfo(int_type).max)
    # Map the sign-magnitude bit patterns onto a monotone integer line.
    a = np.where(a < 0, -(a & sign_mask), a)
    r = np.where(r < 0, -(r & sign_mask), r)
    finite = np.isfinite(actual) & np.isfinite(ref)
    # Same sign: the int64 difference is exact. Opposite signs may overflow int64, so add
    # magnitudes in float64 (such distances are astronomically large anyway).
    same_sign = (a >= 0) == (r >= 0)
    with np.errstate(over="ignore"):
        exact = np.abs(np.where(same_sign, a - r, 0)).astype(np.float64)
    wide = np.abs(a.astype(np.float64)) + np.abs(r.astype(np.float64))
    return np.where(finite, np.where(same_sign, exact, wide), 0.0)


def compare(actual: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> Comparison:
    """Compare ``actual`` with ``reference`` under ``|a - r| <= atol + rtol * |r|``."""
    actual = np.asarray(actual)
    reference = np.asarray(reference)
    if actual.shape != reference.shape:
        nan = math.nan
        return Comparison(
            element_count=int(reference.size), mismatch_count=int(reference.size),
            max_abs_error=nan, max_rel_error=nan, max_ulp=nan, scaled_error=nan,
            floored_rel_error=nan, nan_actual=_count_nan(actual), inf_actual=_count_inf(actual),
            nan_reference=_count_nan(reference), inf_reference=_count_inf(reference),
            nan_both=0, unexpected_nonfinite=0, min_atol=nan, min_rtol=nan, bit_exact=False,
            shape_mismatch=True, actual_shape=tuple(actual.shape),
            reference_shape=tuple(reference.shape),
        )
    bit_exact = actual.dtype == reference.dtype and actual.tobytes() == reference.tobytes()
    if bit_exact and actual.size and (actual.dtype.kind != "f" or not np.isnan(actual).any()):
        # Identical bits and no NaN (the common case between ORT levels): every error is 0.
        inf = _count_inf(actual)
        return _zero_error(int(actual.size), inf, True, actual.shape, reference.shape)
    if actual.size == 0:
        return _zero_error(0, 0, bit_exact, actual.shape, reference.shape)
    if actual.dtype.kind in "US" or reference.dtype.kind in "US":
        # Strings: exact, element by element (as onnx's runner compares them).
        differ = int(np.sum(actual.astype(str) != reference.astype(str)))
        nan = math.nan
        return Comparison(
            element_count=int(actual.size), mismatch_count=differ, max_abs_error=nan,
            max_rel_error=nan, max_ulp=nan, scaled_error=nan, floored_rel_error=nan,
            nan_actual=0, inf_actual=0, nan_reference=0, inf_reference=0, nan_both=0,
            unexpected_nonfinite=0, min_atol=nan, min_rtol=nan,
            bit_exact=differ == 0 and bit_exact, exact_only=True,
            actual_shape=tuple(actual.shape), reference_shape=tuple(reference.shape))

    a = _as_float64(actual)
    r = _as_float64(reference)
    a_finite = np.isfinite(a)
    r_finite = np.isfinite(r)
    a_nan = np.isnan(a)
    r_nan = np.isnan(r)
    both_finite = a_finite & r_finite
    same_inf = ~a_finite & ~r_finite & ~a_nan & ~r_nan & (a == r)

    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_finite, np.abs(a - r), 0.0)
    abs_r = np.where(r_finite, np.abs(r), 0.0)
    bound = atol + rtol * abs_r
    mismatch = np.where(both_finite, diff > bound, ~same_inf)

    max_abs = float(diff.max())
    max_ref = float(abs_r.max())
    nonzero = both_finite & (abs_r > 0)
    max_rel = float((diff[nonzero] / abs_r[nonzero]).max()) if nonzero.any() else 0.0
    if max_ref > 0:
        scaled = max_abs / max_ref
        floored = float((diff / np.maximum(abs_r, 1e-3 * max_ref)).max())
    else:
        scaled = floored = 0.0 if max_abs == 0 else math.inf

    min_atol = float(np.maximum(diff - rtol * abs_r, 0.0).max())
    over = both_finite & (diff > atol)
    if over.any():
        with np.errstate(divide="ignore"):
            need = np.where(abs_r[over] > 0, (diff[over] - atol) / abs_r[over], math.inf)
        min_rtol = float(need.max())
    else:
        min_rtol = 0.0

    is_float = actual.dtype.kind == "f"
    max_ulp = float(ulp_distance(actual, reference).max()) if is_float else max_abs
    return Comparison(
        element_count=int(actual.size),
        mismatch_count=int(mismatch.sum()),
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        max_ulp=max_ulp,
        scaled_error=scaled,
        floored_rel_error=floored,
        nan_actual=int(a_nan.sum()),
        inf_actual=int((~a_finite & ~a_nan).sum()),
        nan_reference=int(r_nan.sum()),
        inf_reference=int((~r_finite & ~r_nan).sum()),
        nan_both=int((a_nan & r_nan).sum()),
        unexpected_nonfinite=int((~a_finite & r_finite).sum()),
        min_atol=min_atol,
        min_rtol=min_rtol,
        bit_exact=bit_exact,
        actual_shape=tuple(actual.shape),
        reference_shape=tuple(reference.shape),
    )


def _zero_error(size: int, inf: int, bit_exact: bool, actual_shape: tuple[int, ...],
                reference_shape: tuple[int, ...]) -> Comparison:
    """Every error 0: identical bits without NaN, or nothing to compare."""
    return Comparison(
        element_count=size, mismatch_count=0, max_abs_error=0.0, max_rel_error=0.0,
        max_ulp=0.0, scaled_error=0.0, floored_rel_error=0.0, nan_actual=0, inf_actual=inf,
        nan_reference=0, inf_reference=inf, nan_both=0, unexpected_nonfinite=0, min_atol=0.0,
        min_rtol=0.0, bit_exact=bit_exact, actual_shape=tuple(actual_shape),
        reference_shape=tuple(reference_shape))


def _as_float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "fiub":
        return x.astype(np.float64)
    raise TypeError(f"cannot compare tensors of dtype {x.dtype}")


def _count_nan(x: np.ndarray) -> int:
    return int(np.isnan(x).sum()) if x.dtype.kind == "f" else 0


def _count_inf(x: np.ndarray) -> int:
    return int(np.isinf(x).sum()) if x.dtype.kind == "f" else 0
