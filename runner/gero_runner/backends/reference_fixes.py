"""Corrected ReferenceEvaluator operators for the defects in ``reference_defects``.

Each class replaces onnx's own for one model (``ReferenceEvaluator(new_ops=...)`` keys by
op type, not version), so each is made for the model's opset: ``op_schema`` is that
version's schema, and attribute defaults come from it rather than from the newest schema.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx.reference.op_run import OpRun
from onnx.reference.ops._op import OpRunUnaryNum

_erf = np.frompyfunc(math.erf, 1, 1)


class Erf(OpRunUnaryNum):
    """erf in float64 (math.erf), rounded once into the input's dtype."""

    def _run(self, x: np.ndarray) -> tuple[np.ndarray]:
        wide = np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).reshape(x.shape)
        return (wide.astype(x.dtype),)


class GlobalMaxPool(OpRun):
    """The maximum over every axis after (N, C), kept as size-1 axes, at any rank."""

    def _run(self, x: np.ndarray) -> tuple[np.ndarray]:
        return (x.max(axis=tuple(range(2, x.ndim)), keepdims=True),)


def softmax_up_to_12(opset: int) -> type[OpRun]:
    """Softmax-1/11: the input is coerced to 2-D at ``axis`` (default 1) and each row of
    that 2-D view is normalised; opset 13 changed both (a single axis, default -1)."""

    class Softmax(OpRunUnaryNum):
        op_schema = onnx.defs.get_schema("Softmax", opset, "")

        def _run(self, x: np.ndarray, axis: Any = None) -> tuple[np.ndarray]:
            if x.size == 0:
                return (x,)
            # OpRunUnary passes no attributes: they are on self, defaulted by op_schema.
            chosen = axis if axis is not None else getattr(self, "axis", 1)
            k = int(chosen) % x.ndim if x.ndim else 0
            rows = x.reshape(int(np.prod(x.shape[:k], dtype=np.int64)), -1)
            e = np.exp(rows - rows.max(axis=1, keepdims=True))
            y = e / e.sum(axis=1, keepdims=True)
            return (y.reshape(x.shape).astype(x.dtype),)

    return Softmax


def batch_normalization_9(opset: int) -> type[OpRun]:
    """BatchNormalization-9: a node with one output is inference (running statistics);
    with five it is training mode, as the schema's two output cases say."""

    class BatchNormalization(OpRun):
        op_schema = onnx.defs.get_schema("BatchNormalization", opset, "")

        def _run(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                 var: np.ndarray, epsilon: Any = None, momentum: Any = None
                 ) -> tuple[np.ndarray, ...]:
            from onnx.reference.ops.op_batch_normalization import (
                BatchNormalization_9 as Stock,
            )
            from onnx.reference.ops.op_batch_normalization import (
                _batchnorm_test_mode,
            )

            if len([o for o in self.onnx_node.output if o]) == 1:
                return (_batchnorm_test_mode(x, scale, bias, mean, var, epsilon=epsilon),)
            stock: Any = Stock  # training mode (five outputs): onnx's own behaviour
            result: tuple[np.ndarray, ...] = stock._run(self, x, scale, bias, mean, var,
                                                        epsilon, momentum)
            return result

    return BatchNormalization


