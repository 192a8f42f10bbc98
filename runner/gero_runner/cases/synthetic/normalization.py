"""Normalisations: LayerNormalization (with the variance-includes-epsilon law),
BatchNormalization in inference mode, InstanceNormalization and LpNormalization."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import normal, uniform
from gero_runner.cases.synthetic.common import channel_shape, f32, node, node_with

_EPS = 1e-5
LN_SHAPES = ((4, 32), (2, 3, 24))
NCHW_SHAPES = ((4, 3, 5, 5), (2, 4, 9))


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float,
               axis: int = -1) -> np.ndarray:
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y: np.ndarray = (x - mean) / np.sqrt(var + eps) * scale + bias
    return y


def _ln_affine(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = normal(rng, dtype, shape, 2.0) + np.asarray(1.0, dtype)
    width = shape[-1:]
    return {"X": x, "scale": uniform(rng, dtype, width, 0.5, 2.0),
            "bias": uniform(rng, dtype, width, -1.0, 1.0)}


def _ln_unit(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    """Rows with ordinary variance, variance near epsilon, and near-constant rows far from 0."""
    rows = normal(rng, "float64", shape).reshape(-1, shape[-1])
    n = rows.shape[0]
    # Spread per row: 1, ~sqrt(eps) (variance ≈ eps), tiny (variance ≪ eps), and an offset
    # of 100 / 1000 with small spread (cancellation in E[x²] - E[x]²).
    spread = np.ones(n)
    offset = np.zeros(n)
    spread[1 % n] = np.sqrt(_EPS)
    spread[2 % n] = 1e-4 * np.sqrt(_EPS)
    offset[3 % n], spread[3 % n] = 100.0, 0.05
    if n > 4:
        offset[4], spread[4] = 1000.0, 0.5
    x = (rows * spread[:, None] + offset[:, None]).reshape(shape).astype(dtype)
    width = shape[-1:]
    return {"X": x, "scale": np.ones(width, dtype), "bias": np.zeros(width, dtype)}


def _ln_formula(i: Arrays) -> list[np.ndarray]:
    return [layer_norm(i["X"], i["scale"], i["bias"], f32(_EPS))]


_LN = node_with("LayerNormalization", ("X", "scale", "bias"), ("X",), axis=-1, epsilon=_EPS)


def _bn_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    c = (shape[1],)
    return {"X": normal(rng, dtype, shape, 2.0), "scale": uniform(rng, dtype, c, 0.5, 2.0),
            "B": uniform(rng, dtype, c, -1, 1), "mean": uniform(rng, dtype, c, -1, 1),
            "var": uniform(rng, dtype, c, 0.0, 2.0)}


def _bn_formula(i: Arrays) -> list[np.ndarray]:
    cs = channel_shape(i["X"].shape)
    scale, bias, mean, var = (i[k].reshape(cs) for k in ("scale", "B", "mean", "var"))
    return [(i["X"] - mean) / np.sqrt(var + f32(_EPS)) * scale + bias]


def _in_formula(i: Arrays) -> list[np.ndarray]:
    x = i["X"]
    cs = channel_shape(x.shape)
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return [(x - mean) / np.sqrt(var + f32(_EPS)) * i["scale"].reshape(cs)
            + i["B"].reshape(cs)]


def _in_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    c = (shape[1],)
    return {"X": normal(rng, dtype, shape, 3.0) + np.asarray(2.0, dtype),
            "scale": uniform(rng, dtype, c, 0.5, 2.0), "B": uniform(rng, dtype, c, -1, 1)}


def _lp_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape)
    # An all-zero row: ONNX leaves it at zero (no division by a zero norm).
    x.reshape(-1, shape[-1])[1] = 0.0
    return {"X": x}


def _lp(p: int) -> Callable[[Arrays], list[np.ndarray]]:
    def formula(i: Arrays) -> list[np.ndarray]:
        x = i["X"]
        norm = (np.abs(x) ** p).sum(axis=-1, keepdims=True) ** (1.0 / p)
        return [np.where(norm == 0, 0.0, x / np.where(norm == 0, 1.0, norm))]
    return formula


CASES = [
    OpCase("LayerNormalization", "LayerNormalization", _LN, _ln_unit, _ln_formula, LN_SHAPES,
           contracts=("layernorm_variance",), variants=("layernorm_decomposed",),
           note="unit scale, zero bias: rows at variance ≈ ε, ≪ ε, and near-constant rows "
                "at offsets 100 and 1000"),
    OpCase("LayerNormalization.affine", "LayerNormalization", _LN, _ln_affine, _ln_formula,
           LN_SHAPES, variants=("layernorm_decomposed",)),
    OpCase("BatchNormalization", "BatchNormalization",
           node_with("BatchNormalization", ("X", "scale", "B", "mean", "var"), ("X",),
                     epsilon=_EPS),
           _bn_inputs, _bn_formula, NCHW_SHAPES, variants=("batchnorm_mul_add",),
           note="inference mode: running mean and variance are initializers"),
    OpCase("InstanceNormalization", "InstanceNormalization",
           node_with("InstanceNormalization", ("X", "scale", "B"), ("X",), epsilon=_EPS),
           _in_inputs, _in_formula, NCHW_SHAPES),
    OpCase("LpNormalization", "LpNormalization", node("LpNormalization", "X", axis=-1, p=2),
           _lp_inputs, _lp(2), ((4, 16), (3, 5, 7))),
]
