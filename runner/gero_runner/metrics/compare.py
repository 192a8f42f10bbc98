"""Element-wise comparison of an actual tensor against a reference: every figure, not a bool.

Policy on non-finite values (explicit, as in Polygraphy, and the same whichever side holds
them): equal infinities of the same sign match; NaN never matches anything, NaN included
(NaN == NaN is never a passing result); a non-finite value against a finite one, or against a
different non-finite value, is a mismatch named by side, kind and position.

Integer and boolean tensors are compared exactly in their own type; float tensors through
float64 (exact for every float dtype). ULP distances are counted in the units of the output
under test, the reference's position computed in float64 so that it never overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from gero_runner.distribution import DISTRIBUTION_NAMES, QUANTILES

# (mantissa bits, smallest normal exponent) of the float formats whose ULPs we count.
_FLOAT_LAYOUT: dict[np.dtype[Any], tuple[int, int]] = {
    np.dtype(np.float16): (10, -14), np.dtype(np.float32): (23, -126),
    np.dtype(np.float64): (52, -1022),
}
ACTUAL, REFERENCE = "actual", "reference"
NARROW_LIMITS: tuple[tuple[str, float], ...] = (
    ("float16", 65504.0), ("bfloat16", 3.3895313892515355e38),
    ("float32", 3.4028234663852886e38))
"""The largest finite value of each float type a runtime may compute in below the declared
one: an output held at exactly that value where the reference is beyond it saturated."""


@dataclass(frozen=True)
class Saturation:
    """Mismatching actual elements held at a narrower float type's largest finite value
    (± ``limit``): the path computed in that type and clamped what overflowed (OpenVINO's CPU
    plugin computes float64 in float32 and saturates rather than returning ±inf: a float64
    input of 4.49e307 comes back as 3.40e38, and log(1e-310) as -3.40e38)."""

    dtype: str
    limit: float
    count: int
    largest_reference: float
    """The largest |reference| at those elements."""

    def describe(self, total: int) -> str:
        return (f"{self.count} of {total} elements held at ±{self.limit:.3g}, {self.dtype}'s "
                f"largest value (computed in {self.dtype}, clamped where it overflowed; "
                f"|reference| there up to {self.largest_reference:.3g})")


@dataclass(frozen=True)
class NonFinite:
    """Positions where ``side`` is ``kind`` (NaN, +inf, -inf) and the other side is not.

    A position where both sides are non-finite but differ is described once, from the NaN
    side (NaN against inf) or the +inf side (+inf against -inf), so that swapping the two
    sides mirrors the description.
    """

    side: str
    kind: str
    count: int
    other: str
    """The other side's value there: its kind when non-finite, else the first value."""
    other_distinct: int
    """How many distinct values the other side holds at these positions."""
    first_index: tuple[int, ...]

    def describe(self, total: int, actual: str = ACTUAL, reference: str = REFERENCE) -> str:
        names = {ACTUAL: actual, REFERENCE: reference}
        other_side = names[REFERENCE if self.side == ACTUAL else ACTUAL]
        where = f"{other_side} is {self.other}"
        if self.other_distinct > 1:
            where = (f"{other_side} is finite ({self.other} at {list(self.first_index)}, "
                     f"{self.other_distinct} distinct values)")
        return (f"{names[self.side]} is {self.kind} at {self.count} of {total} elements "
                f"where {where}")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Every figure of one comparison; the result class is decided elsewhere from these.

    Fields named like observation columns are stored on rows as they are
    (``execution.evaluate.METRIC_COLUMNS``); the others decide the result class.
    """

    element_count: int
    mismatch_count: int
    """Elements that do not pass: finite pairs outside tolerance, non-finite mismatches and
    NaN on both sides."""
    max_abs_error: float
    """Over the finite pairs."""
    max_rel_error: float
    max_ulp: float
    """In units in the last place of ``ulp_dtype`` (the output under test)."""
    scaled_error: float
    floored_rel_error: float
    nan_actual: int
    inf_actual: int
    nan_reference: int
    inf_reference: int
    nan_both: int
    """Positions where both sides are NaN: agreement, but never a pass."""
    nonfinite_mismatch: int
    """Positions where the sides' non-finite values differ (either side non-finite)."""
    min_atol: float
    min_rtol: float
    bit_exact: bool
    shape_mismatch: bool = False
    actual_shape: tuple[int, ...] = ()
    reference_shape: tuple[int, ...] = ()
    finite_mismatch: int = 0
    """Finite pairs outside ``atol + rtol·|r|`` (integers: pairs that differ at all)."""
    nonfinite: tuple[NonFinite, ...] = ()
    """The non-finite mismatches, grouped by side, kind and the other side's value."""
    exact_only: bool = False
    """Compared for equality only (strings): no error figures, any difference mismatches."""
    dtype_mismatch: bool = False
    """The two sides' dtypes differ where they must be the same."""
    actual_dtype: str = ""
    reference_dtype: str = ""
    ulp_dtype: str = ""
    saturation: Saturation | None = None
    """Finite mismatches where the actual side saturated at a narrower type's largest value."""
    rel_floor: float = 0.0
    """The rtol term's floor as a share of max|r|: ``atol + rtol·max(|r|, rel_floor·max|r|)``
    (0: plain element-wise)."""
    mean_abs_error: float = math.nan
    """The distribution of |a − r| over the finite pairs (``gero_runner.distribution``); NaN
    where nothing was compared."""
    median_abs_error: float = math.nan
    p90_abs_error: float = math.nan
    p99_abs_error: float = math.nan
    mean_scaled_error: float = math.nan
    """The same of |a − r| / max|r|."""
    median_scaled_error: float = math.nan
    p90_scaled_error: float = math.nan
    p99_scaled_error: float = math.nan

    @property
    def within_tolerance(self) -> bool:
        return not self.shape_mismatch and not self.dtype_mismatch and self.mismatch_count == 0


