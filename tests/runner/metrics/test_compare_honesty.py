"""Right figures, right blame: the comparison's non-finite rules, exact integers, ULPs in the
output's own units and the arbiter at the mismatching elements (issue 13, items 1-5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gero_runner.classify import arbiter, classify
from gero_runner.metrics.compare import compare, ulp_distance
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, PASSED

FLOATS = ("float16", "float32", "float64")
TOL = {"float16": (5e-3, 5e-4), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}


# ---------------------------------------------------------------- 1. arbiter at mismatches

def test_arbiter_is_decided_at_the_mismatching_element() -> None:
    """ORT is far from float64 elsewhere (within tolerance of the reference there), but at
    the one element outside tolerance it is exact and the reference is not."""
    truth = np.array([10.0, 1.0])
    ort = np.array([10.0390625, 1.0], dtype=np.float16)
    ref = np.array([10.0, 1.0107421875], dtype=np.float16)
    rtol, atol = TOL["float16"]
    assert classify(compare(ort, ref, rtol, atol), rtol, atol)[0] == DIVERGENCE
    assert arbiter(ort, ref, truth, rtol, atol) == "actual"
    assert arbiter(ref, ort, truth, rtol, atol) == "reference"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_side_is_the_farther_one(bad: float) -> None:
    truth = np.array([4.0, 1.0])
    a = np.array([bad, 1.0], dtype=np.float32)
    r = np.array([50.0, 1.0], dtype=np.float32)
    assert arbiter(a, r, truth, 1e-5, 1e-6) == "reference"
    assert arbiter(r, a, truth, 1e-5, 1e-6) == "actual"


def test_tie_only_when_equally_close() -> None:
    truth = np.array([1.0])
    assert arbiter(np.array([1.5]), np.array([0.5]), truth, 0.0, 0.0) == "tie"
    assert arbiter(np.array([1.5]), np.array([0.4]), truth, 0.0, 0.0) == "actual"


finite64 = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(truth=st.lists(finite64, min_size=2, max_size=8), k=st.integers(0, 7),
       e1=st.floats(-1.0, 1.0), e2=st.floats(-1.0, 1.0), far=st.floats(2.0, 10.0))
@example(truth=[16.0, 0.0], k=0, e1=0.0, e2=0.001, far=2.0)  # 16.001 - 16 > 1e-3
def test_property_arbiter_at_the_mismatches(truth: list[float], k: int, e1: float, e2: float,
                                           far: float) -> None:
    """Elsewhere both sides are equal and far from the truth; the mismatch decides."""
    t = np.array(truth)
    k %= t.size
    a = t + far
    r = a.copy()
    a[k], r[k] = t[k] + e1, t[k] + e2
    rtol, atol = 0.0, 1e-3
    # The sides' own differences, as stored: t + e rounds (16 + 0.001 is 0.0010000000000012
    # from 16), so e1 and e2 themselves can put a pair on the wrong side of atol.
    d1, d2 = abs(a[k] - t[k]), abs(r[k] - t[k])
    if abs(a[k] - r[k]) <= atol:
        assert arbiter(a, r, t, rtol, atol) == "-"
        return
    expected = "actual" if d1 < d2 else "reference" if d2 < d1 else "tie"
    assert arbiter(a, r, t, rtol, atol) == expected


# ---------------------------------------------------------------- 2. non-finite, symmetric

def test_the_side_that_is_non_finite_is_named() -> None:
    a = np.array([65504, 1], dtype=np.float16)
    r = np.array([np.inf, 1], dtype=np.float16)
    result, reason = classify(compare(a, r, 5e-3, 5e-4), 5e-3, 5e-4)
    assert result == CONTRACT_ISSUE
    assert "reference is +inf at 1 of 2 elements where actual is 65504" in reason
    assert "needs atol ≥ 0" not in reason
    result, reason = classify(compare(r, a, 5e-3, 5e-4), 5e-3, 5e-4)
    assert result == CONTRACT_ISSUE
    assert "actual is +inf at 1 of 2 elements where reference is 65504" in reason


@pytest.mark.parametrize(("a", "r", "clause"), [
    ([np.inf], [-np.inf], "actual is +inf at 1 of 1 elements where reference is -inf"),
    ([-np.inf], [np.inf], "reference is +inf at 1 of 1 elements where actual is -inf"),
    ([np.nan], [np.inf], "actual is NaN at 1 of 1 elements where reference is +inf"),
    ([np.inf], [np.nan], "reference is NaN at 1 of 1 elements where actual is +inf"),
])
def test_two_different_non_finite_values(a: list[float], r: list[float], clause: str) -> None:
    result, reason = classify(compare(np.array(a), np.array(r), 0.0, 0.0), 0.0, 0.0)
    assert result == CONTRACT_ISSUE and clause in reason


edge = st.sampled_from([0.0, 1.0, -2.5, np.nan, np.inf, -np.inf])


@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(edge, edge), min_size=1, max_size=12),
       dtype=st.sampled_from(FLOATS))
@pytest.mark.slow
def test_property_non_finite_rules_are_symmetric(pairs: list[tuple[float, float]],
                                                dtype: str) -> None:
    """Swapping the sides gives the same class and the mirrored description."""
    a = np.array([p[0] for p in pairs], dtype=dtype)
    r = np.array([p[1] for p in pairs], dtype=dtype)
    # Equal finite values on both sides wherever both are finite: tolerance is not symmetric.
    both = np.isfinite(a) & np.isfinite(r)
    r = np.where(both, a, r).astype(dtype)
    ar, ra = compare(a, r, 1e-5, 1e-6), compare(r, a, 1e-5, 1e-6)
    assert classify(ar, 1e-5, 1e-6)[0] == classify(ra, 1e-5, 1e-6)[0]
    assert (ar.nonfinite_mismatch, ar.nan_both) == (ra.nonfinite_mismatch, ra.nan_both)
    n = a.size
    assert sorted(g.describe(n) for g in ar.nonfinite) == sorted(
        g.describe(n, actual="reference", reference="actual") for g in ra.nonfinite)
    # Every non-finite mismatch is described exactly once.
    assert sum(g.count for g in ar.nonfinite) == ar.nonfinite_mismatch
    if ar.nonfinite_mismatch or ar.nan_both:
        assert classify(ar, 1e-5, 1e-6)[0] == CONTRACT_ISSUE


# ---------------------------------------------------------------- 3. NaN does not hide the rest

def test_nan_on_both_sides_does_not_hide_a_finite_mismatch() -> None:
    cmp = compare(np.array([np.nan, 100], np.float32), np.array([np.nan, 1], np.float32),
                  1e-5, 1e-6)
    result, reason = classify(cmp, 1e-5, 1e-6)
    assert result == CONTRACT_ISSUE
    assert "NaN on both sides at 1 of 2 elements" in reason
    assert "1 of 2 elements outside" in reason and "max |a−r| = 99" in reason
    assert cmp.max_abs_error == 99 and cmp.finite_mismatch == 1 and cmp.mismatch_count == 2


# ---------------------------------------------------------------- 4. integers, booleans, dtypes

@pytest.mark.parametrize(("a", "r"), [
    (np.array([2**60], np.int64), np.array([2**60 + 1], np.int64)),
    (np.array([np.iinfo(np.uint64).max], np.uint64),
     np.array([np.iinfo(np.uint64).max - 1], np.uint64)),
    (np.array([np.iinfo(np.int64).min], np.int64), np.array([np.iinfo(np.int64).max], np.int64)),
    (np.array([True, False]), np.array([True, True])),
])
def test_integers_and_booleans_compare_exactly(a: np.ndarray, r: np.ndarray) -> None:
    cmp = compare(a, r, 1e-5, 1e-6)  # a float tolerance does not loosen an exact type
    assert cmp.mismatch_count == 1
    assert classify(cmp, 1e-5, 1e-6)[0] == DIVERGENCE
    assert cmp.max_abs_error >= 1


@pytest.mark.parametrize(("a", "r"), [
    (np.array([1, 2], np.int64), np.array([1, 2], np.float32)),
    (np.array([1, 2], np.float32), np.array([1, 2], np.float64)),
])
def test_a_dtype_difference_is_a_divergence_naming_both(a: np.ndarray, r: np.ndarray) -> None:
    result, reason = classify(compare(a, r, 1e-5, 1e-6), 1e-5, 1e-6)
    assert result == DIVERGENCE
    assert str(a.dtype) in reason and str(r.dtype) in reason


int_dtypes = st.sampled_from(["int8", "uint8", "int32", "uint32", "int64", "uint64"])


@settings(max_examples=80, deadline=None)
@given(dtype=int_dtypes, data=st.data())
def test_property_integers_exact(dtype: str, data: st.DataObject) -> None:
    info = np.iinfo(dtype)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1,
                                max_size=8))
    a = np.array(values, dtype=dtype)
    assert classify(compare(a, a.copy(), 0.0, 0.0), 0.0, 0.0)[0] == PASSED
    k = data.draw(st.integers(0, a.size - 1))
    r = a.copy()
    r[k] = a[k] - 1 if a[k] > info.min else a[k] + 1
    cmp = compare(a, r, 0.5, 0.5)
    assert cmp.mismatch_count == 1 and cmp.max_abs_error == 1.0


# ---------------------------------------------------------------- 5. ULP in the output's units

@settings(max_examples=100, deadline=None)
@given(dtype=st.sampled_from(FLOATS), x=st.floats(-6e4, 6e4, allow_nan=False),
       steps=st.integers(0, 40))
def test_property_ulp_in_the_output_dtype(dtype: str, x: float, steps: int) -> None:
    """k steps apart are k ULPs, whether the reference is given in the output's dtype or as
    its exact float64 value."""
    r = np.array([x], dtype=dtype)
    a = r.copy()
    for _ in range(steps):
        a = np.nextafter(a, np.array([np.inf], dtype=dtype))
    if not np.isfinite(a).all():
        return
    assert ulp_distance(a, r)[0] == steps
    rtol, atol = TOL[dtype]
    assert compare(a, r.astype(np.float64), rtol, atol, unit=dtype).max_ulp == steps
    assert compare(a, r, rtol, atol).max_ulp == steps


def test_a_wide_reference_beyond_the_dtype_does_not_overflow() -> None:
    """float16 max against a float64 65536 (inf if cast): 1 float16 ULP (32) away, not 0."""
    a = np.array([65504.0], dtype=np.float16)
    cmp = compare(a, np.array([65536.0]), 5e-3, 5e-4, unit="float16")
    assert cmp.max_ulp == pytest.approx(1.0)
    assert ulp_distance(a, np.array([65504.0 + 16]), "float16")[0] == pytest.approx(0.5)


def test_a_float16_output_reports_float16_ulps_against_float64_figures() -> None:
    y = np.array([1.0 + 2.0 ** -10], dtype=np.float16)
    cmp = compare(y.astype(np.float64), np.array([1.0]), 0.0, 0.0, unit="float16")
    assert cmp.max_ulp == pytest.approx(1.0)


def test_a_changed_arbiter_is_a_new_observation() -> None:
    """Stored rows are deduplicated by identity: the blame must be part of it, or a data
    root keeps showing the side an older gero chose."""
    from gero_runner.schema import IDENTITY_COLUMNS
    from gero_runner.storage.hashing import row_hash

    row = {c: "x" for c in IDENTITY_COLUMNS}
    assert row_hash({**row, "arbiter": "tie"}, IDENTITY_COLUMNS) != row_hash(
        {**row, "arbiter": "actual"}, IDENTITY_COLUMNS)


def test_an_output_held_at_float32s_largest_value_is_named_as_saturated() -> None:
    """OpenVINO's CPU plugin computes a float64 model in float32 and clamps: the float64 edge
    value max/4 (4.49e307) comes back as 3.40e38, not inf. The error 4.49e307 is true; the
    reason says where it comes from."""
    big = float(np.finfo(np.float64).max) / 4
    reference = np.array([big, -big, 1.0, 2.0])
    f32_max = float(np.finfo(np.float32).max)
    actual = np.array([f32_max, -f32_max, 1.0, 2.0])
    rtol, atol = TOL["float64"]
    cmp = compare(actual, reference, rtol, atol)
    assert cmp.max_abs_error == pytest.approx(big)
    assert cmp.saturation is not None
    assert (cmp.saturation.dtype, cmp.saturation.count) == ("float32", 2)
    result, reason = classify(cmp, rtol, atol)
    assert result == DIVERGENCE
    assert ("2 of 4 elements held at ±3.4e+38, float32's largest value (computed in float32, "
            "clamped where it overflowed; |reference| there up to 4.49e+307)") in reason
    # An overflow inside the path (log of a float64 subnormal is -inf in float32) clamps too.
    log = compare(np.array([-f32_max, 0.0]), np.array([-713.0, 0.0]), rtol, atol)
    assert log.saturation is not None and log.saturation.count == 1
    # An output at its own type's largest value is not saturation of a narrower type.
    own = compare(np.array([65504.0], np.float16), np.array([65536.0]), 5e-3, 5e-4,
                  unit="float16")
    assert own.saturation is None
    # Nor is a float64 output that merely differs.
    assert compare(np.array([1.5]), np.array([1.0]), rtol, atol).saturation is None
