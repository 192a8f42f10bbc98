"""Small builders shared by the synthetic families: graphs, generators and float64 helpers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, helper, numpy_helper

from gero_runner.case import Arrays, GraphSpec, Shape
from gero_runner.cases.graphs import make_model, value_info
from gero_runner.cases.inputs import edge_values, uniform, with_edges

Generator = Callable[[np.random.Generator, str, Shape], Arrays]
GraphBuilder = Callable[[str, Arrays], Any]

# Sums and dot products of K terms: ONNX leaves the accumulation precision open, and an
# implementation that accumulates in float16 (as onnx's reference evaluator does) rounds
# K times, ~K/2 ulp of the running sum, which cancellation makes large next to the result.
# This is the operator's own bound, for float16 only; ORT's CPU kernels meet the default.
F16_ACCUMULATION: dict[str, tuple[float, float]] = {"float16": (1e-2, 1e-2)}

# Shapes for element-wise entries: batch of 4 first, then a rank-3 shape.
SHAPES = ((4, 16), (3, 5, 7))

_erf = np.frompyfunc(math.erf, 1, 1)


def f32(value: float) -> float:
    """An ONNX float attribute as the runtime sees it: stored as float32."""
    return float(np.float32(value))


def erf(x: np.ndarray) -> np.ndarray:
    """Element-wise float64 erf (math.erf; NumPy has none)."""
    return np.asarray(_erf(x), dtype=np.float64).reshape(np.shape(x))


def node(op_type: str, *feeds: str, outputs: Sequence[str] = ("Y",),
         output_dtypes: Sequence[str | None] | None = None, **attrs: Any) -> GraphBuilder:
    """A single node whose inputs are all graph inputs, in this order."""
    def build(dtype: str, inputs: Arrays) -> GraphSpec:
        return GraphSpec(op_type, tuple(feeds), outputs=tuple(outputs), attrs=attrs,
                         output_dtypes=tuple(output_dtypes) if output_dtypes else None)
    return build


def node_with(op_type: str, order: Sequence[str], feeds: Sequence[str],
              outputs: Sequence[str] = ("Y",), output_dtypes: Sequence[str | None] | None = None,
              const: Callable[[str, Arrays], Arrays] | None = None, **attrs: Any) -> GraphBuilder:
    """A single node with initializers: ``order`` is the node input order ('' = absent);
    names not in ``feeds`` are initializers, taken from the generated tensors (or ``const``)."""
    def build(dtype: str, inputs: Arrays) -> GraphSpec:
        extra = const(dtype, inputs) if const else {}
        constants = {n: extra[n] if n in extra else inputs[n]
                     for n in order if n and n not in feeds}
        return GraphSpec(op_type, tuple(feeds), outputs=tuple(outputs), attrs=attrs,
                         constants=constants, node_inputs=tuple(order),
                         output_dtypes=tuple(output_dtypes) if output_dtypes else None)
    return build


def graph_model(nodes: list[Any], inputs: Arrays, feeds: Sequence[str],
                outputs: Sequence[tuple[str, str, Shape]], initializers: Arrays,
                name: str) -> ModelProto:
    """A multi-node model; ``outputs`` are (name, dtype, shape)."""
    graph = helper.make_graph(
        nodes, name,
        [value_info(n, inputs[n].dtype, inputs[n].shape) for n in feeds],
        [value_info(n, d, s) for n, d, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), name=k)
                     for k, v in initializers.items()],
    )
    return make_model(graph)


def x_gen(lo: float = -3.0, hi: float = 3.0, *, nonfinite: bool = False,
          edge_lo: float = -np.inf, edge_hi: float = np.inf, edges: bool = True,
          name: str = "X") -> Generator:
    """One uniform input with the dtype's edge values (restricted to [edge_lo, edge_hi])."""
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        x = uniform(rng, dtype, shape, lo, hi)
        if edges:
            x = with_edges(x, edge_values(dtype, nonfinite=nonfinite, lo=edge_lo, hi=edge_hi))
        return {name: x}
    return generate


def row_shape(shape: Shape) -> Shape:
    """The shape of an operand broadcast over axis 1: (N, 1, ...rest)."""
    return (shape[0], 1, *shape[2:])


def channel_shape(shape: Shape) -> Shape:
    """A per-channel parameter broadcast against (N, C, ...): (C, 1, ...)."""
    return (shape[1], *([1] * (len(shape) - 2)))
