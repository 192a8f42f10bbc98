"""Selection, clamping, casts, dequantisation and resizing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gero_runner.case import Arrays, GraphSpec, OpCase, Shape
from gero_runner.cases.graphs import onnx_type
from gero_runner.cases.inputs import cast_edges, edge_values, uniform, with_edges
from gero_runner.cases.synthetic.common import (
    GraphBuilder,
    channel_shape,
    node,
    node_with,
    row_shape,
)

# Narrowing where it rounds (to float16), widening where it must be exact.
_CAST_TO = {"float64": "float16", "float32": "float16", "float16": "float32"}
_CLIP = (-1.5, 2.0)
RESIZE_SHAPES = ((4, 2, 4, 6), (2, 3, 5, 4))
LINEAR_SCALES = (1.0, 1.0, 2.0, 0.5)
NEAREST_SCALES = (1.0, 1.0, 1.5, 2.0)


def _cast_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape, -100, 100)
    # 1 + 2⁻¹¹ + 2⁻⁴⁰ rounds up to float16 directly, but to the tie 1 + 2⁻¹¹ (and then down
    # to 1) when a float64 is narrowed through float32 first.
    return {"X": with_edges(x, [*cast_edges(dtype), 1.0 + 2.0 ** -11 + 2.0 ** -40])}


def _cast_graph(dtype: str, inputs: Arrays) -> GraphSpec:
    target = _CAST_TO[dtype]
    return GraphSpec("Cast", ("X",), attrs={"to": onnx_type(target)}, output_dtypes=(target,))


def _where_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    # X first: the output takes the dtype of the first generated tensor.
    x = with_edges(uniform(rng, dtype, shape), edge_values(dtype))
    return {"X": x, "cond": rng.random(shape) < 0.5,
            "other": uniform(rng, dtype, row_shape(shape))}


def _clip_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape, -4, 4)
    return {"X": with_edges(x, [*_CLIP, -0.0, 0.0, *edge_values(dtype)]),
            "min": np.asarray(_CLIP[0], dtype), "max": np.asarray(_CLIP[1], dtype)}


def _dq_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    """int8 for rank-3 shapes, uint8 otherwise; per-channel scale and zero point (axis 1)."""
    qtype = np.int8 if len(shape) == 3 else np.uint8
    info = np.iinfo(qtype)
    x = rng.integers(info.min, info.max + 1, size=shape).astype(qtype)
    x.reshape(-1)[:3] = [info.min, info.max, 0]
    c = (shape[1],)
    return {"X": x, "scale": rng.uniform(1e-3, 0.1, size=c).astype(dtype),
            "zero_point": rng.integers(info.min, info.max + 1, size=c).astype(qtype)}


def _dq_graph(dtype: str, inputs: Arrays) -> GraphSpec:
    return GraphSpec("DequantizeLinear", ("X",), attrs={"axis": 1},
                     constants={"scale": inputs["scale"], "zero_point": inputs["zero_point"]},
                     output_dtypes=(dtype,))


def _dq_formula(i: Arrays) -> list[np.ndarray]:
    cs = channel_shape(i["X"].shape)
    zp = i["zero_point"].astype(np.float64).reshape(cs)
    return [(i["X"].astype(np.float64) - zp) * i["scale"].reshape(cs)]


def _resize_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    return {"X": uniform(rng, dtype, shape, -3, 3)}


def _resize_graph(scales: Sequence[float], **attrs: Any) -> GraphBuilder:
    return node_with("Resize", ("X", "", "scales"), ("X",),
                     const=lambda d, i: {"scales": np.asarray(scales, dtype=np.float32)},
                     **attrs)


def _linear_axis(x: np.ndarray, axis: int, scale: float) -> np.ndarray:
    """half_pixel linear interpolation along one axis; outside coordinates clamp to the edge."""
    size = x.shape[axis]
    out = int(np.floor(size * scale))
    pos = np.clip((np.arange(out) + 0.5) / scale - 0.5, 0, size - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    frac = (pos - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    y: np.ndarray = np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac
    return y


def _nearest_axis(x: np.ndarray, axis: int, scale: float) -> np.ndarray:
    """asymmetric coordinates (x_out / scale) with nearest_mode='floor'."""
    size = x.shape[axis]
    out = int(np.floor(size * scale))
    index = np.minimum(np.floor(np.arange(out) / scale).astype(np.int64), size - 1)
    y: np.ndarray = np.take(x, index, axis=axis)
    return y


def _resize(axis_fn: Callable[[np.ndarray, int, float], np.ndarray],
            scales: Sequence[float]) -> Callable[[Arrays], list[np.ndarray]]:
    def formula(i: Arrays) -> list[np.ndarray]:
        y = i["X"]
        for axis, scale in enumerate(scales):
            if scale != 1.0:
                y = axis_fn(y, axis, float(np.float32(scale)))
        return [y]
    return formula


CASES = [
    OpCase("Cast.narrow", "Cast", _cast_graph, _cast_inputs, lambda i: [i["X"]],
           ((4, 16), (3, 5, 7)),
           note="float64/float32 → float16 (round to nearest even, overflow to inf, "
                "subnormals), float16 → float32 (exact)"),
    OpCase("Where", "Where", node("Where", "cond", "X", "other"), _where_inputs,
           lambda i: [np.where(i["cond"], i["X"], i["other"])], ((4, 3, 6), (3, 8))),
    OpCase("Clip", "Clip", node_with("Clip", ("X", "min", "max"), ("X",)), _clip_inputs,
           lambda i: [np.clip(i["X"], i["min"], i["max"])], ((4, 16), (3, 5, 7))),
    OpCase("DequantizeLinear", "DequantizeLinear",
_dq_graph, _dq_inputs, _dq_formula, ((4, 3, 5), (3, 6)), dtypes=("float16", "float32"),
           note="int8 (rank 3) and uint8 (rank 2), per-channel; opset 19 has no float64 scale"),
    OpCase("Resize.linear", "Resize",
           _resize_graph(LINEAR_SCALES, mode="linear",
                         coordinate_transformation_mode="half_pixel"),
           _resize_inputs, _resize(_linear_axis, LINEAR_SCALES), RESIZE_SHAPES,
           note="half_pixel, upsample H ×2 and downsample W ×0.5"),
    OpCase("Resize.nearest", "Resize",
           _resize_graph(NEAREST_SCALES, mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
           _resize_inputs, _resize(_nearest_axis, NEAREST_SCALES), RESIZE_SHAPES,
           note="asymmetric coordinates, nearest_mode=floor, scales 1.5 and 2"),
]
