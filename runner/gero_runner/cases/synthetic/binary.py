"""Binary and variadic arithmetic with NumPy broadcasting; operands keep the batch axis."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import away_from_zero, edge_values, uniform, with_edges
from gero_runner.cases.synthetic.common import Generator, node, node_with, row_shape

SHAPES = ((4, 3, 8), (2, 6))


def _pair(b_shape: Callable[[Shape], Shape], lo: float = -3.0, hi: float = 3.0, *,
          divisor: bool = False, edge_hi: float = 1e3) -> Generator:
    """A (with edge values) and B of ``b_shape(shape)``; B stays away from 0 when a divisor."""
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        a = with_edges(uniform(rng, dtype, shape, lo, hi),
                       edge_values(dtype, lo=-edge_hi, hi=edge_hi))
        bs = b_shape(shape)
        b = away_from_zero(rng, dtype, bs) if divisor else uniform(rng, dtype, bs, lo, hi)
        return {"A": a, "B": b}
    return generate


def _same(shape: Shape) -> Shape:
    return shape


def _last(shape: Shape) -> Shape:
    return (shape[-1],)


def _nan_pair(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    a = uniform(rng, dtype, shape)
    b = uniform(rng, dtype, shape)
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    # NaN on either side, on both, and against ±inf: Max/Min propagate NaN (IEEE maximum).
    flat_a[:5] = [np.nan, 1.0, np.nan, np.inf, -np.inf]
    flat_b[:5] = [1.0, np.nan, np.nan, np.nan, 2.0]
    return {"A": a, "B": b}


def _three(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    a = with_edges(uniform(rng, dtype, shape), [0.0, -0.0, 1.0])
    b = uniform(rng, dtype, row_shape(shape))
    c = uniform(rng, dtype, shape)
    c.reshape(-1)[:3] = [-0.0, 0.0, 1.0]
    return {"A": a, "B": b, "C": c}


def _pow_pair(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    base = rng.uniform(0.1, 4.0, size=shape).astype(dtype)
    exponent = rng.uniform(-2.0, 3.0, size=row_shape(shape)).astype(dtype)
    # Integer exponents of a negative base are defined; so is x ** 0 == 1 for any x (0 too).
    exponent[0] = 3.0
    base[0].reshape(-1)[:4] = [-2.0, -1.5, 0.0, -0.0]
    exponent[1] = 0.0
    base[1].reshape(-1)[:2] = [0.0, -1.5]
    return {"A": base, "B": exponent}


def _mod_pair(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    a = uniform(rng, dtype, shape, -20, 20)
    b = away_from_zero(rng, dtype, shape, 0.5, 5.0)
    a.reshape(-1)[:4] = [-0.0, 7.5, -7.5, 6.0]
    b.reshape(-1)[:4] = [2.0, 2.5, 2.5, -3.0]
    return {"A": a, "B": b}


def _int_mod_pair(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    a = rng.integers(-50, 50, size=shape).astype(dtype)
    b = rng.integers(1, 9, size=shape) * rng.choice([-1, 1], size=shape)
    return {"A": a, "B": b.astype(dtype)}


def _fmod(i: Arrays) -> list[np.ndarray]:
    return [np.fmod(i["A"], i["B"])]


CASES = [
    OpCase("Add", "Add", node("Add", "A", "B"), _pair(row_shape),
           lambda i: [i["A"] + i["B"]], SHAPES),
    # B is an initializer broadcast over every leading axis.
    OpCase("Sub", "Sub", node_with("Sub", ("A", "B"), ("A",)), _pair(_last),
           lambda i: [i["A"] - i["B"]], SHAPES),
    OpCase("Mul", "Mul", node("Mul", "A", "B"), _pair(_same),
           lambda i: [i["A"] * i["B"]], SHAPES),
    OpCase("Div", "Div", node("Div", "A", "B"), _pair(row_shape, divisor=True),
           lambda i: [i["A"] / i["B"]], SHAPES),
    OpCase("Pow", "Pow", node("Pow", "A", "B"), _pow_pair,
           lambda i: [np.power(i["A"], i["B"])], SHAPES),
    OpCase("Max", "Max", node("Max", "A", "B"), _pair(row_shape),
           lambda i: [np.maximum(i["A"], i["B"])], SHAPES),
    OpCase("Min", "Min", node("Min", "A", "B", "C"), _three,
           lambda i: [np.minimum(np.minimum(i["A"], i["B"]), i["C"])], SHAPES,
           note="variadic: three operands, one broadcast"),
    OpCase("Max.nan", "Max", node("Max", "A", "B"), _nan_pair,
           lambda i: [np.maximum(i["A"], i["B"])], ((4, 8), (2, 3, 4)),
           note="NaN propagates through Max; the NaN positions are contract issues by design"),
    OpCase("Mod.fmod", "Mod", node("Mod", "A", "B", fmod=1), _mod_pair, _fmod, SHAPES,
           note="fmod=1: the result takes the sign of the dividend (C fmod)"),
    OpCase("Mod.int", "Mod", node("Mod", "A", "B"), _int_mod_pair,
           lambda i: [np.mod(i["A"], i["B"])], SHAPES, dtypes=("int32", "int64"),
           note="fmod=0 on integers: the result takes the sign of the divisor"),
]
