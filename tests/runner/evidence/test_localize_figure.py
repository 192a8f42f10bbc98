"""Localize's tensor figure (scaled error, non-finite mismatches), property-tested: its
fast path (same float dtype, computed in that dtype) agrees with a plain float64 reading of
the definition on any values, NaN, ±inf, zeros and the dtype's extremes included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gero_runner.evidence.localize import figure


def in_float64(a: np.ndarray, r: np.ndarray) -> tuple[float, int]:
    x, y = a.astype(np.float64), r.astype(np.float64)
    both = np.isfinite(x) & np.isfinite(y)
    same = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
    bad = int(np.sum(~both & ~same))
    if bad:
        return math.inf, bad
    diff = float(np.max(np.abs(x - y), where=both, initial=0.0))
    scale = float(np.max(np.abs(y), where=np.isfinite(y), initial=0.0))
    if scale == 0:
        return (0.0 if diff == 0 else math.inf), 0
    return diff / scale, 0


@st.composite
def pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(max_dims=2, max_side=6))
    values = hnp.from_dtype(np.dtype(dtype), allow_nan=True, allow_infinity=True)
    a = draw(hnp.arrays(dtype, shape, elements=values))
    near = draw(st.booleans())  # a nearby reference, or one drawn on its own
    with np.errstate(all="ignore"):
        r = (a * dtype(1 + 1e-6)) if near else draw(hnp.arrays(dtype, shape,
                                                               elements=values))
    return a, r


@settings(max_examples=400, deadline=None)
@given(pairs())
@pytest.mark.slow
def test_the_fast_figure_is_the_float64_figure(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, r = pair
    with np.errstate(all="ignore"):
        got, want = figure(a, r), in_float64(a, r)
    assert got[1] == want[1]
    if math.isfinite(want[0]) and want[0] > 0:
        assert math.isclose(got[0], want[0], rel_tol=1e-6), (got, want)
    else:
        assert got[0] == want[0], (got, want)


def test_a_scalar_tensor_is_compared() -> None:
    """A 0-d tensor (a DynamicQuantizeLinear's scale in ddddocr's shadow): numpy's
    difference of two 0-d arrays is a scalar, which cannot take ``out=``."""
    a, r = np.asarray(np.float64(0.5)), np.asarray(np.float64(0.25))
    assert figure(a, r) == (1.0, 0)
    assert figure(np.asarray(np.float32(2.0)), np.asarray(np.float32(2.0))) == (0.0, 0)
