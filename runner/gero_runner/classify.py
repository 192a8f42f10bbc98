"""From a comparison's figures to one of the four result classes, with a reason; and which
side of a disagreement the float64 result sides with."""

from __future__ import annotations

import numpy as np

from gero_runner.facts import NAN, OUTSIDE, nonfinite_kind
from gero_runner.metrics.compare import ACTUAL, REFERENCE, Comparison, mismatch_mask
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, PASSED

NOT_APPLICABLE = "-"
TIE = "tie"


def format_ulp(ulp: float) -> str:
    """ULPs as a figure: whole numbers plainly, a wide reference's fractions to 2 digits."""
    return f"{ulp:.0f}" if ulp >= 100 or ulp == int(ulp) else f"{ulp:.2g}"


def _scale(cmp: Comparison) -> str:
    """The rtol term's scale as the reason writes it."""
    if cmp.rel_floor >= 1:
        return "max|r| (the output's scale)"
    return f"max(|r|, {cmp.rel_floor:g}·max|r|)" if cmp.rel_floor else "|r|"


def problems(cmp: Comparison, rtol: float, atol: float, *, actual: str = ACTUAL,
             reference: str = REFERENCE) -> list[str]:
    """Every way ``cmp`` fails, one clause each: NaN on both sides, non-finite values on
    either side, finite elements outside tolerance (all of them, none hiding another)."""
    n = cmp.element_count
    out = []
    if cmp.nan_both:
        out.append(f"NaN on both sides at {cmp.nan_both} of {n} elements (NaN == NaN never "
                   "passes)")
    out += [g.describe(n, actual, reference) for g in cmp.nonfinite]
    if cmp.finite_mismatch:
        out.append(
            f"{cmp.finite_mismatch} of {n} elements outside atol={atol:g} + "
            f"rtol={rtol:g}·{_scale(cmp)}; "
            f"max |a−r| = {cmp.max_abs_error:.3g}, max ULP = {format_ulp(cmp.max_ulp)}, "
            f"needs atol ≥ {cmp.min_atol:.3g}")
    if cmp.saturation is not None:
        out.append(cmp.saturation.describe(n))
    return out


def classify(cmp: Comparison, rtol: float, atol: float) -> tuple[str, str]:
    """Result class and a one-sentence reason that names the figures."""
    if cmp.shape_mismatch:
        return DIVERGENCE, (
            f"shape {list(cmp.actual_shape)} differs from reference {list(cmp.reference_shape)}"
        )
    if cmp.dtype_mismatch:
        return DIVERGENCE, (
            f"dtype {cmp.actual_dtype} differs from the reference's {cmp.reference_dtype}"
        )
    if cmp.exact_only:
        if cmp.mismatch_count:
            return DIVERGENCE, (f"{cmp.mismatch_count} of {cmp.element_count} strings differ "
                                "(compared exactly)")
        return PASSED, f"all {cmp.element_count} strings equal (compared exactly)"
    found = problems(cmp, rtol, atol)
    if cmp.nan_both or cmp.nonfinite_mismatch:
        # Non-finite values where the other side disagrees: an output is non-finite where
        # it must not be (or NaN hides the baseline), whichever side it is.
        if not cmp.finite_mismatch and cmp.nan_both + cmp.nonfinite_mismatch < cmp.element_count:
            found.append(f"the other elements within tolerance (max |a−r| = "
                         f"{cmp.max_abs_error:.3g})")
        return CONTRACT_ISSUE, "; ".join(found)
    if cmp.mismatch_count:
        return DIVERGENCE, "; ".join(found)
    if cmp.bit_exact:
        return PASSED, "bit-exact"
    return PASSED, (
        f"within atol={atol:g} + rtol={rtol:g}·|r|; max |a−r| = {cmp.max_abs_error:.3g}, "
        f"max ULP = {format_ulp(cmp.max_ulp)}"
    )


def failure_kind(cmp: Comparison) -> str:
    """The kind of a failed comparison (``gero_runner.facts``), as ``classify`` found it:
    NaN fed on both sides and nothing else, the side of the first non-finite mismatch, else
    values that differ beyond tolerance (``outside``: a shape, a dtype or strings that
    differ, finite errors beside NaN on both sides, saturation too)."""
    if cmp.shape_mismatch or cmp.dtype_mismatch or cmp.exact_only:
        return OUTSIDE
    if cmp.nonfinite:
        return nonfinite_kind(cmp.nonfinite[0].side)
    if cmp.nan_both and not cmp.finite_mismatch:
        return NAN
    return OUTSIDE


def nonfinite_where_finite(cmp: Comparison) -> int:
    """Elements where the actual side is NaN or ±inf and the reference is finite: the
    path's own non-finite output, whatever law or gate the comparison judges (a reference
    that is non-finite there is another cause, and not counted)."""
    return sum(g.count for g in cmp.nonfinite
               if g.side == ACTUAL and g.other not in ("NaN", "+inf", "-inf"))


def _distances(x: np.ndarray, truth: np.ndarray) -> tuple[int, float]:
    """How far ``x`` is from ``truth``: (elements infinitely far, max finite distance).

    A value equal to the truth (same infinity, NaN for NaN) is 0 away; a NaN or ±inf where
    the truth differs is infinitely far.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        same = (x == truth) | (np.isnan(x) & np.isnan(truth))
        d = np.where(same, 0.0, np.abs(x - truth))
    infinite = ~np.isfinite(d)
    finite = d[~infinite]
    return int(infinite.sum()), float(finite.max()) if finite.size else 0.0


def arbiter(actual: np.ndarray, reference: np.ndarray, truth: np.ndarray, rtol: float,
            atol: float) -> str:
    """Which side the float64 ``truth`` is closer to, decided at the elements where the two
    sides disagree beyond tolerance (elsewhere they agree, and say nothing about blame)."""
    a, r = np.asarray(actual), np.asarray(reference)
    if not all(x.dtype.kind in "fiub" for x in (a, r, np.asarray(truth))):
        return NOT_APPLICABLE  # strings: no distance to a float64 value
    t = np.asarray(truth, dtype=np.float64)
    if a.shape != r.shape or t.shape != a.shape:
        return NOT_APPLICABLE
    mask = mismatch_mask(a, r, rtol, atol)
    if not mask.any():
        return NOT_APPLICABLE
    with np.errstate(invalid="ignore", over="ignore"):
        da = _distances(a[mask].astype(np.float64), t[mask])
        dr = _distances(r[mask].astype(np.float64), t[mask])
    return arbiter_side(da, dr)


def arbiter_side(actual_distance: tuple[int, float],
                 reference_distance: tuple[int, float]) -> str:
    """Which side is closer: fewer infinitely far elements first, then the smaller
    distance; ``tie`` only when both are equally close."""
    if actual_distance < reference_distance:
        return ACTUAL
    if reference_distance < actual_distance:
        return REFERENCE
    return TIE
