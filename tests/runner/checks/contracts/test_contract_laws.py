"""The laws on hand-made arrays: each one holds on honest data and breaks, with a reason
that names the law and the figure, on data that violates it."""

from __future__ import annotations

import numpy as np
import pytest

from gero_runner.checks.contracts import laws
from gero_runner.checks.contracts.model_facts import batch_layout, permutation, split_points
from gero_runner.schema import CONTRACT_ISSUE, PASSED


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    y: np.ndarray = e / e.sum(axis=axis, keepdims=True)
    return y


# ---------------------------------------------------------------- two-sided laws

def test_compare_law_bit_exact_and_within_tolerance() -> None:
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    res = laws.compare_law("partition", x.copy(), x, 1e-5, 1e-6)
    assert res.result == PASSED and res.details["bit_exact"] and "bit-exact" in res.reason
    nudged = np.nextafter(x, np.float32(np.inf))
    res = laws.compare_law("partition", nudged, x, 1e-5, 1e-6)
    assert res.result == PASSED and not res.details["bit_exact"]
    assert "not bit-exact" in res.reason


def test_compare_law_names_the_law_and_the_figure() -> None:
    full = np.zeros((4, 3), dtype=np.float32)
    concat = full.copy()
    concat[2, 1] = 3.1e-5
    res = laws.compare_law("partition", concat, full, 1e-5, 1e-6,
                           actual_label="concat(parts)", reference_label="full")
    assert res.result == CONTRACT_ISSUE
    assert res.reason.startswith("partition: |full − concat(parts)| = 3.1e-05 > tol 1e-06")
    assert "at 1 of 12 elements" in res.reason


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_compare_law_non_finite(value: float) -> None:
    full = np.array([1.0, value, 2.0], dtype=np.float32)
    # The same infinity at the same place on both sides is the same function.
    assert laws.compare_law("permutation", full.copy(), full, 1e-5, 1e-6).holds
    other = full.copy()
    other[1] = 0.0
    res = laws.compare_law("permutation", other, full, 1e-5, 1e-6)
    assert res.result == CONTRACT_ISSUE
    assert f"reference is {value:+} at 1 of 3 elements where actual is 0" in res.reason


@pytest.mark.parametrize("law", ["partition", "permutation", "duplication", "threads"])
def test_matching_nan_fails_a_law_and_is_counted(law: str) -> None:
    """Matching NaN outputs fail, contracts included (docs/explanation/observations.md)."""
    full = np.array([1.0, np.nan, 2.0, np.nan], dtype=np.float32)
    res = laws.compare_law(law, full.copy(), full, 1e-5, 1e-6)
    assert res.result == CONTRACT_ISSUE
    assert "NaN on both sides at 2 of 4 elements" in res.reason
    assert res.cmp is not None
    assert res.cmp.nan_actual == res.cmp.nan_reference == res.cmp.nan_both == 2
    assert res.details["nan_both"] == 2


def test_matching_nan_fails_a_bounded_law() -> None:
    full = np.array([1.0, np.nan], dtype=np.float16)
    res = laws.bounded_law("partial_reduction", full.astype(np.float64), full,
                           np.zeros(2), 0.0, 0.0, actual_label="combine(parts)",
                           reference_label="full", figures={})
    assert res.result == CONTRACT_ISSUE and "NaN on both sides at 1 of 2" in res.reason


def test_law_ulps_count_in_the_output_dtype() -> None:
    """A float16 probability row sum 2**-11 off is 1 float16 ULP, not 2.2e12 float64 ones."""
    y = np.array([[0.5, 0.5 + 2.0 ** -10]], dtype=np.float16)
    res = laws.probability_law(y, 1, 0.0)
    assert res.cmp is not None and res.cmp.max_ulp == pytest.approx(1.0)


def test_compare_law_shape_mismatch() -> None:
    res = laws.compare_law("rank_change", np.zeros((2, 1, 3)), np.zeros((2, 3)), 0, 0)
    assert res.result == CONTRACT_ISSUE and "shape [2, 1, 3]" in res.reason


# ---------------------------------------------------------------- reductions over the batch

@pytest.mark.parametrize("op, combine", [
    ("ReduceSum", lambda x: x.sum(0)), ("ReduceMean", lambda x: x.mean(0)),
    ("ReduceMax", lambda x: x.max(0)), ("ReduceMin", lambda x: x.min(0)),
    ("ReduceProd", lambda x: x.prod(0)), ("ReduceL1", lambda x: np.abs(x).sum(0)),
    ("ReduceL2", lambda x: np.sqrt((x * x).sum(0))),
    ("ReduceSumSquare", lambda x: (x * x).sum(0)),
    ("ReduceLogSumExp", lambda x: np.log(np.exp(x).sum(0))),
])
def test_combine_partials_matches_the_whole(op: str, combine) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(0).uniform(0.5, 2.0, (6, 5))
    parts = [x[:1], x[1:3], x[3:]]
    partial = [combine(p) for p in parts]
    got = laws.combine_partials(op, partial, [len(p) for p in parts])
    np.testing.assert_allclose(got, combine(x), rtol=1e-12)


