"""Model-level metrics (docs/explanation/tolerances.md) against hand-computed values, and
their gates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gero_runner.metrics import model_level as ml


@pytest.mark.parametrize(("a", "r", "scaled", "floored"), [
    ([1.0, 2.0, 4.0], [1.0, 2.0, 4.0], 0.0, 0.0),
    ([1.1, 2.0, 4.0], [1.0, 2.0, 4.0], 0.1 / 4, 0.1 / 1.0),
    # a tiny reference element: floored at 1e-3 · max|r| = 4e-3
    ([0.0, 2.0, 4.0], [1e-6, 2.0, 4.0], 1e-6 / 4, 1e-6 / 4e-3),
    ([0.0, 0.0], [0.0, 0.0], 0.0, 0.0),
    ([1.0, 0.0], [0.0, 0.0], math.inf, math.inf),
])
def test_scaled_and_floored(a: list[float], r: list[float], scaled: float,
                            floored: float) -> None:
    assert ml.scaled_error(a, r) == pytest.approx(scaled, rel=1e-12)
    assert ml.floored_relative_error(a, r) == pytest.approx(floored, rel=1e-9)


def test_row_cosine_minimum_under_100_rows() -> None:
    r = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])  # row 1: cos 45° = 1/√2
    cos, rows = ml.row_cosine(a, r)
    assert rows == 3 and cos == pytest.approx(1 / math.sqrt(2))


def test_row_cosine_first_percentile_ignores_one_extreme_row() -> None:
    r = np.ones((1000, 4))
    a = r.copy()
    a[0] = [1.0, -1.0, 1.0, -1.0]  # one orthogonal row among 1000
    cos, rows = ml.row_cosine(a, r)
    assert rows == 1000 and cos == pytest.approx(1.0)
    a[:20] = [1.0, -1.0, 1.0, -1.0]  # 2 % of the rows: the 1st percentile sees them
    assert ml.row_cosine(a, r)[0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(("a", "r", "expected"), [
    ([[0.0, 0.0]], [[0.0, 0.0]], 1.0),  # two zero rows are identical
    ([[0.0, 0.0]], [[1.0, 0.0]], 0.0),  # one zero row is not
    ([[-1.0, 0.0]], [[1.0, 0.0]], -1.0),
])
def test_row_cosine_edges(a: list[list[float]], r: list[list[float]], expected: float) -> None:
    assert ml.row_cosine(a, r)[0] == pytest.approx(expected)


def test_pooled_cosine_rank_3_only() -> None:
    r = np.zeros((1, 2, 2))
    r[0] = [[1.0, 0.0], [1.0, 0.0]]
    a = np.zeros((1, 2, 2))
    a[0] = [[1.0, 0.0], [0.0, 1.0]]  # mean pooled: [0.5, 0.5] vs [1, 0]
    assert ml.pooled_cosine(a, r) == pytest.approx(1 / math.sqrt(2))
    assert math.isnan(ml.pooled_cosine(a[0], r[0]))


def test_decisions_count_argmax_agreement() -> None:
    r = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    a = np.array([[0.2, 0.8], [0.4, 0.6], [0.3, 0.7]])
    assert ml.decisions(a, r) == (2, 3)


def test_noise_floor_takes_the_worst_of_each_statistic() -> None:
    s1 = ml.OutputStats(1e-6, 1e-5, 0.9999, 10, math.nan, 9, 10, True)
    s2 = ml.OutputStats(3e-6, 2e-5, 0.9990, 10, math.nan, 10, 10, True)
    floor = ml.noise_floor([s1, s2])
    assert (floor.row_cosine, floor.decisions_agree, floor.scaled_error) == (0.9990, 9, 3e-6)


@pytest.mark.parametrize(("cos", "floor_cos", "passed"), [
    (0.995, 0.999, True),   # min(0.99, floor) = 0.99
    (0.985, 0.999, False),
    (0.95, 0.90, True),     # a noisy floor lowers the bar
    (0.85, 0.90, False),
])
def test_int8_cosine_gate(cos: float, floor_cos: float, passed: bool) -> None:
    stats = ml.OutputStats(0.1, 0.1, cos, 10, math.nan, 0, 0, True)
    floor = ml.Floor(floor_cos, math.nan, 0, 0, 0.0, 0.0, 17)
    assert ml.int8_cosine_gate(stats, floor).passed is passed


def _cos(row: float, pooled: float = math.nan, finite: bool = True) -> ml.OutputStats:
    return ml.OutputStats(0.1, 0.1, row, 100, pooled, 0, 0, finite)


@pytest.mark.parametrize(("path", "base", "floor", "passed"), [
    (0.978, 0.99, None, True),      # within 1.5× the baseline's angle (needs 0.97755)
    (0.977, 0.99, None, False),
    (1.0, 1.0, None, True),         # the baseline is exact: so must the path be
    (0.9999, 1.0, None, False),
    (0.96, 1.0, 0.98, True),        # ...unless the baseline's own floor shows the spread
    (0.55, 0.6181, None, True),     # an output the flips scramble for the baseline too
    (0.31, 0.6181, None, False),    # but not twice as much: 0.99's angle beyond it at most
])
def test_int8_exact_gate(path: float, base: float, floor: float | None, passed: bool) -> None:
    measured = None if floor is None else ml.Floor(floor, math.nan, 0, 0, 0.0, 0.0, 17)
    gate = ml.int8_exact_gate(_cos(path), _cos(base), measured)
    assert gate.passed is passed, gate.reason
    assert gate.figures["baseline_row_cosine_vs_exact"] == base


def test_int8_exact_gate_an_unmeasured_floor_widens_nothing_and_pooled_counts() -> None:
    unmeasured = ml.unmeasured_floor(_cos(1.0))
    assert not ml.int8_exact_gate(_cos(0.96), _cos(1.0), unmeasured).passed
    # Row cosines within reach, the mean-pooled vectors not (needs 0.99775).
    gate = ml.int8_exact_gate(_cos(0.99, 0.99), _cos(0.99, 0.999))
    assert not gate.passed and "mean-pooled" in gate.reason
    assert not ml.int8_exact_gate(_cos(math.nan, finite=False), _cos(0.99)).passed


@pytest.mark.parametrize(("agree", "base_agree", "total", "passed"), [
    (14, 14, 16, True), (13, 14, 16, False), (19, 20, 20, True), (15, 16, 16, False),
])
def test_int8_exact_decision_gate(agree: int, base_agree: int, total: int,
                                  passed: bool) -> None:
    path = ml.OutputStats(0.0, 0.0, 1.0, total, math.nan, agree, total, True)
    base = ml.OutputStats(0.0, 0.0, 1.0, total, math.nan, base_agree, total, True)
    assert ml.int8_exact_decision_gate(path, base).passed is passed


@pytest.mark.parametrize(("agree", "total", "floor_agree", "passed"), [
    (19, 20, 20, True),   # 95 %
    (18, 20, 20, False),
    (14, 16, 14, True),   # as many as ONNX Runtime's own floor
    (1, 1, 0, True), (0, 1, 0, False),  # a single decision must agree
])
def test_decision_gate(agree: int, total: int, floor_agree: int, passed: bool) -> None:
    stats = ml.OutputStats(0.0, 0.0, 1.0, total, math.nan, agree, total, True)
    floor = ml.Floor(1.0, math.nan, floor_agree, total, 0.0, 0.0, 17)
    assert ml.decision_gate(stats, floor).passed is passed


@pytest.mark.parametrize(("scaled", "honest", "passed"), [
    (4e-3, math.nan, True), (4.1e-3, math.nan, False),  # the fp16 gate
    (1.4e-2, 1e-2, True), (1.6e-2, 1e-2, False),  # 1.5× a correct fp16 engine's own error
    (3e-3, 1e-4, True),  # never below 4e-3
])
def test_fp16_vs_fp32_gate(scaled: float, honest: float, passed: bool) -> None:
    assert ml.fp16_vs_fp32_gate(scaled, honest).passed is passed


def test_fp16_reference_gate() -> None:
    assert ml.fp16_reference_gate(4e-3, False).passed
    gate = ml.fp16_reference_gate(5e-3, True)
    assert not gate.passed and "computes it in float32" in gate.reason


def test_non_finite_output_is_not_assessed() -> None:
    stats = ml.output_stats([np.nan, 1.0], [1.0, 1.0])
    assert not stats.finite and not ml.fp32_gate(stats, None, False).passed


@pytest.mark.parametrize(("scaled", "honest", "floor", "passed", "limit"), [
    (0.0154, math.nan, 0.0295, True, 0.0295),   # an int8 model that 1e-7 noise moves by 3e-2
    (0.0154, math.nan, 1e-6, False, 4e-3),      # an ordinary fp32 floor changes nothing
    (0.0154, math.nan, math.nan, False, 4e-3),  # no floor measured
    (5e-3, 4e-3, math.nan, True, 6e-3),         # 1.5x the correct fp16 computation's error
    (5e-3, 4e-3, 5.5e-3, True, 6e-3),           # the larger of the two
    (math.inf, math.nan, 0.0295, False, 0.0295),
])
def test_the_fp16_gate_takes_the_models_own_noise_floor(scaled: float, honest: float,
                                                        floor: float, passed: bool,
                                                        limit: float) -> None:
    gate = ml.fp16_vs_fp32_gate(scaled, honest, floor)
    assert gate.passed is passed and gate.figures["limit"] == pytest.approx(limit)
    assert ("own noise floor" in gate.reason) is (limit == floor)


@pytest.mark.parametrize(("scaled", "spread", "passed", "limit"), [
    (9.67e-3, 9e-3, True, 1.35e-2),     # PicoDet: ORT's fp16 BatchNormalization fold
    (9.67e-3, 1e-3, False, 4e-3),       # yardsticks close together: the 4e-3 gate
    (9.67e-3, math.nan, False, 4e-3),   # no exact yardstick
    (3e-3, math.inf, True, 4e-3),       # an overflowing yardstick widens nothing
    (5.3e-2, 9e-3, False, 1.35e-2),     # OpenVINO's bf16 on the same file
    (0.5, 1.0, False, 4e-3),            # magika: float16 rounding breaks the file itself
    (6e-2, 5e-2, True, 7.5e-2),         # at the cap
])
def test_the_fp16_reference_gate_allows_the_yardsticks_own_spread(
        scaled: float, spread: float, passed: bool, limit: float) -> None:
    gate = ml.fp16_reference_gate(scaled, False, spread)
    assert gate.passed is passed and gate.figures["limit"] == pytest.approx(limit)
    assert ("two correct computations" in gate.reason) is (limit != 4e-3)


def test_an_unmeasured_floor_says_why_for_a_finite_and_a_non_finite_variant() -> None:
    r = np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]])
    finite = ml.output_stats(r * 1.0001, r, decision=False)
    gate = ml.variant_gate(finite, ml.unmeasured_floor(finite), False)
    assert gate.passed and "passes without one" in gate.reason
    nan = ml.output_stats(np.full_like(r, np.nan), r, decision=False)
    gate = ml.variant_gate(nan, ml.unmeasured_floor(nan), False)
    assert not gate.passed and "no floor makes a non-finite output assessable" in gate.reason