def _ordinal(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Position of float64 values on ``dtype``'s monotone line of representable values
    (its bit patterns as integers, -0 = +0 = 0), fractional between them and beyond the
    largest finite value, so a wide reference never overflows into the narrow type."""
    mant, emin = _FLOAT_LAYOUT[dtype]
    ax = np.abs(x)
    _, k = np.frexp(ax)
    exponent = np.where(ax < 2.0 ** emin, emin, k.astype(np.int64) - 1)
    magnitude = (exponent - emin) * 2.0 ** mant + np.ldexp(ax, (mant - exponent).astype(np.int32))
    out: np.ndarray = np.where(x < 0, -magnitude, magnitude)
    return out


def ulp_distance(actual: np.ndarray, reference: np.ndarray,
                 unit: np.dtype[Any] | str | None = None) -> np.ndarray:
    """Distance in units in the last place of ``unit`` (default: ``actual``'s float dtype).

    A reference wider than the unit (a float64 result against a float16 output) is placed
    on the unit's line without rounding it, so the distance can be fractional. +0 and -0
    are 0 apart. Non-finite pairs give 0 here; they are counted separately.
    """
    actual, reference = np.asarray(actual), np.asarray(reference)
    dtype = np.dtype(unit) if unit is not None else actual.dtype
    if dtype not in _FLOAT_LAYOUT:
        return np.zeros(actual.shape, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        a = actual.astype(np.float64)
        r = reference.astype(np.float64)
    finite = np.isfinite(a) & np.isfinite(r)
    a, r = np.where(finite, a, 0.0), np.where(finite, r, 0.0)
    if dtype != np.float64:
        # Ordinals of float16/float32 fit float64's mantissa with room for fractions.
        distance: np.ndarray = np.abs(_ordinal(a, dtype) - _ordinal(r, dtype))
        return distance
    ai = a.view(np.int64)
    ri = r.view(np.int64)
    sign_mask = np.int64(np.iinfo(np.int64).max)
    # Map the sign-magnitude bit patterns onto a monotone integer line.
    ai = np.where(ai < 0, -(ai & sign_mask), ai)
    ri = np.where(ri < 0, -(ri & sign_mask), ri)
    # Same sign: the int64 difference is exact. Opposite signs may overflow int64, so add
    # magnitudes in float64 (such distances are astronomically large anyway).
    same_sign = (ai >= 0) == (ri >= 0)
    with np.errstate(over="ignore"):
        exact = np.abs(np.where(same_sign, ai - ri, 0)).astype(np.float64)
    wide = np.abs(ai.astype(np.float64)) + np.abs(ri.astype(np.float64))
    out: np.ndarray = np.where(finite, np.where(same_sign, exact, wide), 0.0)
    return out


def _dtypes_differ(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """Strings of any width are one type; every other dtype must match exactly."""
    if a.kind in "US" and b.kind in "US":
        return False
    return a != b


def _is_exact_kind(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub"


def _exact_abs_diff(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """|a − r| of two integer (or boolean) tensors of one dtype, exactly, as uint64."""
    if a.dtype.kind == "b":
        a, r = a.astype(np.uint8), r.astype(np.uint8)
    au, ru = a.astype(np.uint64), r.astype(np.uint64)  # two's complement: wraps exactly
    with np.errstate(over="ignore"):
        return np.where(a >= r, au - ru, ru - au)


def mismatch_mask(actual: np.ndarray, reference: np.ndarray, rtol: float,
                  atol: float) -> np.ndarray:
    """The elements that do not pass, by ``compare``'s rules (same shapes assumed)."""
    actual, reference = np.asarray(actual), np.asarray(reference)
    if _is_exact_kind(actual) and actual.dtype == reference.dtype:
        return np.asarray(actual != reference)
    a, r = _as_float64(actual), _as_float64(reference)
    both_finite = np.isfinite(a) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_finite, np.abs(a - r), 0.0)
        bound = atol + rtol * np.where(both_finite, np.abs(r), 0.0)
    same_inf = np.isinf(a) & (a == r)
    return np.where(both_finite, diff > bound, ~same_inf)


def compare(actual: np.ndarray, reference: np.ndarray, rtol: float, atol: float, *,
            unit: np.dtype[Any] | str | None = None, rel_floor: float = 0.0) -> Comparison:
    """Compare ``actual`` with ``reference`` under ``|a - r| <= atol + rtol * |r|``, or with
    ``rel_floor`` under ``atol + rtol * max(|r|, rel_floor * max|r|)`` (a model output's
    small elements are differences of large terms: the floored metric,
    docs/explanation/tolerances.md).

    The two dtypes must be the same, unless ``unit`` is given: then the reference may be a
    wider exact value (e.g. float64 sums of a float16 output) and ULPs count in ``unit``.
    """
    actual = np.asarray(actual)
    reference = np.asarray(reference)
    ulp_dtype = np.dtype(unit) if unit is not None else actual.dtype
    dtypes: dict[str, Any] = {
        "actual_dtype": str(actual.dtype), "reference_dtype": str(reference.dtype),
        "ulp_dtype": str(ulp_dtype),
        "dtype_mismatch": unit is None and _dtypes_differ(actual.dtype, reference.dtype)}
    shapes: dict[str, Any] = {"actual_shape": tuple(actual.shape),
                              "reference_shape": tuple(reference.shape)}
    if actual.shape != reference.shape:
        nan = math.nan
        return Comparison(
            element_count=int(reference.size), mismatch_count=int(reference.size),
            max_abs_error=nan, max_rel_error=nan, max_ulp=nan, scaled_error=nan,
            floored_rel_error=nan, nan_actual=_count_nan(actual), inf_actual=_count_inf(actual),
            nan_reference=_count_nan(reference), inf_reference=_count_inf(reference),
            nan_both=0, nonfinite_mismatch=0, min_atol=nan, min_rtol=nan, bit_exact=False,
            shape_mismatch=True, **shapes, **dtypes,
        )
    bit_exact = actual.dtype == reference.dtype and actual.tobytes() == reference.tobytes()
    if bit_exact and actual.size and (actual.dtype.kind != "f" or not np.isnan(actual).any()):
        # Identical bits and no NaN (the common case between ORT levels): every error is 0.
        inf = _count_inf(actual)
        return _zero_error(int(actual.size), inf, True, shapes, dtypes)
    if actual.size == 0:
        return _zero_error(0, 0, bit_exact, shapes, dtypes)
    if actual.dtype.kind in "US" or reference.dtype.kind in "US":
        # Strings: exact, element by element (as onnx's runner compares them).
        differ = int(np.sum(actual.astype(str) != reference.astype(str)))
        nan = math.nan
        return Comparison(
            element_count=int(actual.size), mismatch_count=differ, max_abs_error=nan,
            max_rel_error=nan, max_ulp=nan, scaled_error=nan, floored_rel_error=nan,
            nan_actual=0, inf_actual=0, nan_reference=0, inf_reference=0, nan_both=0,
            nonfinite_mismatch=0, min_atol=nan, min_rtol=nan,
            bit_exact=differ == 0 and bit_exact, exact_only=True, finite_mismatch=differ,
            **shapes, **dtypes)
    if _is_exact_kind(actual) and actual.dtype == reference.dtype:
        return _compare_exact(actual, reference, shapes, dtypes)

    a = _as_float64(actual)
    r = _as_float64(reference)
    a_finite = np.isfinite(a)
    r_finite = np.isfinite(r)
    a_nan = np.isnan(a)
    r_nan = np.isnan(r)
    both_finite = a_finite & r_finite
    both_nan = a_nan & r_nan
    same_inf = np.isinf(a) & (a == r)
    nonfinite_mismatch = ~both_finite & ~both_nan & ~same_inf

    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_finite, np.abs(a - r), 0.0)
    abs_r = np.where(r_finite, np.abs(r), 0.0)
    max_ref = float(abs_r.max())
    if rel_floor > 0:
        abs_r = np.maximum(abs_r, rel_floor * max_ref)
    bound = atol + rtol * abs_r
    finite_mismatch = both_finite & (diff > bound)

    max_abs = float(diff.max())
    nonzero = both_finite & (abs_r > 0)
    max_rel = float((diff[nonzero] / abs_r[nonzero]).max()) if nonzero.any() else 0.0
    abs_true = np.where(r_finite, np.abs(r), 0.0)
    if max_ref > 0:
        scaled = max_abs / max_ref
        floored = float((diff / np.maximum(abs_true, 1e-3 * max_ref)).max())
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

    if ulp_dtype.kind == "f":
        max_ulp = float(ulp_distance(actual, reference, ulp_dtype).max())
    else:
        max_ulp = max_abs
    return Comparison(
        element_count=int(actual.size),
        mismatch_count=int((finite_mismatch | nonfinite_mismatch | both_nan).sum()),
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        max_ulp=max_ulp,
        scaled_error=scaled,
        floored_rel_error=floored,
        nan_actual=int(a_nan.sum()),
        inf_actual=int((~a_finite & ~a_nan).sum()),
        nan_reference=int(r_nan.sum()),
        inf_reference=int((~r_finite & ~r_nan).sum()),
        nan_both=int(both_nan.sum()),
        nonfinite_mismatch=int(nonfinite_mismatch.sum()),
        min_atol=min_atol,
        min_rtol=min_rtol,
        bit_exact=bit_exact,
        finite_mismatch=int(finite_mismatch.sum()),
        nonfinite=_nonfinite_groups(a, r, nonfinite_mismatch),
        saturation=_saturation(a, r, finite_mismatch, actual.dtype),
        rel_floor=rel_floor, **distribution(diff[both_finite], max_ref), **shapes, **dtypes,
    )


