"""Algebraic variants: the case's graph with one node replaced by another way of computing
the same function (a decomposition into simpler operators).

Each builder reads the node's attributes and constants from the base graph, so a variant
applies to any graph holding that node, and returns a checked opset-19 model whose inputs
and outputs are the base graph's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from gero_runner.case import Arrays
from gero_runner.checks.contracts.model_facts import attribute, constant, find_node


class VariantError(ValueError):
    """The base graph has no node this variant can replace (message says why)."""


Built = tuple[list[onnx.NodeProto], dict[str, np.ndarray]]
_P = "gero_v_"


def _dtype(model: onnx.ModelProto, name: str, feeds: Arrays) -> np.dtype[Any]:
    value = constant(model, name, feeds)
    if value is not None:
        return value.dtype
    for vi in [*model.graph.input, *model.graph.value_info]:
        if vi.name == name:
            return np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
    raise VariantError(f"cannot tell the element type of {name!r}")


def _rank(model: onnx.ModelProto, name: str, feeds: Arrays) -> int:
    value = constant(model, name, feeds)
    if value is not None:
        return value.ndim
    for vi in model.graph.input:
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return len(vi.type.tensor_type.shape.dim)
    raise VariantError(f"cannot tell the rank of {name!r}")


def _axes(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _shifted_exp_sum(x: str) -> list[onnx.NodeProto]:
    """The stem both softmaxes share: ``shifted`` = x − max, its Exp and their ReduceSum over
    ``axes`` (``exp``, ``sum``)."""
    return [
        helper.make_node("ReduceMax", [x, f"{_P}axes"], [f"{_P}max"], keepdims=1),
        helper.make_node("Sub", [x, f"{_P}max"], [f"{_P}shifted"]),
        helper.make_node("Exp", [f"{_P}shifted"], [f"{_P}exp"]),
        helper.make_node("ReduceSum", [f"{_P}exp", f"{_P}axes"], [f"{_P}sum"], keepdims=1),
    ]


def softmax_decomposed(node: onnx.NodeProto, model: onnx.ModelProto, feeds: Arrays) -> Built:
    """Softmax(x) = Exp(x − max) / ReduceSum(Exp(x − max))."""
    x, y = node.input[0], node.output[0]
    axis = int(attribute(node, "axis", -1))
    return [
        *_shifted_exp_sum(x),
        helper.make_node("Div", [f"{_P}exp", f"{_P}sum"], [y]),
    ], {f"{_P}axes": _axes([axis])}


def logsoftmax_decomposed(node: onnx.NodeProto, model: onnx.ModelProto,
                          feeds: Arrays) -> Built:
    """LogSoftmax(x) = (x − max) − Log(ReduceSum(Exp(x − max)))."""
    x, y = node.input[0], node.output[0]
    axis = int(attribute(node, "axis", -1))
    return [
        *_shifted_exp_sum(x),
        helper.make_node("Log", [f"{_P}sum"], [f"{_P}log"]),
        helper.make_node("Sub", [f"{_P}shifted", f"{_P}log"], [y]),
    ], {f"{_P}axes": _axes([axis])}


def layernorm_decomposed(node: onnx.NodeProto, model: onnx.ModelProto,
                         feeds: Arrays) -> Built:
    """(x − mean) / Sqrt(Var + ε) · scale + bias, with the mean and variance over the
    normalised axes, computed in the input's own type."""
    if len([o for o in node.output if o]) > 1:
        raise VariantError("LayerNormalization with Mean/InvStdDev outputs")
    x, y = node.input[0], node.output[0]
    dtype = _dtype(model, x, feeds)
    rank = _rank(model, x, feeds)
    axis = int(attribute(node, "axis", -1)) % rank
    eps = np.float32(attribute(node, "epsilon", 1e-5))
    nodes = [
        helper.make_node("ReduceMean", [x, f"{_P}axes"], [f"{_P}mean"], keepdims=1),
        helper.make_node("Sub", [x, f"{_P}mean"], [f"{_P}centred"]),
        helper.make_node("Mul", [f"{_P}centred", f"{_P}centred"], [f"{_P}square"]),
        helper.make_node("ReduceMean", [f"{_P}square", f"{_P}axes"], [f"{_P}var"], keepdims=1),
        helper.make_node("Add", [f"{_P}var", f"{_P}eps"], [f"{_P}var_eps"]),
        helper.make_node("Sqrt", [f"{_P}var_eps"], [f"{_P}std"]),
        helper.make_node("Div", [f"{_P}centred", f"{_P}std"], [f"{_P}normalised"]),
    ]
    has_bias = len(node.input) > 2 and bool(node.input[2])
    scaled = f"{_P}scaled" if has_bias else y
    nodes.append(helper.make_node("Mul", [f"{_P}normalised", node.input[1]], [scaled]))
    if has_bias:
        nodes.append(helper.make_node("Add", [scaled, node.input[2]], [y]))
    return nodes, {f"{_P}axes": _axes(list(range(axis, rank))),
                   f"{_P}eps": np.asarray(eps, dtype=dtype)}


