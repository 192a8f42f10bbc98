"""From a comparison's figures to one of the four result classes, with a reason."""

from __future__ import annotations

from gero_runner.metrics.compare import Comparison
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, PASSED


def classify(cmp: Comparison, rtol: float, atol: float) -> tuple[str, str]:
    """Result class and a one-sentence reason that names the figures."""
    if cmp.shape_mismatch:
        return DIVERGENCE, (
            f"shape {list(cmp.actual_shape)} differs from reference {list(cmp.reference_shape)}"
        )
    if cmp.nan_both:
        return CONTRACT_ISSUE, (
            f"NaN on both sides at {cmp.nan_both} of {cmp.element_count} elements: "
            "NaN == NaN never passes, the baseline could not be assessed there"
        )
    if cmp.unexpected_nonfinite:
        return CONTRACT_ISSUE, (
            f"{cmp.unexpected_nonfinite} non-finite value(s) (NaN {cmp.nan_actual}, "
            f"inf {cmp.inf_actual}) where the reference is finite"
        )
    if cmp.exact_only:
        if cmp.mismatch_count:
            return DIVERGENCE, (f"{cmp.mismatch_count} of {cmp.element_count} strings differ "
                                "(compared exactly)")
        return PASSED, f"all {cmp.element_count} strings equal (compared exactly)"
    if cmp.mismatch_count:
        return DIVERGENCE, (
            f"{cmp.mismatch_count} of {cmp.element_count} elements outside "
            f"atol={atol:g} + rtol={rtol:g}·|r|; max |a−r| = {cmp.max_abs_error:.3g}, "
            f"max ULP = {cmp.max_ulp:.0f}, needs atol ≥ {cmp.min_atol:.3g}"
        )
    if cmp.bit_exact:
        return PASSED, "bit-exact"
    return PASSED, (
        f"within atol={atol:g} + rtol={rtol:g}·|r|; max |a−r| = {cmp.max_abs_error:.3g}, "
        f"max ULP = {cmp.max_ulp:.0f}"
    )


def arbiter_side(actual_distance: float, reference_distance: float) -> str:
    """Which side of a divergence the float64 result is closer to."""
    if actual_distance < reference_distance:
        return "actual"
    if reference_distance < actual_distance:
        return "reference"
    return "tie"