def test_combine_partials_unknown_op() -> None:
    with pytest.raises(ValueError, match="no partial-reduction rule for ReduceFoo"):
        laws.combine_partials("ReduceFoo", [np.zeros(2)], [1])


@pytest.mark.parametrize("n", [4, 64, 4096])
def test_sum_bound_grows_with_length_and_holds_for_float32(n: int) -> None:
    x = np.random.default_rng(n).uniform(-1, 1, (n, 3)).astype(np.float32)
    full = x.sum(axis=0, dtype=np.float32)
    halves = [x[: n // 2].sum(0, dtype=np.float32), x[n // 2:].sum(0, dtype=np.float32)]
    combined = laws.combine_partials("ReduceSum", halves, [n // 2, n - n // 2])
    bound, factor, length = laws.reduction_bound("ReduceSum", x, (0,), False, "float32",
                                                 1e-6, 1e-5, full)
    assert length == n and factor == pytest.approx(2 * n * 2.0 ** -24)
    res = laws.bounded_law("partial_reduction", combined, full, bound, factor, 1e-6,
                           actual_label="combine(parts)", reference_label="full", figures={})
    assert res.result == PASSED


def test_sum_of_partials_beyond_bound_is_a_contract_issue() -> None:
    x = np.ones((8, 2), dtype=np.float32)
    full = x.sum(0)
    bound, factor, _ = laws.reduction_bound("ReduceSum", x, (0,), False, "float32", 1e-6,
                                            1e-5, full)
    res = laws.bounded_law("partial_reduction", full + 0.01, full, bound, factor, 1e-6,
                           actual_label="combine(parts)", reference_label="full", figures={})
    assert res.result == CONTRACT_ISSUE
    assert res.reason.startswith("partial_reduction: |full − combine(parts)| = 0.01 > tol")


def test_max_over_batch_must_be_exactly_permutation_invariant() -> None:
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    full = x.max(0)
    bound, factor, _ = laws.reduction_bound("ReduceMax", x, (0,), False, "float32", 1e-6,
                                            1e-5, full)
    assert factor == 0 and not bound.any()
    assert laws.bounded_law("permutation_invariance", x[::-1].max(0), full, bound, 0, 0,
                            actual_label="f(x[p])", reference_label="f(x)", figures={}).holds
    off = np.nextafter(full, np.float32(np.inf))
    res = laws.bounded_law("permutation_invariance", off, full, bound, 0, 0,
                           actual_label="f(x[p])", reference_label="f(x)", figures={})
    assert res.result == CONTRACT_ISSUE and "> exact 0" in res.reason


# ---------------------------------------------------------------- probability

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_softmax_rows_are_probabilities(dtype: str) -> None:
    x = np.random.default_rng(2).uniform(-8, 8, (4, 16))
    y = _softmax(x).astype(dtype)
    res = laws.probability_law(y, 1, {"float16": 5e-3, "float32": 1e-5, "float64": 1e-12}[dtype])
    assert res.result == PASSED, res.reason
    assert res.atol == pytest.approx(16 * laws.unit_roundoff(dtype))


@pytest.mark.parametrize("broken, words", [
    ("nan", "non-finite value(s) (NaN 16"),
    ("negative", "outside [0, 1]"),
    ("above", "outside [0, 1]"),
    ("sum", "row sum deviates from 1 by max 0.01"),
])
def test_probability_violations(broken: str, words: str) -> None:
    y = _softmax(np.random.default_rng(3).normal(size=(4, 16))).astype(np.float32)
    if broken == "nan":
        y[1] = np.nan
    elif broken == "negative":
        y[0, 0] = -1e-3
    elif broken == "above":
        y[0, 0] = 1.5
    else:
        y[2] *= 1.01
    res = laws.probability_law(y, 1, 1e-5)
    assert res.result == CONTRACT_ISSUE and res.reason.startswith("probability: ")
    assert words in res.reason


def test_sigmoid_probability_is_element_wise() -> None:
    y = 1 / (1 + np.exp(-np.array([-50.0, 0.0, 50.0, np.inf, -np.inf])))
    assert laws.probability_law(y.astype(np.float32), None, 1e-5).holds
    y[1] = np.nan
    assert not laws.probability_law(y.astype(np.float32), None, 1e-5).holds


# ---------------------------------------------------------------- masked rows

def _masked_case() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(4).uniform(-3, 3, (3, 6))
    keep = np.array([[1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0]], dtype=bool)
    return x, keep


def _law_softmax(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    e = np.where(keep, np.exp(np.where(keep, x, 0) - 3), 0.0)
    s = e.sum(-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1), 0.0)


def test_fully_masked_row_exactly_zero_holds() -> None:
    x, keep = _masked_case()
    res = laws.masked_rows_law(_law_softmax(x, keep).astype(np.float32), keep, 1, 1e-5)
    assert res.result == PASSED and "1 fully masked row(s) exactly zero" in res.reason


def test_nan_on_a_fully_masked_row_is_a_contract_issue() -> None:
    x, keep = _masked_case()
    with np.errstate(invalid="ignore"):
        y = _softmax(np.where(keep, x, -np.inf)).astype(np.float32)  # plain Softmax: NaN
    res = laws.masked_rows_law(y, keep, 1, 1e-5)
    assert res.result == CONTRACT_ISSUE
    assert "1 of 1 fully masked row(s) not exactly zero (NaN in 6 element(s))" in res.reason


def test_additive_mask_uniform_row_and_leaks_are_contract_issues() -> None:
    x, keep = _masked_case()
    y = _softmax(x + np.where(keep, 0.0, -1e4)).astype(np.float32)  # softmax of x there
    res = laws.masked_rows_law(y, keep, 1, 1e-5)
    assert res.result == CONTRACT_ISSUE and "not exactly zero (max |y| = 0.3" in res.reason
    leaky = _law_softmax(x, keep).astype(np.float32)
    leaky[2, 1] = 1e-3
    res = laws.masked_rows_law(leaky, keep, 1, 1e-5)
    assert "1 masked key(s) with non-zero probability" in res.reason


# ---------------------------------------------------------------- LayerNorm variance

EPS = float(np.float32(1e-5))


def _rows() -> np.ndarray:
    z = np.random.default_rng(5).normal(size=(4, 32))
    z = (z - z.mean(1, keepdims=True)) / z.std(1, keepdims=True)
    # ordinary variance, variance ≈ ε, variance ≪ ε, near-constant far from zero
    rows: np.ndarray = z * np.array([[1.0], [np.sqrt(EPS)], [1e-4 * np.sqrt(EPS)], [0.05]]) \
        + np.array([[0.0], [0.0], [0.0], [100.0]])
    return rows


def _layer_norm(x: np.ndarray, eps: float, ddof: int = 0) -> np.ndarray:
    mean = x.mean(1, keepdims=True)
    y: np.ndarray = (x - mean) / np.sqrt(x.var(1, keepdims=True, ddof=ddof) + eps)
    return y


@pytest.mark.parametrize("dtype, rtol, atol", [("float32", 1e-5, 1e-6),
                                               ("float64", 1e-12, 1e-13)])
def test_layernorm_with_epsilon_holds(dtype: str, rtol: float, atol: float) -> None:
    x = _rows()
    y = _layer_norm(x, EPS).astype(dtype)
    res = laws.layernorm_variance_law(x, y, EPS, (1,), rtol, atol)
    assert res.result == PASSED, res.reason
    np.testing.assert_allclose(res.reference.reshape(-1)[1], 0.5, rtol=1e-6)  # v ≈ ε: ½


def test_layernorm_without_epsilon_breaks_the_law() -> None:
    x = _rows()
    y = _layer_norm(x, 0.0).astype(np.float32)  # a decomposition that forgot ε
    res = laws.layernorm_variance_law(x, y, EPS, (1,), 1e-5, 1e-6)
    assert res.result == CONTRACT_ISSUE
    assert res.reason.startswith("layernorm_variance: |Var(normalised) − v/(v+ε)| = ")
    assert res.details["bad_rows"] == 3  # every row whose variance is not ≫ ε


def test_layernorm_with_the_wrong_variance_breaks_the_law() -> None:
    x = _rows()
    y = _layer_norm(x, EPS, ddof=1).astype(np.float32)  # unbiased variance
    res = laws.layernorm_variance_law(x, y, EPS, (1,), 1e-5, 1e-6)
    assert res.result == CONTRACT_ISSUE and res.details["bad_rows"] >= 2


def test_layernorm_nan_output_is_a_contract_issue() -> None:
    x = _rows()
    y = _layer_norm(x, EPS).astype(np.float32)
    y[0, 0] = np.nan
    res = laws.layernorm_variance_law(x, y, EPS, (1,), 1e-5, 1e-6)
    assert res.result == CONTRACT_ISSUE and "1 non-finite output(s)" in res.reason


def test_layernorm_recovers_normalised_values_through_scale_and_bias() -> None:
    x = _rows()
    scale, bias = np.linspace(0.5, 2, 32), np.linspace(-1, 1, 32)
    y = (_layer_norm(x, EPS) * scale + bias).astype(np.float64)
    assert laws.layernorm_variance_law(x, y, EPS, (1,), 1e-12, 1e-13, scale, bias).holds


# ---------------------------------------------------------------- batch helpers

def test_batch_layout_ignores_broadcast_operands() -> None:
    feeds = {"A": np.zeros((4, 3, 8)), "B": np.zeros((4, 1, 8)), "C": np.zeros((8,)),
             "D": np.zeros((1, 3, 8))}
    layout = batch_layout(feeds)
    assert layout is not None and layout.size == 4 and layout.batched == ("A", "B")
    assert batch_layout({"X": np.zeros((1, 5))}) is None


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_partition_and_permutation_helpers(n: int) -> None:
    points = split_points(n)
    assert points and all(0 < p < n for p in points)
    perm = permutation(n, seed=n)
    assert sorted(perm) == list(range(n)) and not np.any(perm == np.arange(n))
