"""Convolutions and pooling over NC(H)W tensors, with asymmetric pads, strides, dilations
and groups; float64 formulas written out window by window."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import edge_values, uniform, with_edges
from gero_runner.cases.synthetic.common import F16_ACCUMULATION, Generator, node, node_with

SHAPES = ((4, 3, 8, 8), (2, 4, 7, 6))
_F16_DOT = F16_ACCUMULATION  # C·kh·kw terms
_F16_SUM = F16_ACCUMULATION  # means of up to 64 terms

# ONNX attributes, and the same keyword arguments to the float64 formulas below.
CONV: dict[str, Any] = {"kernel_shape": [3, 3], "pads": [1, 0, 1, 1], "strides": [1, 2],
                        "dilations": [1, 2], "group": 2}
CONVT: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 0, 1],
                         "output_padding": [1, 0]}
MAXPOOL: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                           "ceil_mode": 1}
AVGPOOL: dict[str, Any] = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1],
                           "count_include_pad": 0}


def _split_pads(pads: Sequence[int]) -> tuple[list[int], list[int]]:
    half = len(pads) // 2
    return list(pads[:half]), list(pads[half:])


def _window_view(xp: np.ndarray, offset: Sequence[int], out: Sequence[int],
                 strides: Sequence[int]) -> np.ndarray:
    index = tuple(slice(o, o + s * (n - 1) + 1, s) for o, n, s in zip(offset, out, strides,
                                                                       strict=True))
    key: tuple[Any, ...] = (Ellipsis, *index)
    view: np.ndarray = xp[key]
    return view


def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, *, kernel_shape: Sequence[int],
         pads: Sequence[int] | None = None, strides: Sequence[int] | None = None,
         dilations: Sequence[int] | None = None, group: int = 1) -> np.ndarray:
    rank = len(kernel_shape)
    pads = pads or [0] * 2 * rank
    strides = strides or [1] * rank
    dilations = dilations or [1] * rank
    begin, end = _split_pads(pads)
    xp = np.pad(x, [(0, 0), (0, 0), *zip(begin, end, strict=True)])
    out = [(xp.shape[2 + a] - dilations[a] * (kernel_shape[a] - 1) - 1) // strides[a] + 1
           for a in range(rank)]
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    y = np.zeros((n, m, *out))
    for k in itertools.product(*(range(s) for s in kernel_shape)):
        offset = [k[a] * dilations[a] for a in range(rank)]
        window = _window_view(xp, offset, out, strides)
        for g in range(group):
            key: tuple[Any, ...] = (slice(g * mg, (g + 1) * mg), slice(None), *k)
            wk = w[key]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...",
                                                   window[:, g * cg:(g + 1) * cg], wk)
    if b is not None:
        y += b.reshape(1, m, *([1] * rank))
    return y


def conv_transpose(x: np.ndarray, w: np.ndarray, *, kernel_shape: Sequence[int],
                   strides: Sequence[int], pads: Sequence[int],
                   output_padding: Sequence[int]) -> np.ndarray:
    """Scatter each input position through the kernel, then crop the pads (group=1)."""
    rank = len(kernel_shape)
    n, _, *size = x.shape
    m = w.shape[1]
    full = [strides[a] * (size[a] - 1) + kernel_shape[a] + output_padding[a]
            for a in range(rank)]
    y = np.zeros((n, m, *full))
    for k in itertools.product(*(range(s) for s in kernel_shape)):
        index = tuple(slice(k[a], k[a] + strides[a] * (size[a] - 1) + 1, strides[a])
                      for a in range(rank))
        at: tuple[Any, ...] = (Ellipsis, *index)
        kernel_at: tuple[Any, ...] = (Ellipsis, *k)
        y[at] += np.einsum("nc...,cm->nm...", x, w[kernel_at])
    begin, end = _split_pads(pads)
    crop: tuple[Any, ...] = (Ellipsis, *(slice(begin[a], full[a] - end[a]) for a in range(rank)))
    cropped: np.ndarray = y[crop]
    return cropped


def pool(x: np.ndarray, kind: str, *, kernel_shape: Sequence[int], strides: Sequence[int],
         pads: Sequence[int], ceil_mode: int = 0, count_include_pad: int = 0) -> np.ndarray:
    """MaxPool / AveragePool (count_include_pad=0 divides by the in-bounds elements only)."""
    rank = len(kernel_shape)
    begin, end = _split_pads(pads)
    size = x.shape[2:]
    out = []
    for a in range(rank):
        span = size[a] + begin[a] + end[a] - kernel_shape[a]
        o = (math.ceil(span / strides[a]) if ceil_mode else span // strides[a]) + 1
        # A window may not start in the end padding (ONNX / ORT rule for ceil_mode).
        if ceil_mode and (o - 1) * strides[a] >= size[a] + begin[a]:
            o -= 1
        out.append(o)
    extra = [max(0, (out[a] - 1) * strides[a] + kernel_shape[a] - size[a] - begin[a] - end[a])
             for a in range(rank)]
    width = [(0, 0), (0, 0), *((begin[a], end[a] + extra[a]) for a in range(rank))]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, width, constant_values=fill)
    inside = np.pad(np.ones(x.shape), width)
    pads_only = np.pad(np.ones(x.shape), [(0, 0), (0, 0), *zip(begin, end, strict=True)])
    pads_only = np.pad(pads_only, [(0, 0), (0, 0), *((0, e) for e in extra)])
    windows = [_window_view(xp, k, out, strides)
               for k in itertools.product(*(range(s) for s in kernel_shape))]
    if kind == "max":
        largest: np.ndarray = np.max(windows, axis=0)
        return largest
    counts_from = pads_only if count_include_pad else inside
    counts = sum(_window_view(counts_from, k, out, strides)
                 for k in itertools.product(*(range(s) for s in kernel_shape)))
    mean: np.ndarray = np.sum(windows, axis=0) / counts
    return mean


def _conv_inputs(m: int, group: int, kernel: Sequence[int],
                 bias: bool) -> Generator:
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        c = shape[1]
        x = with_edges(uniform(rng, dtype, shape, -2, 2), edge_values(dtype, lo=-4, hi=4))
        out = {"X": x, "W": uniform(rng, dtype, (m, c // group, *kernel), -1, 1)}
        if bias:
            out["B"] = uniform(rng, dtype, (m,), -1, 1)
        return out
    return generate


def _convt_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    return {"X": uniform(rng, dtype, shape, -2, 2),
            "W": uniform(rng, dtype, (shape[1], 3, *CONVT["kernel_shape"]), -1, 1)}


def _pool_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape, -3, 3)
    # All-negative windows at the border check that padding never wins a max.
    x[:, :, :2, :2] = -np.abs(x[:, :, :2, :2]) - np.asarray(5.0, dtype)
    return {"X": with_edges(x, edge_values(dtype, lo=-1e3, hi=1e3))}


CASES = [
    OpCase("Conv", "Conv", node_with("Conv", ("X", "W", "B"), ("X",), **CONV),
           _conv_inputs(4, 2, [3, 3], True),
           lambda i: [conv(i["X"], i["W"], i["B"], **CONV)], ((4, 4, 8, 8), (2, 2, 7, 6)),
           tolerance=_F16_DOT, variants=("conv_bias_add",),
           note="bias, group=2, asymmetric pads, strides (1, 2), dilations (1, 2)"),
    OpCase("ConvTranspose", "ConvTranspose", node_with("ConvTranspose", ("X", "W"), ("X",),
                                                       **CONVT),
           _convt_inputs, lambda i: [conv_transpose(i["X"], i["W"], **CONVT)],
           ((4, 2, 4, 4), (2, 3, 3, 5)), tolerance=_F16_DOT,
           note="strides 2, asymmetric pads, output_padding (1, 0)"),
    OpCase("MaxPool", "MaxPool", node("MaxPool", "X", **MAXPOOL), _pool_inputs,
           lambda i: [pool(i["X"], "max", **MAXPOOL)], SHAPES,
           note="ceil_mode=1 with pads: the last window hangs over the end"),
    OpCase("AveragePool", "AveragePool", node("AveragePool", "X", **AVGPOOL), _pool_inputs,
           lambda i: [pool(i["X"], "avg", **AVGPOOL)], SHAPES,
           note="count_include_pad=0: border windows divide by their in-bounds count"),
    OpCase("GlobalAveragePool", "GlobalAveragePool", node("GlobalAveragePool", "X"),
           _pool_inputs, lambda i: [i["X"].mean(axis=(2, 3), keepdims=True)], SHAPES,
           tolerance=_F16_SUM),
    OpCase("GlobalMaxPool", "GlobalMaxPool", node("GlobalMaxPool", "X"), _pool_inputs,
           lambda i: [i["X"].max(axis=(2, 3), keepdims=True)], SHAPES),
]