class Distribution(TypedDict):
    """The error distribution's figures, by their columns' names (``DISTRIBUTION_NAMES``)."""

    mean_abs_error: float
    median_abs_error: float
    p90_abs_error: float
    p99_abs_error: float
    mean_scaled_error: float
    median_scaled_error: float
    p90_scaled_error: float
    p99_scaled_error: float


def _figures(v: list[float]) -> Distribution:
    """The figures ``v``, in ``DISTRIBUTION_NAMES``' order (a test holds the two equal)."""
    return Distribution(mean_abs_error=v[0], median_abs_error=v[1], p90_abs_error=v[2],
                        p99_abs_error=v[3], mean_scaled_error=v[4], median_scaled_error=v[5],
                        p90_scaled_error=v[6], p99_scaled_error=v[7])


def distribution(diff: np.ndarray, max_ref: float) -> Distribution:
    """Mean and quantiles of ``diff`` (|a − r| over the finite pairs, flat), and of
    ``diff / max_ref`` (the scaled error of each element: where max|r| is 0, a zero
    difference is 0 and any other inf, as ``scaled_error`` says). NaN without pairs."""
    n = diff.size
    if n == 0:
        return _figures([math.nan] * len(DISTRIBUTION_NAMES))
    # np.quantile's linear interpolation, from one partition around the ranks it reads
    # (np.quantile itself costs ~50 µs a call on the small tensors most comparisons have).
    at = np.array([q for _, q in QUANTILES]) * (n - 1)
    low = np.floor(at).astype(np.intp)
    high = np.minimum(low + 1, n - 1)
    part = np.partition(diff, np.unique(np.concatenate([low, high])))
    quantiles = part[low] + (part[high] - part[low]) * (at - low)
    figures = [float(diff.mean()), *map(float, quantiles)]
    if max_ref > 0:
        scaled = [f / max_ref for f in figures]
    else:
        scaled = [0.0 if f == 0 else math.inf for f in figures]
    return _figures(figures + scaled)


