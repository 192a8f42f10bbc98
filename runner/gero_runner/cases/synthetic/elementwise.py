"""Unary element-wise math: exponentials, roots, trigonometry, rounding and sign."""

from __future__ import annotations

import numpy as np

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import (
    edge_values,
    magnitudes,
    rounding_ties,
    with_edges,
)
from gero_runner.cases.synthetic.common import SHAPES, Generator, erf, node, x_gen


def _positive(lo_exp: float, hi_exp: float) -> Generator:
    """Positive values over decades, with the dtype's tiny, subnormal and large edges."""
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        x = magnitudes(rng, dtype, shape, lo_exp, hi_exp, signed=False)
        return {"X": with_edges(x, [v for v in edge_values(dtype, lo=0.0) if v != 0.0])}
    return generate

def _rounding(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    # Quarter steps put many exact halves in the body, not only in the edge prefix.
    x = (np.round(rng.uniform(-8, 8, size=shape) * 4) / 4).astype(dtype)
    return {"X": with_edges(x, rounding_ties(dtype) + edge_values(dtype))}

def _signed_zero_reciprocal(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = magnitudes(rng, dtype, shape, -2, 2)
    # 1/±0 = ±inf is defined and the sign of zero decides it.
    return {"X": with_edges(x, [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.0])}

_ROUND = "Round is half-to-even: ties go to the even neighbour"

CASES = [
    # exp(20) overflows float16: the correctly rounded reference is inf there.
    OpCase("Exp", "Exp", node("Exp", "X"), x_gen(-10, 10, edge_hi=20.0),
           lambda i: [np.exp(i["X"])], SHAPES),
    OpCase("Log", "Log", node("Log", "X"), _positive(-3, 3),
           lambda i: [np.log(i["X"])], SHAPES),
    OpCase("Sqrt", "Sqrt", node("Sqrt", "X"), _positive(-4, 4),
           lambda i: [np.sqrt(i["X"])], SHAPES),
    OpCase("Reciprocal", "Reciprocal", node("Reciprocal", "X"), _signed_zero_reciprocal,
           lambda i: [1.0 / i["X"]], SHAPES, note="1/±0 is ±inf by IEEE 754"),
    OpCase("Tanh", "Tanh", node("Tanh", "X"), x_gen(-6, 6),
           lambda i: [np.tanh(i["X"])], SHAPES),
    OpCase("Erf", "Erf", node("Erf", "X"), x_gen(-4, 4), lambda i: [erf(i["X"])], SHAPES),
    OpCase("Sin", "Sin", node("Sin", "X"), x_gen(-10, 10, edge_lo=-1e4, edge_hi=1e4),
           lambda i: [np.sin(i["X"])], SHAPES),
    OpCase("Cos", "Cos", node("Cos", "X"), x_gen(-10, 10, edge_lo=-1e4, edge_hi=1e4),
           lambda i: [np.cos(i["X"])], SHAPES),
    OpCase("Abs", "Abs", node("Abs", "X"), x_gen(), lambda i: [np.abs(i["X"])], SHAPES),
    OpCase("Neg", "Neg", node("Neg", "X"), x_gen(), lambda i: [np.negative(i["X"])], SHAPES),
    OpCase("Floor", "Floor", node("Floor", "X"), _rounding,
           lambda i: [np.floor(i["X"])], SHAPES),
    OpCase("Ceil", "Ceil", node("Ceil", "X"), _rounding, lambda i: [np.ceil(i["X"])], SHAPES),
    OpCase("Round", "Round", node("Round", "X"), _rounding,
           lambda i: [np.round(i["X"])], SHAPES, note=_ROUND),
    OpCase("Sign", "Sign", node("Sign", "X"), x_gen(), lambda i: [np.sign(i["X"])], SHAPES),
]