def gemm_matmul_add(node: onnx.NodeProto, model: onnx.ModelProto, feeds: Arrays) -> Built:
    """alpha·op(A)·op(B) + beta·C as (Transpose) MatMul, Mul, Add."""
    a, b = node.input[0], node.input[1]
    y = node.output[0]
    dtype = _dtype(model, a, feeds)
    alpha, beta = float(attribute(node, "alpha", 1.0)), float(attribute(node, "beta", 1.0))
    nodes, inits = [], {}
    if attribute(node, "transA", 0):
        nodes.append(helper.make_node("Transpose", [a], [f"{_P}at"], perm=[1, 0]))
        a = f"{_P}at"
    if attribute(node, "transB", 0):
        nodes.append(helper.make_node("Transpose", [b], [f"{_P}bt"], perm=[1, 0]))
        b = f"{_P}bt"
    has_c = len(node.input) > 2 and bool(node.input[2])
    product = f"{_P}product"
    nodes.append(helper.make_node("MatMul", [a, b], [product]))
    if alpha != 1.0:
        inits[f"{_P}alpha"] = np.asarray(np.float32(alpha), dtype=dtype)
        nodes.append(helper.make_node("Mul", [product, f"{_P}alpha"], [f"{_P}scaled"]))
        product = f"{_P}scaled"
    if not has_c:
        nodes.append(helper.make_node("Identity", [product], [y]))
        return nodes, inits
    c = node.input[2]
    if beta != 1.0:
        inits[f"{_P}beta"] = np.asarray(np.float32(beta), dtype=dtype)
        nodes.append(helper.make_node("Mul", [c, f"{_P}beta"], [f"{_P}c"]))
        c = f"{_P}c"
    nodes.append(helper.make_node("Add", [product, c], [y]))
    return nodes, inits


def conv_bias_add(node: onnx.NodeProto, model: onnx.ModelProto, feeds: Arrays) -> Built:
    """Conv(X, W, B) as Conv(X, W) + B broadcast over the spatial axes."""
    if len(node.input) < 3 or not node.input[2]:
        raise VariantError("Conv without a bias")
    rank = _rank(model, node.input[1], feeds)
    conv = helper.make_node("Conv", list(node.input[:2]), [f"{_P}conv"])
    conv.attribute.extend(node.attribute)
    return [
        conv,
        helper.make_node("Reshape", [node.input[2], f"{_P}bias_shape"], [f"{_P}bias"]),
        helper.make_node("Add", [f"{_P}conv", f"{_P}bias"], [node.output[0]]),
    ], {f"{_P}bias_shape": _axes([-1] + [1] * (rank - 2))}


def reducelogsumexp_decomposed(node: onnx.NodeProto, model: onnx.ModelProto,
                               feeds: Arrays) -> Built:
    """ReduceLogSumExp(x) as Log(ReduceSum(Exp(x))), without the max shift."""
    keepdims = int(attribute(node, "keepdims", 1))
    inputs = [f"{_P}exp", *node.input[1:2]]
    return [
        helper.make_node("Exp", [node.input[0]], [f"{_P}exp"]),
        helper.make_node("ReduceSum", inputs, [f"{_P}sum"], keepdims=keepdims,
                         noop_with_empty_axes=int(attribute(node, "noop_with_empty_axes", 0))),
        helper.make_node("Log", [f"{_P}sum"], [node.output[0]]),
    ], {}