def layer_normalization(opset: int) -> type[OpRun]:
    """LayerNormalization with its stage one (mean, variance) computed in ``stash_type``
    (float32 by default) when the input is narrower, as the schema says; onnx computes it
    in the input's type, so a float16 row's sum of squares overflows (≈ 2e5 > 65504)."""

    class LayerNormalization(OpRun):
        op_schema = onnx.defs.get_schema("LayerNormalization", opset, "")

        def _run(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None,
                 axis: Any = None, epsilon: Any = None, stash_type: Any = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            stash = np.float32 if stash_type in (None, 1) else np.float64
            work = np.promote_types(x.dtype, stash)
            k = int(-1 if axis is None else axis) % x.ndim
            axes = tuple(range(k, x.ndim))
            wide = x.astype(work)
            mean = wide.mean(axis=axes, keepdims=True)
            diff = wide - mean
            inv_std = 1 / np.sqrt((diff * diff).mean(axis=axes, keepdims=True)
                                  + (1e-5 if epsilon is None else float(epsilon)))
            y = diff * inv_std * scale.astype(work)
            if bias is not None:
                y = y + bias.astype(work)
            return (y.astype(x.dtype), mean, inv_std)

    return LayerNormalization


def dequantize_linear_below_19(opset: int) -> type[OpRun]:
    """DequantizeLinear-10/13: y = (x - x_zero_point) · x_scale for int8, uint8 and int32
    x, per tensor or (opset 13) per ``axis`` (default 1), made in the scale's type (float32
    in the file; float64 in the widened shadow), as opset 19 does. The integer difference
    is exact; it is rounded once into that type, then multiplied, as ONNX Runtime does."""

    class DequantizeLinear(OpRun):
        op_schema = onnx.defs.get_schema("DequantizeLinear", opset, "")

        def _run(self, x: np.ndarray, x_scale: np.ndarray,
                 x_zero_point: np.ndarray | None = None, axis: Any = None
                 ) -> tuple[np.ndarray]:
            scale = np.asarray(x_scale)
            if scale.ndim > 1:
                raise ValueError("DequantizeLinear: x_scale must be a scalar or a 1-D tensor")
            diff = np.asarray(x).astype(np.int64)
            if x_zero_point is not None:
                diff = diff - _along(np.asarray(x_zero_point).astype(np.int64), x.ndim, axis)
            return ((diff.astype(scale.dtype) * _along(scale, x.ndim, axis)
                     ).astype(scale.dtype),)

    return DequantizeLinear


def _along(value: np.ndarray, rank: int, axis: Any) -> np.ndarray:
    """A per-tensor value as it is; a 1-D per-axis one shaped to broadcast along ``axis``
    (default 1) of a rank-``rank`` tensor."""
    if value.ndim == 0 or value.size == 1:
        return value.reshape(())
    shape = [1] * rank
    shape[int(1 if axis is None else axis) % rank] = value.size
    return value.reshape(shape)


def one_hot(opset: int) -> type[OpRun]:
    """OneHot whose ``depth`` is a scalar or a 1-element tensor of any numeric type (the
    spec allows both, and a float depth is cast to an integer); onnx's np.arange(depth)
    refuses the 1-element tensor."""
    from onnx.reference.ops import op_one_hot

    stock: Any = op_one_hot._one_hot  # untyped upstream

    class OneHot(OpRun):
        op_schema = onnx.defs.get_schema("OneHot", opset, "")

        def _run(self, indices: np.ndarray, depth: np.ndarray, values: np.ndarray,
                 axis: Any = None) -> tuple[np.ndarray]:
            count = np.asarray(depth).reshape(-1)
            if count.size != 1:
                raise ValueError(f"OneHot: depth must hold one element, not {count.size}")
            off, on = values
            hot = stock(np.asarray(indices).astype(np.int64), int(count[0]),
                           axis=-1 if axis is None else int(axis), dtype=values.dtype)
            return (hot * (on - off) + off,)

    return OneHot


NARROW_FLOATS = ("float16", "bfloat16")


def wide_reduction(op_type: str, opset: int) -> type[OpRun]:
    """``op_type`` (a Reduce* operator) of a float16 or bfloat16 input computed in float64
    and rounded once into the input's type, as ONNX Runtime's wider accumulator gives;
    onnx computes it in the input's type (ReduceMean's sum of 128 × 600.0 overflows
    65504, ReduceSumSquare's squares round below float16's subnormals). Other types run
    onnx's own code, bit for bit, so no float32 model shows a difference."""
    from onnx.reference.ops import load_op

    stock: Any = load_op("", op_type, opset)

    def _run(self: Any, data: np.ndarray, *args: Any, **attrs: Any) -> tuple[np.ndarray, ...]:
        if np.asarray(data).dtype.name not in NARROW_FLOATS:
            same: tuple[np.ndarray, ...] = stock._run(self, data, *args, **attrs)
            return same
        wide = stock._run(self, np.asarray(data).astype(np.float64), *args, **attrs)
        return tuple(np.asarray(r).astype(data.dtype) for r in wide)

    # new_ops finds the class by its name: it must be the operator's.
    return type(op_type, (stock,), {"op_schema": onnx.defs.get_schema(op_type, opset, ""),
                                    "_run": _run})
