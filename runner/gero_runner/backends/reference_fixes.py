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
