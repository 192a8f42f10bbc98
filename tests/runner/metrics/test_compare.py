"""The element-wise comparison over edge values: NaN, ±inf, subnormals, signed zero, limits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gero_runner.classify import classify
from gero_runner.metrics.compare import Comparison, compare, ulp_distance
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, PASSED

F16_MAX = float(np.finfo(np.float16).max)


def _cmp(a: list[float], r: list[float], dtype: str = "float32", rtol: float = 1e-5,
         atol: float = 1e-6) -> Comparison:
    return compare(np.array(a, dtype=dtype), np.array(r, dtype=dtype), rtol, atol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_identical_tensors_are_bit_exact_and_pass(dtype: str) -> None:
    x = np.array([0.0, -0.0, 1.5, np.finfo(dtype).tiny, np.finfo(dtype).max], dtype=dtype)
    cmp = compare(x, x.copy(), 1e-5, 1e-6)
    assert cmp.bit_exact and cmp.mismatch_count == 0 and cmp.max_ulp == 0
    assert classify(cmp, 1e-5, 1e-6) == (PASSED, "bit-exact")


def test_nan_against_nan_never_passes() -> None:
    cmp = _cmp([1.0, np.nan], [1.0, np.nan])
    assert cmp.nan_both == 1 and cmp.mismatch_count == 1
    assert classify(cmp, 1e-5, 1e-6)[0] == CONTRACT_ISSUE


@pytest.mark.parametrize(("a", "r", "expected"), [
    ([np.inf], [np.inf], PASSED),
    ([-np.inf], [-np.inf], PASSED),
    # Non-finite against anything else: the same class whichever side holds it.
    ([np.inf], [-np.inf], CONTRACT_ISSUE),
    ([-np.inf], [np.inf], CONTRACT_ISSUE),
    ([1.0], [np.inf], CONTRACT_ISSUE),
    ([np.inf], [1.0], CONTRACT_ISSUE),
    ([np.nan], [1.0], CONTRACT_ISSUE),
    ([1.0], [np.nan], CONTRACT_ISSUE),
    ([np.nan], [np.inf], CONTRACT_ISSUE),
    ([np.inf], [np.nan], CONTRACT_ISSUE),
])
def test_nonfinite_policy(a: list[float], r: list[float], expected: str) -> None:
    cmp = _cmp(a, r)
    assert classify(cmp, 1e-5, 1e-6)[0] == expected


def test_signed_zeros_are_equal_and_zero_ulps_apart() -> None:
    cmp = _cmp([0.0, -0.0], [-0.0, 0.0])
    assert cmp.mismatch_count == 0 and cmp.max_ulp == 0 and not cmp.bit_exact


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_one_ulp_apart(dtype: str) -> None:
    r = np.array([1.0, -2.0, np.finfo(dtype).smallest_subnormal], dtype=dtype)
    a = np.nextafter(r, np.array(np.inf, dtype=dtype))
    assert ulp_distance(a, r).tolist() == [1.0, 1.0, 1.0]


def test_ulp_across_zero_counts_both_sides() -> None:
    sub = np.finfo(np.float32).smallest_subnormal
    a = np.array([sub], dtype=np.float32)
    r = np.array([-sub], dtype=np.float32)
    assert ulp_distance(a, r)[0] == 2.0


def test_tolerance_boundary_is_inclusive() -> None:
    cmp = compare(np.array([1.5]), np.array([1.0]), rtol=0.25, atol=0.25)
    assert cmp.mismatch_count == 0
    cmp = compare(np.array([1.5000001]), np.array([1.0]), rtol=0.25, atol=0.25)
    assert cmp.mismatch_count == 1


def test_minimum_required_tolerances() -> None:
    cmp = compare(np.array([1.1, 2.0]), np.array([1.0, 2.0]), rtol=0.0, atol=0.0)
    assert cmp.min_atol == pytest.approx(0.1)
    assert cmp.min_rtol == pytest.approx(0.1)
    # A difference at a zero reference cannot be covered by any rtol.
    cmp = compare(np.array([0.1]), np.array([0.0]), rtol=0.0, atol=0.0)
    assert math.isinf(cmp.min_rtol)


def test_scaled_and_floored_errors() -> None:
    a = np.array([100.0, 0.0011])
    r = np.array([100.0, 0.001])
    cmp = compare(a, r, 1e-5, 1e-6)
    assert cmp.scaled_error == pytest.approx(1e-4 / 100)
    # The small element is floored at 1e-3 * max|r| = 0.1.
    assert cmp.floored_rel_error == pytest.approx(1e-4 / 0.1)
    assert cmp.max_rel_error == pytest.approx(0.1)


def test_float16_max_and_overflow() -> None:
    cmp = _cmp([F16_MAX], [F16_MAX], dtype="float16", rtol=5e-3, atol=5e-4)
    assert cmp.bit_exact
    cmp = _cmp([np.inf], [F16_MAX], dtype="float16", rtol=5e-3, atol=5e-4)
    assert cmp.nonfinite_mismatch == 1


def test_empty_tensors_pass() -> None:
    cmp = compare(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), 1e-5, 1e-6)
    assert cmp.element_count == 0 and cmp.within_tolerance


def test_shape_mismatch_is_a_divergence() -> None:
    cmp = compare(np.zeros((2, 3)), np.zeros((3, 2)), 1e-5, 1e-6)
    result, reason = classify(cmp, 1e-5, 1e-6)
    assert result == DIVERGENCE and "shape" in reason


def test_integer_outputs_compare_exactly() -> None:
    cmp = compare(np.array([1, 2, 3]), np.array([1, 2, 4]), 0.0, 0.0)
    assert cmp.mismatch_count == 1 and cmp.max_abs_error == 1.0


def test_all_zero_reference_scaled_error() -> None:
    cmp = compare(np.array([0.0, 1e-3]), np.array([0.0, 0.0]), 1e-5, 1e-6)
    assert math.isinf(cmp.scaled_error)
    cmp = compare(np.array([0.0]), np.array([0.0]), 1e-5, 1e-6)
    assert cmp.scaled_error == 0.0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
def test_bit_exact_fast_path_gives_the_same_figures_as_the_full_comparison(dtype: str) -> None:
    values = [0.0, -0.0, 1.5, -3.0, 7.0] if dtype == "int64" else [0.0, -0.0, 1.5, np.inf, -np.inf]
    if dtype in ("float16", "float32"):  # representable in the other dtype too
        values.append(float(np.finfo(dtype).smallest_subnormal))
    x = np.array(values).astype(dtype)
    fast = compare(x, x.copy(), 1e-5, 1e-6)
    # A different dtype on one side takes the full path; the figures must agree.
    slow = compare(x, x.astype(np.float64) if dtype != "float64" else x.astype(np.float32),
                   1e-5, 1e-6)
    assert fast.bit_exact
    for field in ("mismatch_count", "max_abs_error", "max_rel_error", "scaled_error",
                  "floored_rel_error", "nan_actual", "inf_actual", "inf_reference", "min_atol",
                  "min_rtol", "element_count"):
        assert getattr(fast, field) == getattr(slow, field), field
