"""Batch contracts: examples along axis 0 are independent (partition, permutation,
duplication), and reductions across the batch combine from partial results.

Every path runs a copy of the case's graph with a symbolic batch dimension, so one session
per path serves the full batch, its parts, and the permuted and duplicated batches.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from gero_runner.checks.contracts import laws
from gero_runner.checks.contracts.model_facts import (
    BatchLayout,
    attribute,
    batch_layout,
    constant,
    dynamic_batch_model,
    find_node,
    permutation,
    split_points,
    take,
)
from gero_runner.checks.contracts.paths import (
    Evidence,
    PathRunner,
    compare_law,
    execution_row,
    law_row,
)
from gero_runner.errors import error_text
from gero_runner.facts import MODEL_QUANTIZATION
from gero_runner.schema import CONTRACT_ISSUE, Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult

INDEPENDENT_LAWS = ("partition", "permutation", "duplication")
REDUCE_LAWS = ("partial_reduction", "permutation_invariance")


def _parts(size: int) -> list[slice]:
    bounds = [0, *split_points(size), size]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def independent_rows(ctx: CaseContext, paths: list[PathResult],
                     evidence: Evidence) -> list[Observation]:
    """partition, permutation and duplication on every path and output."""
    layout = batch_layout(ctx.case.inputs)
    if layout is None:
        return []
    model = dynamic_batch_model(ctx.case.model, layout.batched)
    n = layout.size
    parts = _parts(n)
    perm = permutation(n, ctx.case.seed)
    src, dst = 0, n - 1
    dup_index = np.arange(n)
    dup_index[dst] = src
    figures = {"batch": n, "batched_inputs": list(layout.batched),
               "parts": [s.stop - s.start for s in parts]}
    # the model's own per-tensor dynamic quantisation: its scale spans the batch, so a
    # batch law it breaks is the model's doing, not a runtime's (issue 40 item 8)
    own_quantization = per_tensor_dynamic_quantization(ctx.case.model)
    rows: list[Observation] = []
    feeds = ctx.case.inputs
    for path in paths:
        with PathRunner(ctx, path, model, kept=True) as run:  # released before the laws are judged
            try:
                full = run(feeds)
            except Exception as e:  # a runtime that rejects the symbolic batch: observed
                rows += _failed(ctx, path, INDEPENDENT_LAWS,
                                f"the full batch failed: {error_text(e)}")
                continue
            selections: dict[str, list[Any]] = {
                "partition": list(parts), "permutation": [perm], "duplication": [dup_index]}
            got: dict[str, Any] = {}
            for law, chosen in selections.items():
                run.graph = f"contract:{law}'s graph (the model with a symbolic batch)"
                try:
                    outs = [run(take(feeds, layout.batched, s)) for s in chosen]
                    got[law] = outs if law == "partition" else outs[0]
                except Exception as e:  # e.g. a graph constant that fixes the batch size
                    rows += _failed(ctx, path, (law,),
                                    f"running the graph failed: {error_text(e)}")
        for j, name in enumerate(ctx.output_names):
            f = full[j]
            dtype = str(f.dtype)
            rtol, atol = ctx.tolerance(dtype)
            if f.ndim == 0 or f.shape[0] != n:
                for law in got:
                    res = laws.LawResult(
                        law, CONTRACT_ISSUE,
                        f"{law}: output {name!r} has shape {list(f.shape)}, its leading axis "
                        f"is not the batch of {n}", rtol, atol, f, f)
                    rows.append(law_row(ctx, evidence, f"contract:{law}", path, name, res,
                                        reference_label="law:full-batch",
                                        folder=f"contracts/{law}", dtype=dtype, extra=figures))
                continue
            checks = []
            if "partition" in got:
                concat = np.concatenate([p[j] for p in got["partition"]], axis=0)
                checks.append(("partition", compare_law(
                    ctx, "partition", concat, f, rtol, atol, actual_label="concat(parts)",
                    reference_label="full"), "law:full-batch"))
            if "permutation" in got:
                checks.append(("permutation", compare_law(
                    ctx, "permutation", got["permutation"][j], f[perm], rtol, atol,
                    actual_label="f(x[p])", reference_label="f(x)[p]"),
                    "law:permuted-full-batch"))
            if "duplication" in got:
                dup = got["duplication"][j]
                checks.append(("duplication", compare_law(
                    ctx, "duplication", dup[dst], dup[src], rtol, atol, actual_label=f"row {dst}",
                    reference_label=f"duplicated row {src}"), "law:duplicated-example"))
            for law, res, label in checks:
                rows.append(law_row(ctx, evidence, f"contract:{law}", path, name, res,
                                    reference_label=label, folder=f"contracts/{law}",
                                    dtype=dtype, extra=figures,
                                    cause_key=MODEL_QUANTIZATION
                                    if own_quantization and law in SPANS_BATCH else ""))
    return rows


SPANS_BATCH = ("partition", "duplication")
"""The laws a per-tensor range over the whole batch breaks: a part, or a batch with one
example duplicated, has another range, so other scales (a permutation keeps the range)."""


def per_tensor_dynamic_quantization(model: bytes) -> bool:
    """Whether the graph quantises a tensor at run time with one scale for all of it
    (ONNX's DynamicQuantizeLinear is per tensor by definition; ORT's DynamicQuantizeLSTM
    and DynamicQuantizeMatMul quantise their input the same way): its scale then spans the
    batch, and each example's output depends on the others' values."""
    graph = onnx.load_from_string(model).graph
    return any(n.op_type in ("DynamicQuantizeLinear", "DynamicQuantizeLSTM",
                             "DynamicQuantizeMatMul") for n in graph.node)


def _failed(ctx: CaseContext, path: PathResult, names: tuple[str, ...],
            message: str) -> list[Observation]:
    return [execution_row(ctx, f"contract:{law}", path, "", ctx.case.dtype,
                          f"{law}: {message}", "law:full-batch") for law in names]


def _reduction(model: onnx.ModelProto, feeds: dict[str, np.ndarray]
               ) -> tuple[str, np.ndarray, tuple[int, ...], bool] | None:
    """(op, reduced input, axes, keepdims) of the graph's reduction node, if it has one."""
    node = find_node(model, laws.REDUCTION_RULES)
    if node is None or node.input[0] not in feeds:
        return None
    x = np.asarray(feeds[node.input[0]])
    axes_value = (constant(model, node.input[1], feeds)
                  if len(node.input) > 1 and node.input[1] else None)
    if axes_value is None or np.size(axes_value) == 0:
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(sorted(int(a) % x.ndim for a in np.asarray(axes_value).reshape(-1)))
    return node.op_type, x, axes, bool(attribute(node, "keepdims", 1))


