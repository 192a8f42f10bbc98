"""Algebraic variants: each decomposition computes the base operator's function, is run on
every path against the base graph, and a wrong decomposition is caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from gero_runner.case import CaseInstance
from gero_runner.cases.graphs import make_model, value_info
from gero_runner.cases.synthetic.registry import all_cases, instantiate
from gero_runner.checks.task import evaluate_case
from gero_runner.checks.variants import builders
from gero_runner.checks.variants.builders import VARIANTS, VariantError, build_variant
from gero_runner.errors import GeroError
from gero_runner.execution.context import RunSettings
from gero_runner.schema import DIVERGENCE, PASSED, Observation
from gero_runner.storage.artifacts import has_member

F = "float32"
RNG = np.random.default_rng(0)


def _single(op: str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
            order: list[str], out_rank: int, **attrs: Any) -> bytes:
    graph = helper.make_graph(
        [helper.make_node(op, order, ["Y"], **attrs)], "t",
        [value_info(k, v.dtype, v.shape) for k, v in feeds.items()],
        [value_info("Y", F, [None] * out_rank)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    return make_model(graph).SerializeToString()


def _u(*shape: int, lo: float = -2, hi: float = 2) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(F)


BASES = {
    "softmax_decomposed": lambda: (_single("Softmax", {"X": _u(3, 7)}, {}, ["X"], 2, axis=-1),
                                   {"X": _u(3, 7)}),
    "logsoftmax_decomposed": lambda: (_single("LogSoftmax", {"X": _u(3, 7)}, {}, ["X"], 2,
                                              axis=1), {"X": _u(3, 7)}),
    "layernorm_decomposed": lambda: (_single(
        "LayerNormalization", {"X": _u(2, 3, 8)}, {"s": _u(8), "b": _u(8)}, ["X", "s", "b"], 3,
        axis=-1, epsilon=1e-5), {"X": _u(2, 3, 8)}),
    "gemm_matmul_add": lambda: (_single(
        "Gemm", {"A": _u(4, 5)}, {"B": _u(6, 5), "C": _u(6)}, ["A", "B", "C"], 2, alpha=0.5,
        beta=2.0, transB=1), {"A": _u(4, 5)}),
    "conv_bias_add": lambda: (_single(
        "Conv", {"X": _u(2, 3, 6, 6)}, {"W": _u(4, 3, 3, 3), "B": _u(4)}, ["X", "W", "B"], 4,
        kernel_shape=[3, 3], pads=[1, 0, 1, 1]), {"X": _u(2, 3, 6, 6)}),
    "reducelogsumexp_decomposed": lambda: (_single(
        "ReduceLogSumExp", {"X": _u(3, 4, 5)}, {"axes": np.array([-1], np.int64)},
        ["X", "axes"], 3, keepdims=1), {"X": _u(3, 4, 5)}),
    "batchnorm_mul_add": lambda: (_single(
        "BatchNormalization", {"X": _u(2, 3, 4, 4)},
        {"s": _u(3), "b": _u(3), "m": _u(3), "v": _u(3, lo=0.1, hi=2)},
        ["X", "s", "b", "m", "v"], 4, epsilon=1e-5), {"X": _u(2, 3, 4, 4)}),
    "sigmoid_decomposed": lambda: (_single("Sigmoid", {"X": _u(3, 7)}, {}, ["X"], 2),
                                   {"X": _u(3, 7, lo=-12, hi=12)}),
}


def test_at_least_eight_variants_and_every_one_has_a_base_here() -> None:
    assert len(VARIANTS) >= 8 and set(BASES) == set(VARIANTS)


def _outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    outputs = ReferenceEvaluator(model).run(None, feeds)
    assert isinstance(outputs, list)  # a dict only with intermediate=True
    return outputs


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_computes_the_base_function(name: str) -> None:
    model, feeds = BASES[name]()
    variant = build_variant(name, model, feeds)
    graph = onnx.load_from_string(variant)
    replaced = VARIANTS[name][0]
    assert replaced not in {n.op_type for n in graph.graph.node} or name == "conv_bias_add"
    assert graph.opset_import[0].version == 19 and graph.ir_version == 10
    (base,) = _outputs(onnx.load_from_string(model), feeds)
    (got,) = _outputs(graph, feeds)
    np.testing.assert_allclose(got, base, rtol=2e-5, atol=2e-6)


def test_variant_errors_name_the_problem() -> None:
    model, feeds = BASES["softmax_decomposed"]()
    with pytest.raises(VariantError, match="the graph has no Gemm node"):
        build_variant("gemm_matmul_add", model, feeds)
    with pytest.raises(VariantError, match="unknown variant 'nope'; known: softmax_decomposed"):
        build_variant("nope", model, feeds)


def _case(name: str, variants: tuple[str, ...]) -> CaseInstance:
    model, feeds = BASES[name]()
    return CaseInstance(suite="test", case_id=f"test/{name}/float32", op_type="X",
                        case_name=name, dtype=F, seed=1, model=model, inputs=feeds,
                        variants=variants)


def _variant_rows(case: CaseInstance, tmp_path: Path) -> list[Observation]:
    settings = RunSettings(data_root=str(tmp_path), levels=("disable_all", "all"), repeats=1,
                           checks=("variants",))
    return [r for r in evaluate_case(case, settings).rows if r.check.startswith("variant:")]


def test_variant_rows_on_every_path_with_evidence(tmp_path: Path) -> None:
    rows = _variant_rows(_case("softmax_decomposed", ("softmax_decomposed",)), tmp_path)
    assert {(r["backend"], r["optimization"]) for r in rows} == {
        ("onnxruntime", "disable_all"), ("onnxruntime", "all"), ("onnx-reference", "-")}
    assert {r["result"] for r in rows} == {PASSED}
    assert all(r["reason"].startswith("variant softmax_decomposed: ") for r in rows)
    row = rows[0]
    directory = tmp_path / row["artifact_path"]
    assert (directory / "variants/softmax_decomposed/model.onnx").is_file()
    assert has_member(directory, row["actual_file"])
    assert has_member(directory, row["reference_file"])


def test_a_wrong_decomposition_is_a_divergence(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def no_division(node, model, feeds):  # type: ignore[no-untyped-def]
        return [helper.make_node("Exp", [node.input[0]], [node.output[0]])], {}

    monkeypatch.setitem(builders.VARIANTS, "softmax_decomposed", ("Softmax", no_division))
    rows = _variant_rows(_case("softmax_decomposed", ("softmax_decomposed",)), tmp_path)
    assert rows and {r["result"] for r in rows} == {DIVERGENCE}
    assert all("elements outside" in r["reason"] for r in rows)


def test_naive_logsumexp_overflows_where_the_operator_does_not(tmp_path: Path) -> None:
    entry = all_cases()["ReduceLogSumExp"]
    case = instantiate(entry, "float16", entry.shapes[0], seed=0)
    case.inputs = {"X": np.full_like(case.inputs["X"], 20.0)}  # exp(20) > float16 max
    rows = {r["backend"]: r for r in _variant_rows(case, tmp_path)}
    # The ReferenceEvaluator computes Exp in float16: inf where the operator is finite.
    assert rows["onnx-reference"]["result"] == "contract_issue"
    assert "actual is +inf at 24 of 24 elements where reference is 22.078125" in \
        rows["onnx-reference"]["reason"]
    # ORT's CPU kernels widen float16 Exp/ReduceSum/Log to float32: no overflow there.
    assert rows["onnxruntime"]["result"] == PASSED


def test_unknown_variant_on_a_case_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GeroError, match="unknown variant"):
        _variant_rows(_case("softmax_decomposed", ("bogus",)), tmp_path)


@pytest.mark.parametrize("name", ["Softmax", "Gemm", "Conv", "BatchNormalization",
                                  "LayerNormalization", "Sigmoid"])
def test_registry_entries_variants_pass_in_float32(name: str, tmp_path: Path) -> None:
    entry = all_cases()[name]
    case = instantiate(entry, F, entry.shapes[0], seed=0)
    rows = _variant_rows(case, tmp_path)
    assert rows and {r["result"] for r in rows} == {PASSED}, [r["reason"] for r in rows]