def _saturation(a: np.ndarray, r: np.ndarray, mismatch: np.ndarray,
                dtype: np.dtype[Any]) -> Saturation | None:
    """The narrowest type whose largest value the actual side is held at, beyond it."""
    if dtype.kind != "f" or not mismatch.any():
        return None
    wide = float(np.finfo(dtype).max)
    am, rm = a[mismatch], r[mismatch]
    for name, limit in NARROW_LIMITS:
        if limit >= wide:
            continue
        held = (np.abs(am) == limit) & (np.abs(rm) != limit)
        if held.any():
            return Saturation(name, limit, int(held.sum()), float(np.abs(rm[held]).max()))
    return None


def _zero_error(size: int, inf: int, bit_exact: bool, shapes: dict[str, Any],
                dtypes: dict[str, Any]) -> Comparison:
    """Every error 0: identical bits without NaN, or nothing to compare."""
    zeros = _figures([0.0 if size else math.nan] * len(DISTRIBUTION_NAMES))
    return Comparison(
        element_count=size, mismatch_count=0, max_abs_error=0.0, max_rel_error=0.0,
        max_ulp=0.0, scaled_error=0.0, floored_rel_error=0.0, nan_actual=0, inf_actual=inf,
        nan_reference=0, inf_reference=inf, nan_both=0, nonfinite_mismatch=0, min_atol=0.0,
        min_rtol=0.0, bit_exact=bit_exact, **zeros, **shapes, **dtypes)


