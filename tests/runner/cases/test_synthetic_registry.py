"""The synthetic registry: unique names, coverage, batch semantics, determinism, valid
models, and float64 formulas that agree with the ONNX reference evaluator."""

from __future__ import annotations

import types

import numpy as np
import onnx
import pytest

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.case import BATCH_INDEPENDENT, BATCH_REDUCE, OpCase
from gero_runner.cases.graphs import BATCH_DIM
from gero_runner.cases.synthetic import registry
from gero_runner.metrics.compare import compare

SEED = 1234
ENTRIES = registry.all_cases()
FLOAT64_ENTRIES = sorted(n for n, c in ENTRIES.items() if "float64" in c.dtypes)

# Example 1 of the masked-softmax entries is fully masked.
FULLY_MASKED = {"MaskedSoftmax.where": 1, "MaskedSoftmax.additive": 1}


@pytest.fixture(scope="module")
def suite() -> list:  # type: ignore[type-arg]
    return registry.expand(SEED)


def test_names_are_unique_and_match_their_keys() -> None:
    names = [c.name for family in registry._FAMILIES for c in family.CASES]
    assert len(names) == len(set(names))
    assert all(case.name == name for name, case in ENTRIES.items())


def test_duplicate_names_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    family = types.SimpleNamespace(CASES=[ENTRIES["Exp"], ENTRIES["Exp"]])
    monkeypatch.setattr(registry, "_FAMILIES", (family,))
    with pytest.raises(ValueError, match="duplicate synthetic case name 'Exp'"):
        registry.all_cases()


def test_at_least_60_distinct_onnx_operators(suite: list) -> None:  # type: ignore[type-arg]
    # Count the operators that actually appear in the graphs, not the labels.
    in_graphs = {n.op_type for c in suite for n in onnx.load_from_string(c.model).graph.node}
    assert len(in_graphs) >= 60, sorted(in_graphs)
    assert {"QuantizeLinear", "DynamicQuantizeLinear"}.isdisjoint(in_graphs)
    assert "DequantizeLinear" in in_graphs


def test_at_least_30_batch_independent_entries_with_a_batch_of_4() -> None:
    independent = [c for c in ENTRIES.values()
                   if c.batch == BATCH_INDEPENDENT and c.shapes[0][0] >= 4]
    assert len(independent) >= 30


def test_a_reduction_across_the_batch_axis_is_declared() -> None:
    assert any(c.batch == BATCH_REDUCE for c in ENTRIES.values())


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_entry_has_two_shapes_and_float_dtypes(name: str) -> None:
    case: OpCase = ENTRIES[name]
    assert len(set(case.shapes)) >= 2
    assert case.dtypes
    assert set(case.tolerance) <= set(case.dtypes)


def test_batch_independent_feeds_share_a_dynamic_leading_axis(suite: list) -> None:  # type: ignore[type-arg]
    for case in suite:
        if case.batch != BATCH_INDEPENDENT:
            continue
        assert len({v.shape[0] for v in case.inputs.values()}) == 1, case.case_id
        graph = onnx.load_from_string(case.model).graph
        for value in [*graph.input, *graph.output]:
            assert value.type.tensor_type.shape.dim[0].dim_param == BATCH_DIM, case.case_id


def test_suite_size_and_tensor_sizes(suite: list) -> None:  # type: ignore[type-arg]
    assert 350 <= len(suite) <= 500
    for case in suite:
        assert all(v.size <= 4096 for v in case.inputs.values()), case.case_id
        assert all(v.size <= 4096 for v in case.expected.values()), case.case_id


