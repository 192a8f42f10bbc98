"""Laws an entry declares by name: probabilities, masked rows, LayerNorm variance.

Each reads what it needs (axis, epsilon, mask) from the case's graph, so the same law
applies to any graph with the pattern, and is checked on every path's outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import onnx

from gero_runner.checks.contracts import laws
from gero_runner.checks.contracts.model_facts import attribute, constant, find_node, producer
from gero_runner.checks.contracts.paths import Evidence, PathRunner, execution_row, law_row
from gero_runner.errors import error_text
from gero_runner.schema import Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult

MASK_THRESHOLD = -1e3
"""An additive mask value at or below this masks its key."""

Rows = list[Observation]


def _output_index(ctx: CaseContext, node: onnx.NodeProto | None) -> int | None:
    """The node's output when the graph returns it, else the graph's first output (the law
    is about what the graph computes, e.g. a masked-attention pattern ending after the
    Softmax); None for a graph without outputs."""
    if node is not None and node.output[0] in ctx.output_names:
        return ctx.output_names.index(node.output[0])
    return 0 if ctx.output_names else None


def _first_float_feed(ctx: CaseContext) -> str | None:
    return next((k for k, v in ctx.case.inputs.items() if v.dtype.kind == "f"), None)


def _missing(ctx: CaseContext, paths: list[PathResult], law: str, message: str) -> Rows:
    return [execution_row(ctx, f"contract:{law}", p, "", ctx.case.dtype, f"{law}: {message}",
                          f"law:{law}") for p in paths]


def extreme_logits(x: np.ndarray, axis: int | None) -> np.ndarray:
    """The input with rows of huge-magnitude logits, a −inf logit and a +inf logit.

    With an axis (Softmax): row 0 alternates ±max/4, row 1 has one −inf, row 2 one +inf.
    Without (Sigmoid): the first elements are ±max/4, ±inf, ±max.
    """
    x = np.array(x, copy=True)
    big = float(np.finfo(x.dtype).max)
    if axis is None:
        flat = x.reshape(-1)
        values = [big / 4, -big / 4, np.inf, -np.inf, big, -big]
        flat[:len(values)] = values[:flat.size]
        return x
    rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    length = rows.shape[1]
    rows[0] = np.where(np.arange(length) % 2 == 0, big / 4, -big / 4)
    if rows.shape[0] > 1:
        rows[1, length // 2] = -np.inf
    if rows.shape[0] > 2:
        rows[2, length // 3] = np.inf
    moved_shape = np.moveaxis(x, axis, -1).shape
    return np.moveaxis(rows.reshape(moved_shape), -1, axis).copy()


def probability_rows(ctx: CaseContext, paths: list[PathResult], evidence: Evidence) -> Rows:
    """Softmax / Sigmoid outputs are probabilities, on the case's inputs and on extreme
    logits (huge magnitudes, ±inf)."""
    model = onnx.load_from_string(ctx.case.model)
    node = find_node(model, ("Softmax", "Sigmoid"))
    j = _output_index(ctx, node)
    x_name = node.input[0] if node is not None else _first_float_feed(ctx)
    if j is None or x_name is None:
        return _missing(ctx, paths, "probability", "the graph has no output or no float input")
    op = node.op_type if node is not None else "graph"
    # Softmax: rows along its axis; Sigmoid: element-wise; a graph without either (e.g. a
    # decomposition) declares its row axis on the case (None: element-wise).
    raw = (attribute(node, "axis", -1) if node is not None and op == "Softmax"
           else None if op == "Sigmoid" else ctx.case.probability_axis)
    axis = None
    if raw is not None:
        x_rank = np.ndim(ctx.case.inputs[x_name]) if x_name in ctx.case.inputs else 0
        axis = int(raw) % x_rank if x_rank else int(raw)
    rows: Rows = []
    name = ctx.output_names[j]
    for path in paths:
        assert path.outputs is not None
        y = path.outputs[j]
        rtol, _ = ctx.tolerance(str(y.dtype))
        res = laws.probability_law(y, axis, rtol)
        rows.append(law_row(ctx, evidence, "contract:probability", path, name, res,
                            reference_label="law:row-sum-1", dtype=str(y.dtype),
                            folder="contracts/probability",
                            extra={"op": op, "axis": axis}))
    if x_name not in ctx.case.inputs or ctx.case.inputs[x_name].dtype.kind != "f":
        return rows
    probe = extreme_logits(ctx.case.inputs[x_name], axis)
    probe_file = evidence.add("contracts/probability_extreme/input.npy", probe)
    feeds = {**ctx.case.inputs, x_name: probe}
    for path in paths:
        try:
            y = PathRunner(ctx, path, ctx.case.model, kept=True).once(feeds)[j]
        except Exception as e:
            rows.append(execution_row(ctx, "contract:probability_extreme", path, name,
                                      ctx.case.dtype, f"probability_extreme: {error_text(e)}",
                                      "law:row-sum-1"))
            continue
        rtol, _ = ctx.tolerance(str(y.dtype))
        res = laws.probability_law(y, axis, rtol, law="probability_extreme")
        rows.append(law_row(ctx, evidence, "contract:probability_extreme", path, name, res,
                            reference_label="law:row-sum-1", dtype=str(y.dtype),
                            folder="contracts/probability_extreme",
                            extra={"op": op, "axis": axis, "input_file": probe_file}))
    return rows


def _fill_is_masking(value: np.ndarray | None) -> bool:
    return value is not None and value.size > 0 and bool(np.all(value <= MASK_THRESHOLD))


def find_keep_mask(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                   softmax: onnx.NodeProto) -> np.ndarray | None:
    """Which keys the graph keeps: from Where(cond, x, −inf) or x + (large negative where
    masked) feeding the Softmax."""
    node = producer(model, softmax.input[0])
    if node is None:
        return None
    if node.op_type == "Where":
        cond = constant(model, node.input[0], feeds)
        if cond is None:
            return None
        if _fill_is_masking(constant(model, node.input[2], feeds)):
            return np.asarray(cond, dtype=bool)
        if _fill_is_masking(constant(model, node.input[1], feeds)):
            return ~np.asarray(cond, dtype=bool)
        return None
    if node.op_type == "Add":
        for name in reversed(node.input):
            bias = constant(model, name, feeds)
            if bias is None or bias.dtype.kind != "f":
                continue
            b = np.asarray(bias, dtype=np.float64)
            if np.all((b == 0) | (b <= MASK_THRESHOLD)) and np.any(b <= MASK_THRESHOLD):
                return b > MASK_THRESHOLD
    return None


def masked_rows_rows(ctx: CaseContext, paths: list[PathResult], evidence: Evidence) -> Rows:
    model = onnx.load_from_string(ctx.case.model)
    node = find_node(model, "Softmax")
    j = _output_index(ctx, node)
    keep = find_keep_mask(model, ctx.case.inputs, node) if node is not None else None
    if node is None or j is None or keep is None:
        return _missing(ctx, paths, "masked_rows",
                        "no Softmax fed by a Where(mask, x, −inf) or an additive mask found")
    rows: Rows = []
    for path in paths:
        assert path.outputs is not None
        y = path.outputs[j]
        axis = int(attribute(node, "axis", -1)) % max(y.ndim, 1)
        rtol, _ = ctx.tolerance(str(y.dtype))
        try:
            res = laws.masked_rows_law(y, keep, axis, rtol)
        except ValueError as e:  # mask does not broadcast to the output
            rows.append(execution_row(ctx, "contract:masked_rows", path, ctx.output_names[j],
                                      str(y.dtype), f"masked_rows: {e}", "law:masked-zero"))
            continue
        rows.append(law_row(ctx, evidence, "contract:masked_rows", path, ctx.output_names[j],
                            res, reference_label="law:masked-zero", dtype=str(y.dtype),
                            folder="contracts/masked_rows", extra={"axis": axis}))
    return rows


def layernorm_variance_rows(ctx: CaseContext, paths: list[PathResult],
                            evidence: Evidence) -> Rows:
    model = onnx.load_from_string(ctx.case.model)
    node = find_node(model, "LayerNormalization")
    j = _output_index(ctx, node)
    if node is not None:
        x = constant(model, node.input[0], ctx.case.inputs)
        # The attribute is a float32; the runtime adds exactly that value.
        eps = float(np.float32(attribute(node, "epsilon", 1e-5)))
        raw_axis = int(attribute(node, "axis", -1))
        scale = constant(model, node.input[1], ctx.case.inputs) if len(node.input) > 1 else None
        bias = (constant(model, node.input[2], ctx.case.inputs)
                if len(node.input) > 2 and node.input[2] else None)
    else:
        # A decomposed LayerNorm declares the ε it promises on the case.
        feed = _first_float_feed(ctx)
        x = ctx.case.inputs[feed] if feed is not None else None
        eps = ctx.case.layernorm_epsilon
        raw_axis = ctx.case.layernorm_axis
        scale = bias = None
    if j is None or x is None:
        return _missing(ctx, paths, "layernorm_variance",
                        "no LayerNormalization input and output found in the graph")
    axes = tuple(range(raw_axis % x.ndim, x.ndim))
    rows: Rows = []
    for path in paths:
        assert path.outputs is not None
        y = path.outputs[j]
        rtol, atol = ctx.tolerance(str(y.dtype))
        res = laws.layernorm_variance_law(x, y, eps, axes, rtol, atol, scale, bias)
        rows.append(law_row(ctx, evidence, "contract:layernorm_variance", path,
                            ctx.output_names[j], res, reference_label="law:v/(v+eps)",
                            dtype=str(y.dtype), folder="contracts/layernorm_variance",
                            extra={"axes": list(axes)}))
    return rows


NAMED: dict[str, Callable[[CaseContext, list[PathResult], Evidence], Rows]] = {
    "probability": probability_rows,
    "masked_rows": masked_rows_rows,
    "layernorm_variance": layernorm_variance_rows,
}
