"""Activations: rectifiers, sigmoids, smooth ramps and GELU through its Erf decomposition."""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, helper

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import edge_values, uniform, with_edges
from gero_runner.cases.synthetic.common import (
    SHAPES,
    channel_shape,
    erf,
    f32,
    graph_model,
    node,
    node_with,
    x_gen,
)

_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-|x|) never overflows; both branches are exact rearrangements.
    e = np.exp(-np.abs(x))
    y: np.ndarray = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return y


def _hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(alpha * x + beta, 0.0, 1.0)


def _prelu_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = with_edges(uniform(rng, dtype, shape), edge_values(dtype, lo=-1e3, hi=1e3))
    return {"X": x, "slope": uniform(rng, dtype, channel_shape(shape), -0.5, 0.5)}


def _sqrt2(dtype: str) -> np.ndarray:
    """√2 as the graph holds it: rounded to the dtype (float16 1.4140625)."""
    return np.asarray(np.sqrt(2.0), dtype)


def _gelu_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    # The graph's √2 constant rides along (not a feed), so the formula divides by it too.
    return {**x_gen(-5, 5, edge_lo=-1e3, edge_hi=1e3)(rng, dtype, shape), "sqrt2": _sqrt2(dtype)}


def _gelu(dtype: str, inputs: Arrays) -> ModelProto:
    """0.5 · x · (1 + erf(x / √2)): the opset-19 spelling of Gelu (a node from opset 20)."""
    consts = {"sqrt2": inputs.get("sqrt2", _sqrt2(dtype)), "one": np.asarray(1.0, dtype),
              "half": np.asarray(0.5, dtype)}
    nodes = [helper.make_node("Div", ["X", "sqrt2"], ["scaled"]),
             helper.make_node("Erf", ["scaled"], ["erf"]),
             helper.make_node("Add", ["erf", "one"], ["shifted"]),
             helper.make_node("Mul", ["X", "shifted"], ["xs"]),
             helper.make_node("Mul", ["xs", "half"], ["Y"])]
    return graph_model(nodes, inputs, ("X",), [("Y", dtype, inputs["X"].shape)], consts,
                       "gero_gelu_erf")


def _gelu_formula(i: Arrays) -> list[np.ndarray]:
    """The graph's arithmetic: x divided by its dtype-rounded √2, not the exact one."""
    x = i["X"]
    sqrt2 = i.get("sqrt2", np.sqrt(2.0))
    return [0.5 * x * (1.0 + erf(x / sqrt2))]


def _relu_nonfinite(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape)
    return {"X": with_edges(x, [np.inf, -np.inf, np.nan, -0.0, 0.0])}


CASES = [
    OpCase("Relu", "Relu", node("Relu", "X"), x_gen(-3, 3), lambda i: [np.maximum(i["X"], 0)],
           SHAPES),
    OpCase("Relu.nonfinite", "Relu", node("Relu", "X"), _relu_nonfinite,
           lambda i: [np.where(np.isnan(i["X"]), i["X"], np.maximum(i["X"], 0))],
           ((4, 8), (2, 3, 4)), note="Relu(inf)=inf, Relu(-inf)=0, Relu(NaN)=NaN"),
    OpCase("LeakyRelu", "LeakyRelu", node("LeakyRelu", "X", alpha=0.01), x_gen(),
           lambda i: [np.where(i["X"] >= 0, i["X"], f32(0.01) * i["X"])], SHAPES),
    OpCase("Elu", "Elu", node("Elu", "X", alpha=0.5), x_gen(-6, 3, edge_lo=-1e3, edge_hi=1e3),
           lambda i: [np.where(i["X"] > 0, i["X"], 0.5 * np.expm1(i["X"]))], SHAPES),
    OpCase("Selu", "Selu", node("Selu", "X"), x_gen(-6, 3, edge_lo=-1e3, edge_hi=1e3),
           lambda i: [f32(_SELU_GAMMA) * np.where(i["X"] > 0, i["X"],
                                                  f32(_SELU_ALPHA) * np.expm1(i["X"]))],
           SHAPES),
    OpCase("Celu", "Celu", node("Celu", "X", alpha=2.0), x_gen(-6, 3, edge_lo=-1e3, edge_hi=1e3),
           lambda i: [np.maximum(i["X"], 0) + np.minimum(0, 2.0 * np.expm1(i["X"] / 2.0))],
           SHAPES, dtypes=("float32",), note="ONNX defines Celu for float32 only"),
    OpCase("Sigmoid", "Sigmoid", node("Sigmoid", "X"), x_gen(-12, 12),
           lambda i: [_sigmoid(i["X"])], SHAPES, contracts=("probability",),
           variants=("sigmoid_decomposed",)),
    OpCase("HardSigmoid", "HardSigmoid", node("HardSigmoid", "X", alpha=0.25, beta=0.5),
           x_gen(-5, 5), lambda i: [_hard_sigmoid(i["X"], 0.25, 0.5)], SHAPES),
    OpCase("HardSwish", "HardSwish", node("HardSwish", "X"), x_gen(-5, 5, edge_lo=-1e3,
                                                                   edge_hi=1e3),
           lambda i: [i["X"] * _hard_sigmoid(i["X"], f32(1.0 / 6.0), 0.5)], SHAPES,
           note="alpha = 1/6 as ONNX's function body spells it: a float32 attribute"),
    OpCase("Softplus", "Softplus", node("Softplus", "X"), x_gen(-20, 20, edge_lo=-1e3,
                                                                edge_hi=1e3),
           lambda i: [np.logaddexp(0.0, i["X"])], SHAPES),
    OpCase("Softsign", "Softsign", node("Softsign", "X"), x_gen(-10, 10),
           lambda i: [i["X"] / (1.0 + np.abs(i["X"]))], SHAPES),
    OpCase("PRelu", "PRelu", node_with("PRelu", ("X", "slope"), ("X",)), _prelu_inputs,
           lambda i: [np.where(i["X"] < 0, i["slope"] * i["X"], i["X"])], SHAPES,
           note="per-channel slope (an initializer) broadcast over axis 1"),
    OpCase("Gelu.erf", "Gelu", _gelu, _gelu_inputs, _gelu_formula,
           SHAPES, note="graph Div/Erf/Add/Mul/Mul; Gelu itself is an opset-20 operator"),
]