def reduction_rows(ctx: CaseContext, paths: list[PathResult],
                   evidence: Evidence) -> list[Observation]:
    """A reduction across the batch: the whole equals the combination of partial results
    (within a bound that grows with the reduction length; exactly for max/min), and a
    permuted batch gives the same result (exactly for max/min)."""
    layout = batch_layout(ctx.case.inputs)
    if layout is None:
        return []
    model_proto = onnx.load_from_string(ctx.case.model)
    reduction = _reduction(model_proto, ctx.case.inputs)
    model = dynamic_batch_model(ctx.case.model, layout.batched)
    parts = _parts(layout.size)
    perm = permutation(layout.size, ctx.case.seed)
    rows: list[Observation] = []
    feeds = ctx.case.inputs
    for path in paths:
        with PathRunner(ctx, path, model, kept=True) as run:  # released before the laws are judged
            try:
                full = run(feeds)
                permuted = run(take(feeds, layout.batched, perm))
            except Exception as e:
                rows += _failed(ctx, path, REDUCE_LAWS,
                                f"running the graph failed: {error_text(e)}")
                continue
            try:
                pieces: list[list[np.ndarray]] | None = [
                    run(take(feeds, layout.batched, s)) for s in parts]
            except Exception as e:  # e.g. a graph constant that fixes the batch size
                rows += _failed(ctx, path, ("partial_reduction",), "running the graph on parts "
                                f"of the batch failed: {error_text(e)}")
                pieces = None
        for j, name in enumerate(ctx.output_names):
            rows += _reduction_output_rows(ctx, evidence, path, j, name, reduction, layout,
                                           parts, full, pieces, permuted)
    return rows


def _reduction_output_rows(ctx: CaseContext, evidence: Evidence, path: PathResult, j: int,
                           name: str, reduction: tuple[str, np.ndarray, tuple[int, ...], bool]
                           | None, layout: BatchLayout, parts: list[slice],
                           full: list[np.ndarray], pieces: list[list[np.ndarray]] | None,
                           permuted: list[np.ndarray]) -> list[Observation]:
    f = full[j]
    dtype = str(f.dtype)
    rtol, atol = ctx.tolerance(dtype)
    sizes = [s.stop - s.start for s in parts]
    figures: dict[str, Any] = {"batch": layout.size, "parts": sizes}
    rows = []
    if reduction is None:
        # Unknown reduction: only the symmetric law can be stated.
        res = compare_law(ctx, "permutation_invariance", permuted[j], f, rtol, atol,
                          actual_label="f(x[p])", reference_label="f(x)")
        return [law_row(ctx, evidence, "contract:permutation_invariance", path, name, res,
                        reference_label="law:full-batch", dtype=dtype,
                        folder="contracts/permutation_invariance", extra=figures)]
    op, x, axes, keepdims = reduction
    if 0 not in axes:
        figures["note"] = "the reduction does not include the batch axis"
    bound, factor, length = laws.reduction_bound(op, x, axes, keepdims, dtype, atol, rtol, f)
    figures.update(op=op, axes=list(axes), reduction_length=length, bound_factor=factor)
    if pieces is not None:
        combined = laws.combine_partials(op, [p[j] for p in pieces], sizes)
        res = laws.bounded_law("partial_reduction", combined, f, bound, factor, atol,
                               actual_label="combine(parts)", reference_label="full",
                               figures=figures)
        rows.append(law_row(ctx, evidence, "contract:partial_reduction", path, name, res,
                            reference_label="law:full-batch", dtype=dtype,
                            folder="contracts/partial_reduction"))
    res = laws.bounded_law("permutation_invariance", permuted[j], f, bound, factor, atol,
                           actual_label="f(x[p])", reference_label="f(x)", figures=figures)
    rows.append(law_row(ctx, evidence, "contract:permutation_invariance", path, name, res,
                        reference_label="law:full-batch", dtype=dtype,
                        folder="contracts/permutation_invariance"))
    return rows
