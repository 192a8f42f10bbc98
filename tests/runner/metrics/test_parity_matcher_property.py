"""The keypoint matcher of `gero parity`, property-tested: on points farther apart than twice
the radius (where greedy nearest-first is the one maximal matching), it pairs exactly the
moved copies within the radius, one to one, whatever the order of the points and whether
SciPy's k-d tree or the NumPy fallback searches."""

from __future__ import annotations

import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gero_runner.metrics.parity import keypoint_metrics, match_points

RADIUS = 2.0
SPACING = 10.0  # > 2 * RADIUS + the largest move

cell = st.tuples(st.integers(-20, 20), st.integers(-20, 20))
move = st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0))  # |move| < sqrt(2) < RADIUS


@st.composite
def scenes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, list[int]]:
    cells = draw(st.lists(cell, unique=True, max_size=12))
    reference = np.array(cells, dtype=np.float64).reshape(-1, 2) * SPACING
    near = 0
    actual = []
    for p in reference:
        kind = draw(st.sampled_from(["near", "far", "gone"]))
        if kind == "near":
            actual.append(p + np.array(draw(move)))
            near += 1
        elif kind == "far":  # moved by 4.5: outside the radius, still far from the others
            actual.append(p + np.array([4.5, 0.0]))
    points = np.array(actual, dtype=np.float64).reshape(-1, 2)
    order = draw(st.permutations(range(len(points))))
    return reference, points[list(order)], near, list(order)


@settings(max_examples=150, deadline=None)
@given(scenes())
@pytest.mark.slow
def test_the_matcher_pairs_exactly_the_copies_within_the_radius(
        scene: tuple[np.ndarray, np.ndarray, int, list[int]]) -> None:
    reference, actual, near, _ = scene
    pairs, search = match_points(reference, actual, RADIUS)
    assert search in ("scipy.cKDTree", "numpy")  # SciPy comes with the torch extra
    assert len(pairs) == near
    assert len(set(pairs[:, 0])) == len(set(pairs[:, 1])) == near  # one to one
    for i, j in pairs:
        assert np.linalg.norm(reference[i] - actual[j]) <= RADIUS
    with mock.patch.dict(sys.modules, {"scipy.spatial": None}):  # the NumPy fallback
        fallback, fallback_search = match_points(reference, actual, RADIUS)
    assert fallback_search == "numpy"
    assert sorted(map(tuple, fallback.tolist())) == sorted(map(tuple, pairs.tolist()))
    # Swapping the sides swaps the pairs.
    swapped, _ = match_points(actual, reference, RADIUS)
    assert sorted(map(tuple, swapped[:, ::-1].tolist())) == sorted(map(tuple, pairs.tolist()))
    metrics = keypoint_metrics(reference, actual, RADIUS)
    big = max(len(reference), len(actual))
    assert metrics.match_ratio == (1.0 if big == 0 else near / big)
