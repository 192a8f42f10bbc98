"""Unary element-wise math and activations."""

from __future__ import annotations

import numpy as np

from gero_runner.cases.base import GraphSpec, OpCase
from gero_runner.cases.inputs import edge_values, uniform, with_edges

SHAPES = ((4, 16), (3, 5, 7))


def _unary(op_type: str, **attrs: object):  # type: ignore[no-untyped-def]
    return lambda dtype, inputs: GraphSpec(op_type, ("X",), attrs=attrs)


def _x(lo: float, hi: float, *, nonfinite: bool = False, edge_lo: float = -np.inf,
       edge_hi: float = np.inf):  # type: ignore[no-untyped-def]
    def generate(rng, dtype, shape):  # type: ignore[no-untyped-def]
        x = uniform(rng, dtype, shape, lo, hi)
        return {"X": with_edges(x, edge_values(dtype, nonfinite=nonfinite, lo=edge_lo,
                                               hi=edge_hi))}
    return generate


CASES = [
    OpCase("Exp", "Exp", _unary("Exp"), _x(-10, 10, edge_hi=20.0),
           lambda i: [np.exp(i["X"])], SHAPES),
    OpCase("Relu", "Relu", _unary("Relu"), _x(-3, 3), lambda i: [np.maximum(i["X"], 0)], SHAPES),
    OpCase("Softmax", "Softmax", _unary("Softmax", axis=-1), _x(-8, 8, edge_lo=-100, edge_hi=100),
           lambda i: [_softmax(i["X"])], SHAPES, contracts=("probability",)),
]


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