def _compare_exact(actual: np.ndarray, reference: np.ndarray, shapes: dict[str, Any],
                   dtypes: dict[str, Any]) -> Comparison:
    """Integers and booleans: equal or not, in their own type (no float64 rounding)."""
    differ = actual != reference
    diff = _exact_abs_diff(actual, reference).astype(np.float64)
    abs_r = np.abs(reference.astype(np.float64))
    max_abs = float(diff.max())
    max_ref = float(abs_r.max())
    nonzero = abs_r > 0
    max_rel = float((diff[nonzero] / abs_r[nonzero]).max()) if nonzero.any() else 0.0
    if max_ref > 0:
        scaled = max_abs / max_ref
        floored = float((diff / np.maximum(abs_r, 1e-3 * max_ref)).max())
    else:
        scaled = floored = 0.0 if max_abs == 0 else math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(abs_r > 0, diff / np.where(abs_r > 0, abs_r, 1.0), math.inf)
    min_rtol = float(need[differ].max()) if differ.any() else 0.0
    count = int(differ.sum())
    return Comparison(
        element_count=int(actual.size), mismatch_count=count, max_abs_error=max_abs,
        max_rel_error=max_rel, max_ulp=max_abs, scaled_error=scaled, floored_rel_error=floored,
        nan_actual=0, inf_actual=0, nan_reference=0, inf_reference=0, nan_both=0,
        nonfinite_mismatch=0, min_atol=max_abs, min_rtol=min_rtol, bit_exact=False,
        finite_mismatch=count, **distribution(diff.reshape(-1), max_ref), **shapes, **dtypes,
    )


def _kind_of(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:.9g}"


_KINDS = ("NaN", "+inf", "-inf", "finite")


def _kind_codes(x: np.ndarray) -> np.ndarray:
    return np.select([np.isnan(x), x == np.inf, x == -np.inf], [0, 1, 2], 3)


def _nonfinite_groups(a: np.ndarray, r: np.ndarray,
                      mismatch: np.ndarray) -> tuple[NonFinite, ...]:
    if not mismatch.any():
        return ()
    # Which side a position is described from: the non-finite one; when both are, the NaN
    # one, else the +inf one. Symmetric by construction.
    a_first = ~np.isfinite(a) & (np.isfinite(r) | np.isnan(a) | ((a > 0) & ~np.isnan(r)))
    flat = np.flatnonzero(mismatch)
    first = a_first.reshape(-1)[flat]
    av, rv = a.reshape(-1)[flat], r.reshape(-1)[flat]
    x, other = np.where(first, av, rv), np.where(first, rv, av)
    keys = np.where(first, 0, 16) + 4 * _kind_codes(x) + _kind_codes(other)
    out = []
    for key in np.unique(keys):  # sorted: actual before reference, NaN before ±inf
        members = keys == key
        k = int(np.argmax(members))
        side = ACTUAL if key < 16 else REFERENCE
        other_code = int(key) % 4
        values = other[members]
        shown = _kind_of(float(values[0])) if other_code == 3 else _KINDS[other_code]
        distinct = len(np.unique(values)) if other_code == 3 else 1
        index = tuple(int(i) for i in np.unravel_index(int(flat[k]), a.shape))
        out.append(NonFinite(side, _KINDS[(int(key) % 16) // 4], int(members.sum()), shown,
                             distinct, index))
    return tuple(out)


def _as_float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "fiub":
        return x.astype(np.float64)
    raise TypeError(f"cannot compare tensors of dtype {x.dtype}")


def _count_nan(x: np.ndarray) -> int:
    return int(np.isnan(x).sum()) if x.dtype.kind == "f" else 0


def _count_inf(x: np.ndarray) -> int:
    return int(np.isinf(x).sum()) if x.dtype.kind == "f" else 0
