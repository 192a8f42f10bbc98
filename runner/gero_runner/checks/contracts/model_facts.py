"""What the laws need to know about a graph: its nodes' attributes and constants, which
inputs carry the batch axis, and a copy of the graph whose batch axis is symbolic (so one
session per path can run any batch size)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from gero_runner.case import Arrays

BATCH_DIM = "gero_batch"


def find_node(model: onnx.ModelProto, op_types: str | tuple[str, ...]) -> onnx.NodeProto | None:
    """The first node of one of ``op_types`` (top-level graph only)."""
    wanted = (op_types,) if isinstance(op_types, str) else op_types
    return next((n for n in model.graph.node if n.op_type in wanted), None)


def attribute(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def producer(model: onnx.ModelProto, tensor: str) -> onnx.NodeProto | None:
    return next((n for n in model.graph.node if tensor in n.output), None)


def constant(model: onnx.ModelProto, name: str, feeds: Arrays) -> np.ndarray | None:
    """A tensor's value when it is a feed, an initializer or a Constant node's output."""
    if name in feeds:
        return np.asarray(feeds[name])
    for init in model.graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    node = producer(model, name)
    if node is not None and node.op_type == "Constant":
        value = attribute(node, "value")
        if value is not None:
            return numpy_helper.to_array(value)
    return None


@dataclass(frozen=True)
class BatchLayout:
    """Which feeds carry the batch on axis 0, and the batch size."""

    size: int
    batched: tuple[str, ...]


def batch_layout(feeds: Arrays) -> BatchLayout | None:
    """Feeds of the highest rank whose leading dimension is the batch size.

    Lower-rank operands broadcast against trailing axes and same-rank operands with a
    leading 1 broadcast over the batch: neither carries examples. None when there is no
    batch of at least two examples.
    """
    ranked = [(k, np.asarray(v)) for k, v in feeds.items() if np.ndim(v) >= 1]
    if not ranked:
        return None
    top = max(x.ndim for _, x in ranked)
    size = next(x.shape[0] for _, x in ranked if x.ndim == top)
    batched = tuple(k for k, x in ranked if x.ndim == top and x.shape[0] == size)
    if size < 2 or not batched:
        return None
    return BatchLayout(size, batched)


def dynamic_batch_model(model: bytes, batched: tuple[str, ...]) -> bytes:
    """The same graph with a symbolic leading dimension on the batched inputs and output
    shapes left to the runtime."""
    m = onnx.load_from_string(model)
    for inp in m.graph.input:
        if inp.name in batched and inp.type.tensor_type.shape.dim:
            dim = inp.type.tensor_type.shape.dim[0]
            dim.Clear()
            dim.dim_param = BATCH_DIM
    for out in m.graph.output:
        for dim in out.type.tensor_type.shape.dim:
            dim.Clear()
    del m.graph.value_info[:]
    return m.SerializeToString()


def take(feeds: Arrays, batched: tuple[str, ...], index: Any) -> Arrays:
    """The feeds with the batched ones indexed along axis 0 (a slice or an index array)."""
    return {k: (np.ascontiguousarray(v[index]) if k in batched else v) for k, v in feeds.items()}


def split_points(size: int) -> list[int]:
    """Part boundaries: a part of one example, then the rest halved (≥ 2 parts)."""
    return sorted({p for p in (1, (size + 1) // 2) if 0 < p < size})


def permutation(size: int, seed: int) -> np.ndarray:
    """A seeded permutation of the batch that moves every example (a derangement)."""
    order = np.random.default_rng(seed).permutation(size)
    perm = np.empty(size, dtype=np.int64)
    perm[order] = np.roll(order, -1)  # one cycle through every example
    return perm
