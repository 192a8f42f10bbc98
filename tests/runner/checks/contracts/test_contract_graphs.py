"""The contract family on hand-made graphs run through evaluate_case: graphs that couple
examples, mask badly or forget ε break the laws; honest graphs keep them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from gero_runner.case import BATCH_INDEPENDENT, BATCH_NONE, BATCH_REDUCE, CaseInstance
from gero_runner.cases.graphs import make_model, value_info
from gero_runner.cases.synthetic.registry import all_cases, instantiate
from gero_runner.checks.contracts.determinism import determinism_rows, machine_threads
from gero_runner.checks.contracts.rank import unsqueezed_case
from gero_runner.checks.task import evaluate_case
from gero_runner.execution.context import CaseContext, PathResult, RunSettings
from gero_runner.schema import CONTRACT_ISSUE, PASSED, Observation
from gero_runner.storage.artifacts import EvidenceWriter, load_array

LEVELS = ("disable_all", "all")
F = "float32"


def _model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray]
           | None = None, out_rank: int | None = None) -> bytes:
    rank = next(iter(feeds.values())).ndim if out_rank is None else out_rank
    graph = helper.make_graph(
        nodes, "t", [value_info(k, v.dtype, v.shape) for k, v in feeds.items()],
        [value_info("Y", F, [None] * rank)],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return make_model(graph).SerializeToString()


def _case(model: bytes, feeds: dict[str, np.ndarray], batch: str = BATCH_INDEPENDENT,
          contracts: tuple[str, ...] = (), **facts: Any) -> CaseInstance:
    return CaseInstance(suite="test", case_id="test/x/float32", op_type="X", case_name="x",
                        dtype=F, seed=7, model=model, inputs=feeds, batch=batch,
                        contracts=contracts, **facts)


def _rows(case: CaseInstance, tmp_path: Path) -> list[Observation]:
    settings = RunSettings(data_root=str(tmp_path), levels=LEVELS, repeats=2,
                           checks=("contracts",))
    return evaluate_case(case, settings).rows


def _by_check(rows: list[Observation], check: str) -> list[Observation]:
    return [r for r in rows if r.check == check]


def _x(shape: tuple[int, ...] = (4, 6), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-3, 3, shape).astype(F)


# ---------------------------------------------------------------- batch laws

def test_an_honest_batch_op_keeps_every_batch_law(tmp_path: Path) -> None:
    x = _x()
    rows = _rows(_case(_model([helper.make_node("Softmax", ["X"], ["Y"], axis=-1)],
                              {"X": x}), {"X": x}), tmp_path)
    for law in ("partition", "permutation", "duplication", "threads", "determinism"):
        got = _by_check(rows, f"contract:{law}")
        paths = len(LEVELS) if law == "threads" else len(LEVELS) + 1
        assert len(got) == paths and {r["result"] for r in got} == {PASSED}, got
    partition = _by_check(rows, "contract:partition")[0]
    assert json.loads(partition["details"])["parts"] == [1, 1, 2]
    assert partition["reference"] == "law:full-batch"
    # Both sides of the law are evidence files the explorer can open side by side.
    directory = tmp_path / partition["artifact_path"]
    full = load_array(directory, partition["reference_file"])
    concat = load_array(directory, partition["actual_file"])
    assert full.shape == concat.shape == (4, 6)
    threads = _by_check(rows, "contract:threads")[0]
    assert threads["threads"] == machine_threads()
    assert json.loads(threads["session_settings"])["intra_op_num_threads"] == machine_threads()


def test_a_graph_that_mixes_examples_breaks_partition(tmp_path: Path) -> None:
    """x − ReduceMean(x, axis 0): each output row depends on the other examples."""
    x = _x()
    nodes = [helper.make_node("ReduceMean", ["X", "axes"], ["M"], keepdims=1),
             helper.make_node("Sub", ["X", "M"], ["Y"])]
    model = _model(nodes, {"X": x}, {"axes": np.array([0], dtype=np.int64)})
    rows = _by_check(_rows(_case(model, {"X": x}), tmp_path), "contract:partition")
    assert len(rows) == len(LEVELS) + 1
    for row in rows:
        assert row["result"] == CONTRACT_ISSUE
        assert row["reason"].startswith("partition: |full − concat(parts)| = ")
        assert "> tol" in row["reason"] and not row["bit_exact"]


def test_a_position_dependent_graph_breaks_permutation_and_duplication(tmp_path: Path) -> None:
    """x · w with one weight per batch position: examples are not treated alike."""
    x = _x()
    w = np.arange(1, 5, dtype=F).reshape(4, 1)
    model = _model([helper.make_node("Mul", ["X", "W"], ["Y"])], {"X": x}, {"W": w})
    rows = _rows(_case(model, {"X": x}), tmp_path)
    for law in ("permutation", "duplication"):
        got = _by_check(rows, f"contract:{law}")
        assert got and {r["result"] for r in got} == {CONTRACT_ISSUE}, got
        assert all(r["reason"].startswith(f"{law}: ") for r in got)
    # Parts of the batch cannot even run against a weight of batch 4: recorded, not hidden.
    assert {r["result"] for r in _by_check(rows, "contract:partition")} == {"execution"}


def test_batch_none_cases_carry_no_batch_law(tmp_path: Path) -> None:
    x = _x()
    rows = _rows(_case(_model([helper.make_node("Relu", ["X"], ["Y"])], {"X": x}), {"X": x},
                       batch=BATCH_NONE), tmp_path)
    assert not _by_check(rows, "contract:partition")
    assert _by_check(rows, "contract:determinism")


# ---------------------------------------------------------------- reductions over the batch

@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMean", "ReduceL2"])
def test_reductions_across_the_batch_combine_from_parts(op: str, tmp_path: Path) -> None:
    x = np.abs(_x((6, 5))) + np.float32(0.1)
    model = _model([helper.make_node(op, ["X", "axes"], ["Y"], keepdims=0)], {"X": x},
                   {"axes": np.array([0], dtype=np.int64)}, out_rank=1)
    rows = _rows(_case(model, {"X": x}, batch=BATCH_REDUCE), tmp_path)
    for law in ("partial_reduction", "permutation_invariance"):
        got = _by_check(rows, f"contract:{law}")
        assert len(got) == len(LEVELS) + 1 and {r["result"] for r in got} == {PASSED}, got
    details = json.loads(_by_check(rows, "contract:partial_reduction")[0]["details"])
    assert details["reduction_length"] == 6 and details["op"] == op
    if op == "ReduceMax":
        assert all(r["bit_exact"] for r in _by_check(rows, "contract:permutation_invariance"))


def test_a_weighted_batch_sum_is_not_permutation_invariant(tmp_path: Path) -> None:
    x = _x((4, 5))
    w = np.arange(1, 5, dtype=F).reshape(4, 1)
    nodes = [helper.make_node("Mul", ["X", "W"], ["P"]),
             helper.make_node("ReduceSum", ["P", "axes"], ["Y"], keepdims=0)]
    model = _model(nodes, {"X": x}, {"W": w, "axes": np.array([0], dtype=np.int64)},
                   out_rank=1)
    rows = _by_check(_rows(_case(model, {"X": x}, batch=BATCH_REDUCE), tmp_path),
                     "contract:permutation_invariance")
    assert rows and {r["result"] for r in rows} == {CONTRACT_ISSUE}


# ---------------------------------------------------------------- probability

def test_softmax_probability_and_extreme_logits(tmp_path: Path) -> None:
    x = _x((4, 8))
    model = _model([helper.make_node("Softmax", ["X"], ["Y"], axis=-1)], {"X": x})
    rows = _rows(_case(model, {"X": x}, contracts=("probability",)), tmp_path)
    assert {r["result"] for r in _by_check(rows, "contract:probability")} == {PASSED}
    extreme = _by_check(rows, "contract:probability_extreme")
    assert len(extreme) == len(LEVELS) + 1
    # A +inf logit gives NaN (inf − inf) on every path: the law forbids it, even though
    # every backend agrees.
    assert {r["result"] for r in extreme} == {CONTRACT_ISSUE}
    assert all("non-finite value(s) (NaN 8" in r["reason"] for r in extreme)


def test_softmax_without_the_max_shift_overflows_into_nan(tmp_path: Path) -> None:
    x = _x((4, 8)) * np.float32(40)  # exp(120) overflows float32
    nodes = [helper.make_node("Exp", ["X"], ["E"]),
             helper.make_node("ReduceSum", ["E", "axes"], ["S"], keepdims=1),
             helper.make_node("Div", ["E", "S"], ["Y"])]
    model = _model(nodes, {"X": x}, {"axes": np.array([-1], dtype=np.int64)})
    rows = _by_check(_rows(_case(model, {"X": x}, contracts=("probability",),
                                 probability_axis=-1), tmp_path), "contract:probability")
    assert rows and {r["result"] for r in rows} == {CONTRACT_ISSUE}
    assert all(r["reason"].startswith("probability: ") and "NaN" in r["reason"] for r in rows)


# ---------------------------------------------------------------- masked rows

def _masked_feeds() -> dict[str, np.ndarray]:
    keep = np.ones((4, 6), dtype=bool)
    keep[1] = False
    keep[2, ::2] = False
    return {"X": _x((4, 6)), "keep": keep}


def test_softmax_after_where_gives_nan_on_a_fully_masked_row(tmp_path: Path) -> None:
    feeds = _masked_feeds()
    nodes = [helper.make_node("Where", ["keep", "X", "ninf"], ["M"]),
             helper.make_node("Softmax", ["M"], ["Y"], axis=-1)]
    model = _model(nodes, feeds, {"ninf": np.array(-np.inf, dtype=F)})
    rows = _by_check(_rows(_case(model, feeds, contracts=("masked_rows",)), tmp_path),
                     "contract:masked_rows")
    assert len(rows) == len(LEVELS) + 1
    for row in rows:
        assert row["result"] == CONTRACT_ISSUE
        assert "1 of 1 fully masked row(s) not exactly zero (NaN in 6 element(s))" in row["reason"]


def test_masking_the_output_too_returns_exact_zeros(tmp_path: Path) -> None:
    feeds = _masked_feeds()
    nodes = [helper.make_node("Where", ["keep", "X", "ninf"], ["M"]),
             helper.make_node("Softmax", ["M"], ["S"], axis=-1),
             helper.make_node("Where", ["keep", "S", "zero"], ["Y"])]
    model = _model(nodes, feeds, {"ninf": np.array(-np.inf, dtype=F),
                                  "zero": np.array(0, dtype=F)})
    rows = _by_check(_rows(_case(model, feeds, contracts=("masked_rows",)), tmp_path),
                     "contract:masked_rows")
    assert rows and {r["result"] for r in rows} == {PASSED}, rows


def test_additive_mask_gives_a_non_zero_masked_row(tmp_path: Path) -> None:
    feeds = _masked_feeds()
    bias = np.where(feeds.pop("keep"), 0.0, -1e4).astype(F)
    feeds["bias"] = bias
    nodes = [helper.make_node("Add", ["X", "bias"], ["M"]),
             helper.make_node("Softmax", ["M"], ["Y"], axis=-1)]
    rows = _by_check(_rows(_case(_model(nodes, feeds), feeds, contracts=("masked_rows",)),
                           tmp_path), "contract:masked_rows")
    assert rows and {r["result"] for r in rows} == {CONTRACT_ISSUE}
    assert all("max |y| = " in r["reason"] for r in rows)


# ---------------------------------------------------------------- LayerNorm variance

def _ln_input() -> np.ndarray:
    z = np.random.default_rng(9).normal(size=(4, 16))
    spread = np.array([[1.0], [np.sqrt(1e-5)], [1e-7], [0.05]])
    x: np.ndarray = (z * spread + np.array([[0.0], [0.0], [0.0], [10.0]])).astype(F)
    return x


def test_layernorm_operator_keeps_the_variance_law(tmp_path: Path) -> None:
    x = _ln_input()
    inits = {"scale": np.ones(16, F), "bias": np.zeros(16, F)}
    model = _model([helper.make_node("LayerNormalization", ["X", "scale", "bias"], ["Y"],
                                     axis=-1, epsilon=1e-5)], {"X": x}, inits)
    rows = _by_check(_rows(_case(model, {"X": x}, contracts=("layernorm_variance",)),
                           tmp_path), "contract:layernorm_variance")
    assert len(rows) == len(LEVELS) + 1 and {r["result"] for r in rows} == {PASSED}, rows


@pytest.mark.parametrize("graph_eps", [0.0, 1e-5])
def test_decomposition_without_epsilon_breaks_the_variance_law(graph_eps: float,
                                                               tmp_path: Path) -> None:
    """A decomposed LayerNorm that promises ε = 1e-5 but adds ``graph_eps``."""
    x = _ln_input()
    nodes = [helper.make_node("ReduceMean", ["X", "axes"], ["M"], keepdims=1),
             helper.make_node("Sub", ["X", "M"], ["D"]),
             helper.make_node("Mul", ["D", "D"], ["D2"]),
             helper.make_node("ReduceMean", ["D2", "axes"], ["V"], keepdims=1),
             helper.make_node("Add", ["V", "eps"], ["VE"]),
             helper.make_node("Sqrt", ["VE"], ["S"]),
             helper.make_node("Div", ["D", "S"], ["Y"])]
    model = _model(nodes, {"X": x}, {"axes": np.array([-1], dtype=np.int64),
                                     "eps": np.array(graph_eps, dtype=F)})
    rows = _by_check(_rows(_case(model, {"X": x}, contracts=("layernorm_variance",),
                                 layernorm_epsilon=1e-5), tmp_path),
                     "contract:layernorm_variance")
    assert len(rows) == len(LEVELS) + 1
    if graph_eps == 0.0:
        assert {r["result"] for r in rows} == {CONTRACT_ISSUE}
        assert all("v/(v+ε)" in r["reason"] for r in rows)
    else:
        assert {r["result"] for r in rows} == {PASSED}, [r["reason"] for r in rows]


# ---------------------------------------------------------------- determinism

def test_non_deterministic_repeats_are_a_contract_issue() -> None:
    case = _case(b"", {"X": _x()})
    out = [np.zeros(3, F)]
    paths = {"ort-all": PathResult("ort-all", "onnxruntime", "1", "all", 1, {}, outputs=out,
                                   repeats=5, deterministic=False),
             "onnx-reference": PathResult("onnx-reference", "onnx-reference", "1", "-", 0, {},
                                          outputs=out, repeats=5)}
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                      paths, ["Y"], "g", "i")
    rows = {r["backend"]: r for r in determinism_rows(ctx, list(paths.values()))}
    assert rows["onnxruntime"]["result"] == CONTRACT_ISSUE
    assert "differing output hashes" in rows["onnxruntime"]["reason"]
    assert rows["onnx-reference"]["result"] == PASSED


def test_identical_nan_outputs_are_no_evidence_of_determinism() -> None:
    """Sqrt(x − c) NaN where x < c: repeats give identical NaN bits; NaN == NaN never
    passes, so the row is no pass (it joins the NaN-on-both-sides cause)."""
    case = _case(b"", {"X": _x()})
    out = [np.array([1.0, np.nan, np.nan], F)]
    paths = {"ort-all": PathResult("ort-all", "onnxruntime", "1", "all", 1, {}, outputs=out,
                                   repeats=5)}
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                      paths, ["Y"], "g", "i")
    (row,) = determinism_rows(ctx, list(paths.values()))
    assert row["result"] == CONTRACT_ISSUE
    assert "NaN on both sides at 2 of 3 elements" in row["reason"]


# ---------------------------------------------------------------- rank change

def test_rank_change_on_a_registry_entry(tmp_path: Path) -> None:
    entry = all_cases()["Softmax"]
    case = instantiate(entry, F, entry.shapes[0], seed=3)
    rows = _by_check(_rows(case, tmp_path), "contract:rank_change")
    assert len(rows) == len(LEVELS) + 1 and {r["result"] for r in rows} == {PASSED}, rows
    assert json.loads(rows[0]["details"])["unit_axis"] == 1


def test_rank_change_is_not_stated_where_the_operator_does_not_allow_it() -> None:
    entry = all_cases()["Conv"]
    inputs = entry.inputs(np.random.default_rng(0), F, entry.shapes[0])
    assert unsqueezed_case(entry, F, inputs, 1) is None
    assert unsqueezed_case(entry, F, inputs, 0) is None


def test_a_single_run_is_no_determinism_observation() -> None:
    """A check that compared nothing is not an observation, and never a pass."""
    case = _case(b"", {"X": _x()})
    out = [np.zeros(3, F)]
    paths = {"onnx-reference": PathResult("onnx-reference", "onnx-reference", "1", "-", 0, {},
                                          outputs=out, repeats=1),
             "ort-all": PathResult("ort-all", "onnxruntime", "1", "all", 1, {}, outputs=out,
                                   repeats=2)}
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                      paths, ["Y"], "g", "i")
    rows = determinism_rows(ctx, list(paths.values()))
    assert [r["backend"] for r in rows] == ["onnxruntime"]
    assert rows[0]["result"] == PASSED