def batchnorm_mul_add(node: onnx.NodeProto, model: onnx.ModelProto, feeds: Arrays) -> Built:
    """Inference BatchNormalization as X·k + c, k = scale / Sqrt(var + ε),
    c = B − mean·k, per channel."""
    if len([o for o in node.output if o]) > 1 or attribute(node, "training_mode", 0):
        raise VariantError("BatchNormalization in training mode")
    x, scale, bias, mean, var = node.input[:5]
    dtype = _dtype(model, x, feeds)
    rank = _rank(model, x, feeds)
    eps = np.float32(attribute(node, "epsilon", 1e-5))
    return [
        helper.make_node("Add", [var, f"{_P}eps"], [f"{_P}var_eps"]),
        helper.make_node("Sqrt", [f"{_P}var_eps"], [f"{_P}std"]),
        helper.make_node("Div", [scale, f"{_P}std"], [f"{_P}k"]),
        helper.make_node("Mul", [mean, f"{_P}k"], [f"{_P}mean_k"]),
        helper.make_node("Sub", [bias, f"{_P}mean_k"], [f"{_P}c"]),
        helper.make_node("Reshape", [f"{_P}k", f"{_P}shape"], [f"{_P}k_c"]),
        helper.make_node("Reshape", [f"{_P}c", f"{_P}shape"], [f"{_P}c_c"]),
        helper.make_node("Mul", [x, f"{_P}k_c"], [f"{_P}xk"]),
        helper.make_node("Add", [f"{_P}xk", f"{_P}c_c"], [node.output[0]]),
    ], {f"{_P}eps": np.asarray(eps, dtype=dtype),
        f"{_P}shape": _axes([-1] + [1] * (rank - 2))}


def sigmoid_decomposed(node: onnx.NodeProto, model: onnx.ModelProto, feeds: Arrays) -> Built:
    """Sigmoid(x) = 1 / (1 + Exp(−x))."""
    dtype = _dtype(model, node.input[0], feeds)
    return [
        helper.make_node("Neg", [node.input[0]], [f"{_P}neg"]),
        helper.make_node("Exp", [f"{_P}neg"], [f"{_P}exp"]),
        helper.make_node("Add", [f"{_P}one", f"{_P}exp"], [f"{_P}den"]),
        helper.make_node("Div", [f"{_P}one", f"{_P}den"], [node.output[0]]),
    ], {f"{_P}one": np.asarray(1.0, dtype=dtype)}


Builder = Callable[[onnx.NodeProto, onnx.ModelProto, Arrays], Built]
VARIANTS: dict[str, tuple[str, Builder]] = {
    "softmax_decomposed": ("Softmax", softmax_decomposed),
    "logsoftmax_decomposed": ("LogSoftmax", logsoftmax_decomposed),
    "layernorm_decomposed": ("LayerNormalization", layernorm_decomposed),
    "gemm_matmul_add": ("Gemm", gemm_matmul_add),
    "conv_bias_add": ("Conv", conv_bias_add),
    "reducelogsumexp_decomposed": ("ReduceLogSumExp", reducelogsumexp_decomposed),
    "batchnorm_mul_add": ("BatchNormalization", batchnorm_mul_add),
    "sigmoid_decomposed": ("Sigmoid", sigmoid_decomposed),
}
"""Variant name -> (operator it replaces, builder)."""


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def build_variant(name: str, model: bytes, feeds: Arrays) -> bytes:
    """The base graph with its first ``op`` node replaced by the variant's decomposition."""
    if name not in VARIANTS:
        raise VariantError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    op_type, builder = VARIANTS[name]
    base = onnx.load_from_string(model)
    node = find_node(base, op_type)
    if node is None:
        raise VariantError(f"the graph has no {op_type} node")
    nodes, inits = builder(node, base, feeds)
    index = list(base.graph.node).index(node)
    graph_nodes = [_copy(n) for n in base.graph.node[:index]] + nodes + [
        _copy(n) for n in base.graph.node[index + 1:]]
    del base.graph.node[:]
    base.graph.node.extend(graph_nodes)
    base.graph.initializer.extend(numpy_helper.from_array(v, name=k) for k, v in inits.items())
    del base.graph.value_info[:]
    try:
        onnx.checker.check_model(base)
        onnx.shape_inference.infer_shapes(base, strict_mode=True)
    except Exception as e:
        raise VariantError(f"the {name} graph is invalid: {e}") from e
    return base.SerializeToString()
