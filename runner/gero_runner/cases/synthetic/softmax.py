"""Softmax and friends, including the masked-attention patterns whose fully masked rows
must come out as exact zeros."""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, helper

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import uniform, with_ties
from gero_runner.cases.synthetic.common import (
    SHAPES,
    Generator,
    graph_model,
    node,
    row_shape,
    x_gen,
)

# (N, L) and (N, H, L): a mask of shape (N, 1, L) masks the same keys for every head.
MASK_SHAPES = ((4, 12), (3, 4, 10))
_ADDITIVE_MASK = -1e4


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    y: np.ndarray = e / e.sum(axis=axis, keepdims=True)
    return y


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    y: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return y


def hardmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """One-hot of the first maximum along ``axis`` (ties go to the lowest index)."""
    index = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, index, 1.0, axis=axis)
    return out


def where_softmax(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """What Where(keep, x, -inf) → Softmax computes: a fully masked row is NaN (-inf - -inf).
    The masked-rows law (such a row is zeros) is the contract row, not this formula."""
    return softmax(np.where(keep, x, -np.inf))


def additive_softmax(inputs: Arrays) -> np.ndarray:
    """What Add(x, bias) → Softmax computes: a fully masked row is softmax(x - 1e4), a
    proper distribution, not the law's zeros. The Add's result is the dtype-rounded sum
    when the generator provides it."""
    masked = inputs.get("masked")
    return softmax(inputs["X"] + inputs["bias"] if masked is None else masked)


def _keep_mask(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Keys to keep, (N, 1, L): example 1 is fully masked, example 0 keeps everything."""
    mask_shape = row_shape(shape) if len(shape) > 2 else shape
    keep = rng.random(mask_shape) < 0.6
    keep[0] = True
    keep[1] = False
    return keep


def _where_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    return {"X": uniform(rng, dtype, shape, -6, 6), "keep": _keep_mask(rng, shape)}


def _additive_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    keep = _keep_mask(rng, shape)
    bias = np.where(keep, 0.0, _ADDITIVE_MASK).astype(dtype)
    x = uniform(rng, dtype, shape, -6, 6)
    # The graph's Add rounds x + bias into the dtype (near -1e4 a float32 step is ~1e-3):
    # the sum rides along (not a feed) so the formula starts from the same values.
    return {"X": x, "bias": bias, "masked": x + bias}


def _where_graph(dtype: str, inputs: Arrays) -> ModelProto:
    nodes = [helper.make_node("Where", ["keep", "X", "neg_inf"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["Y"], axis=-1)]
    return graph_model(nodes, inputs, ("X", "keep"), [("Y", dtype, inputs["X"].shape)],
                       {"neg_inf": np.asarray(-np.inf, dtype)}, "gero_masked_softmax_where")


def _additive_graph(dtype: str, inputs: Arrays) -> ModelProto:
    nodes = [helper.make_node("Add", ["X", "bias"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["Y"], axis=-1)]
    return graph_model(nodes, inputs, ("X", "bias"), [("Y", dtype, inputs["X"].shape)], {},
                       "gero_masked_softmax_additive")


def _tied(lo: float, hi: float) -> Generator:
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        x = uniform(rng, dtype, shape, lo, hi)
        return {"X": with_ties(x, [float(x.max()) + 1.0])}
    return generate


CASES = [
    OpCase("Softmax", "Softmax", node("Softmax", "X", axis=-1),
           x_gen(-8, 8, edge_lo=-100, edge_hi=100), lambda i: [softmax(i["X"])], SHAPES,
           contracts=("probability",), variants=("softmax_decomposed",)),
    OpCase("LogSoftmax", "LogSoftmax", node("LogSoftmax", "X", axis=-1),
           x_gen(-8, 8, edge_lo=-100, edge_hi=100), lambda i: [log_softmax(i["X"])], SHAPES,
           variants=("logsoftmax_decomposed",)),
    OpCase("Hardmax", "Hardmax", node("Hardmax", "X", axis=-1), _tied(-3, 3),
           lambda i: [hardmax(i["X"])], SHAPES, note="ties: the first maximum wins"),
    OpCase("MaskedSoftmax.where", "Softmax", _where_graph, _where_inputs,
           lambda i: [where_softmax(i["X"], i["keep"])], MASK_SHAPES,
           contracts=("masked_rows",),
           note="Where(keep, x, -inf) → Softmax; example 1 is fully masked: the law says "
                "zeros (contract:masked_rows), the graph (and its formula) gives NaN"),
    OpCase("MaskedSoftmax.additive", "Softmax", _additive_graph, _additive_inputs,
           lambda i: [additive_softmax(i)], MASK_SHAPES,
           contracts=("masked_rows",),
           note=f"x + ({_ADDITIVE_MASK:g} where masked) → Softmax; example 1 is fully "
                "masked: the law says zeros (contract:masked_rows), the graph (and its "
                "formula) gives softmax(x + mask)"),
]