def test_declared_contracts_and_variants() -> None:
    assert "probability" in ENTRIES["Softmax"].contracts
    assert "probability" in ENTRIES["Sigmoid"].contracts
    for name in ("MaskedSoftmax.where", "MaskedSoftmax.additive"):
        assert ENTRIES[name].contracts == ("masked_rows",)
    assert "layernorm_variance" in ENTRIES["LayerNormalization"].contracts
    wanted = {"Softmax": "softmax_decomposed", "LogSoftmax": "logsoftmax_decomposed",
              "LayerNormalization": "layernorm_decomposed", "Gemm": "gemm_matmul_add",
              "Conv": "conv_bias_add", "ReduceLogSumExp": "reducelogsumexp_decomposed",
              "BatchNormalization": "batchnorm_mul_add", "Sigmoid": "sigmoid_decomposed"}
    for name, variant in wanted.items():
        assert variant in ENTRIES[name].variants, name


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_expansion_is_deterministic(name: str) -> None:
    case = ENTRIES[name]
    dtype, shape = case.dtypes[0], case.shapes[0]
    a = registry.instantiate(case, dtype, shape, SEED)
    b = registry.instantiate(case, dtype, shape, SEED)
    assert a.model == b.model
    assert a.seed == b.seed
    assert list(a.inputs) == list(b.inputs)
    for key in a.inputs:
        assert a.inputs[key].dtype == b.inputs[key].dtype
        assert a.inputs[key].tobytes() == b.inputs[key].tobytes()
    other = registry.instantiate(case, dtype, shape, SEED + 1)
    assert other.seed != a.seed


def test_every_model_passes_the_checker(suite: list) -> None:  # type: ignore[type-arg]
    for case in suite:
        model = onnx.load_from_string(case.model)
        onnx.checker.check_model(model, full_check=True)
        assert model.opset_import[0].version == 19 and model.ir_version == 10
        assert [i.name for i in model.graph.input] == list(case.inputs), case.case_id
        assert [o.name for o in model.graph.output] == list(case.expected), case.case_id


@pytest.mark.parametrize("name", FLOAT64_ENTRIES)
def test_float64_formula_agrees_with_the_reference_evaluator(name: str) -> None:
    case = ENTRIES[name]
    # gero's corrected evaluator (reference_defects): onnx's own Erf rounds to float32.
    rtol, atol = 1e-12, 1e-13
    for shape in case.shapes:
        instance = registry.instantiate(case, "float64", shape, SEED)
        assert instance.expected is not None, "a synthetic case has its float64 formula"
        with np.errstate(all="ignore"):
            outputs = corrected_evaluator(onnx.load_from_string(instance.model)).run(
                None, instance.inputs)
        for (key, expected), actual in zip(instance.expected.items(), outputs, strict=True):
            actual = np.asarray(actual)
            result = compare(actual, expected, rtol, atol)
            # NaN never compares equal; a NaN where the formula has NaN is agreement here.
            assert result.mismatch_count == result.nan_both, (instance.case_id, key, result)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(FULLY_MASKED))
def test_fully_masked_formula_is_the_graphs_arithmetic(name: str, dtype: str) -> None:
    """The float64 formula computes what the graph computes (softmax of x + mask, or of
    Where(keep, x, -inf)); the law (a fully masked row is zeros) is the contract row."""
    instance = registry.instantiate(ENTRIES[name], dtype, ENTRIES[name].shapes[0], SEED)
    assert instance.expected_exact is not None
    (exact,) = instance.expected_exact.values()
    row = exact[FULLY_MASKED[name]]
    if name == "MaskedSoftmax.additive":
        assert np.all(np.isfinite(row)) and np.allclose(row.sum(axis=-1), 1.0)
        # The graph's Add rounds x + mask into the dtype first (a float32 step near -1e4 is
        # ~1e-3, enough to move the fully masked row's probabilities by 1e-4).
        x, bias = instance.inputs["X"], instance.inputs["bias"]
        summed = (x + bias).astype(np.float64)
        e = np.exp(summed - summed.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(exact, e / e.sum(axis=-1, keepdims=True), rtol=1e-12)
    else:
        assert np.all(np.isnan(row))
    assert "masked_rows" in ENTRIES[name].contracts


def test_gelu_formula_divides_by_the_graphs_rounded_sqrt2() -> None:
    """The graph divides by √2 rounded to float16 (1.4140625); so does its formula."""
    import math

    entry = ENTRIES["Gelu.erf"]
    instance = registry.instantiate(entry, "float16", entry.shapes[0], SEED)
    x = instance.inputs["X"].astype(np.float64)
    assert instance.expected_exact is not None
    (exact,) = instance.expected_exact.values()
    want = 0.5 * x * (1.0 + np.vectorize(math.erf)(x / 1.4140625))
    np.testing.assert_array_equal(exact, want)
