"""Turning a GraphSpec (or a hand-built graph) into a serialised opset-19 / IR-10 model."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from gero_runner.case import IR_VERSION, OPSET, Arrays, GraphSpec

_NP_TO_ONNX = {
    np.dtype(np.float16): onnx.TensorProto.FLOAT16,
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.float64): onnx.TensorProto.DOUBLE,
    np.dtype(np.int8): onnx.TensorProto.INT8,
    np.dtype(np.uint8): onnx.TensorProto.UINT8,
    np.dtype(np.int16): onnx.TensorProto.INT16,
    np.dtype(np.int32): onnx.TensorProto.INT32,
    np.dtype(np.int64): onnx.TensorProto.INT64,
    np.dtype(np.bool_): onnx.TensorProto.BOOL,
}


def onnx_type(dtype: str | np.dtype[Any]) -> int:
    """The TensorProto element type of a NumPy dtype (name or object)."""
    return _NP_TO_ONNX[np.dtype(dtype)]


def value_info(name: str, dtype: str | np.dtype[Any], shape: Any = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, onnx_type(dtype), shape)


def make_model(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    """Wrap a graph at gero's opset and IR version, and check it."""
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gero"
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def build_single_node(
    spec: GraphSpec, inputs: Arrays, output_shapes: list[tuple[int, ...]]
) -> onnx.ModelProto:
    """A one-node model whose graph inputs are ``inputs`` (shapes and types taken from them)."""
    first = next(iter(inputs.values()))
    node_inputs = spec.node_inputs or (*spec.inputs, *spec.constants)
    node = helper.make_node(
        spec.op_type, list(node_inputs), list(spec.outputs), domain=spec.domain, **dict(spec.attrs)
    )
    out_dtypes = spec.output_dtypes or (None,) * len(spec.outputs)
    graph = helper.make_graph(
        [node],
        f"gero_{spec.op_type}",
        [value_info(n, inputs[n].dtype, inputs[n].shape) for n in spec.inputs],
        [
            value_info(n, d or first.dtype, s)
            for n, d, s in zip(spec.outputs, out_dtypes, output_shapes, strict=True)
        ],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in spec.constants.items()],
    )
    return make_model(graph)


def to_model(
    built: GraphSpec | onnx.ModelProto, inputs: Arrays, output_shapes: list[tuple[int, ...]]
) -> onnx.ModelProto:
    """The model of a case; output shapes come from its float64 formula."""
    if isinstance(built, onnx.ModelProto):
        return built
    return build_single_node(built, inputs, output_shapes)


def onnx_dtype_name(elem_type: int) -> str:
    """NumPy dtype name of a TensorProto element type."""
    return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))


BATCH_DIM = "N"


def with_dynamic_batch(model: onnx.ModelProto, *, outputs: bool) -> onnx.ModelProto:
    """Name the leading dimension of the graph inputs (and outputs) ``N``, so the same model
    runs at any batch size (batch contracts split, permute and duplicate axis 0)."""
    values = [*model.graph.input, *(model.graph.output if outputs else ())]
    for value in values:
        dims = value.type.tensor_type.shape.dim
        if len(dims) > 0:
            dims[0].Clear()
            dims[0].dim_param = BATCH_DIM
    onnx.checker.check_model(model)
    return model
