"""Data movement and selection: gathers, scatters, TopK, CumSum, Transpose, Concat, Expand.

Index tensors either come with the batch (GatherElements, ScatterElements) or are
initializers that never depend on the batch size (Gather, TopK's K)."""

from __future__ import annotations

import numpy as np

from gero_runner.case import Arrays, GraphSpec, OpCase, Shape
from gero_runner.cases.inputs import edge_values, uniform, with_edges, with_ties
from gero_runner.cases.synthetic.common import F16_ACCUMULATION, node, node_with

_INDICES = np.asarray([[0, -1], [2, 1]], dtype=np.int64)
_TOPK = 3
_F16_SUM = F16_ACCUMULATION  # a running sum of up to 16 terms


def _x(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    return {"X": with_edges(uniform(rng, dtype, shape), edge_values(dtype))}


def _gather_elements_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    c = shape[1]
    index_shape = (shape[0], c - 2, *shape[2:])
    return {"X": with_edges(uniform(rng, dtype, shape), edge_values(dtype)),
            "indices": rng.integers(-c, c, size=index_shape).astype(np.int64)}


def _scatter_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    c = shape[1]
    index_shape = (shape[0], 3, *shape[2:])
    indices = rng.integers(-c, c, size=index_shape).astype(np.int64)
    # Two updates to the same position: reduction='add' must sum both.
    indices[:, 1] = indices[:, 0]
    return {"X": uniform(rng, dtype, shape), "indices": indices,
            "updates": uniform(rng, dtype, index_shape)}


def _scatter_add(i: Arrays) -> list[np.ndarray]:
    out = i["X"].copy()
    c = out.shape[1]
    for pos in np.ndindex(*i["indices"].shape):
        target = (pos[0], int(i["indices"][pos]) % c, *pos[2:])
        out[target] += i["updates"][pos]
    return [out]


def _topk_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape)
    # Ties at the top (lower index first) and a signed-zero pair that compares equal.
    return {"X": with_ties(x, [4.0, 3.5, -0.0])}


def _topk(i: Arrays) -> list[np.ndarray]:
    order = np.argsort(-i["X"], axis=-1, kind="stable")[..., :_TOPK]
    return [np.take_along_axis(i["X"], order, axis=-1), order]


def _cumsum_rev_excl(i: Arrays) -> list[np.ndarray]:
    x = np.flip(i["X"], axis=1)
    # Exclusive: shift by one (subtracting x from the inclusive sum would round).
    inclusive = np.cumsum(x, axis=1)
    total = np.concatenate([np.zeros_like(inclusive[:, :1]), inclusive[:, :-1]], axis=1)
    return [np.flip(total, axis=1)]


def _cumsum_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    # Moderate edges only: a running sum through ±max/4 cancels catastrophically in any
    # summation order, which says nothing about CumSum.
    x = uniform(rng, dtype, shape)
    return {"X": with_edges(x, edge_values(dtype, lo=-1e3, hi=1e3))}


def _transpose(dtype: str, inputs: Arrays) -> GraphSpec:
    rank = inputs["X"].ndim
    return GraphSpec("Transpose", ("X",), attrs={"perm": [0, rank - 1, *range(1, rank - 1)]})


def _transpose_formula(i: Arrays) -> list[np.ndarray]:
    rank = i["X"].ndim
    return [np.transpose(i["X"], (0, rank - 1, *range(1, rank - 1)))]


def _concat_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    other = (shape[0], 2, *shape[2:])
    return {"A": with_edges(uniform(rng, dtype, shape), edge_values(dtype)),
            "B": uniform(rng, dtype, other)}


def _expand_shape(dtype: str, inputs: Arrays) -> Arrays:
    # 1 on the batch axis: broadcasting keeps whatever batch the input has.
    return {"shape": np.asarray([1, 3, *inputs["X"].shape[2:]], dtype=np.int64)}


CASES = [
    OpCase("Gather", "Gather",
           node_with("Gather", ("X", "indices"), ("X",),
                     const=lambda d, i: {"indices": _INDICES}, axis=1),
           _x, lambda i: [np.take(i["X"], _INDICES % i["X"].shape[1], axis=1)],
           ((4, 5, 3), (3, 4)), note="2-D indices with a negative index, an initializer"),
    OpCase("GatherElements", "GatherElements",
           node("GatherElements", "X", "indices", axis=1), _gather_elements_inputs,
           lambda i: [np.take_along_axis(i["X"], i["indices"] % i["X"].shape[1], axis=1)],
           ((4, 7), (3, 5, 4)), note="negative indices"),
    OpCase("ScatterElements", "ScatterElements",
           node("ScatterElements", "X", "indices", "updates", axis=1, reduction="add"),
           _scatter_inputs, _scatter_add, ((4, 6), (2, 5, 3)),
           note="reduction='add' with duplicate and negative indices"),
    OpCase("TopK", "TopK",
           node_with("TopK", ("X", "K"), ("X",), outputs=("Values", "Indices"),
                     output_dtypes=(None, "int64"),
                     const=lambda d, i: {"K": np.asarray([_TOPK], dtype=np.int64)}, axis=-1),
           _topk_inputs, _topk, ((4, 10), (2, 3, 8)),
           note="ties: the lower index comes first"),
    OpCase("CumSum", "CumSum",
           node_with("CumSum", ("X", "axis"), ("X",),
                     const=lambda d, i: {"axis": np.asarray(1, dtype=np.int64)},
                     exclusive=1, reverse=1),
           _cumsum_inputs, _cumsum_rev_excl, ((4, 16), (2, 6, 5)), tolerance=_F16_SUM,
           note="exclusive=1, reverse=1 along axis 1"),
    OpCase("Transpose", "Transpose", _transpose, _x, _transpose_formula,
           ((4, 3, 5), (2, 3, 4, 5)), note="perm moves the last axis to position 1"),
    OpCase("Concat", "Concat", node("Concat", "A", "B", axis=1), _concat_inputs,
           lambda i: [np.concatenate([i["A"], i["B"]], axis=1)], ((4, 3, 5), (3, 4))),
    OpCase("Expand", "Expand",
           node_with("Expand", ("X", "shape"), ("X",), const=_expand_shape), _x,
           lambda i: [np.broadcast_to(i["X"], (i["X"].shape[0], 3, *i["X"].shape[2:]))],
           ((4, 1, 5), (3, 1))),
]
