"""The float64 shadow of a model: every float tensor widened to float64, run on the
ReferenceEvaluator, as the arbiter of disagreements between float32 paths.

Widened: graph inputs, outputs and value_info types; initializers; Constant and
ConstantOfShape values; ``to``/``dtype`` attributes that name a float type (Cast, EyeLike,
RandomNormal…), in the main graph and in every subgraph (If/Loop/Scan bodies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.backends.reference_evaluator import run_releasing

_FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def _widen_tensor(t: TensorProto) -> TensorProto:
    if t.data_type not in _FLOATS:
        return t
    wide = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)
    return wide


def _widen_type(tp: onnx.TypeProto) -> None:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type" and tp.tensor_type.elem_type in _FLOATS:
        tp.tensor_type.elem_type = TensorProto.DOUBLE
    elif kind == "sequence_type":
        _widen_type(tp.sequence_type.elem_type)
    elif kind == "optional_type":
        _widen_type(tp.optional_type.elem_type)


def _widen_graph(graph: onnx.GraphProto) -> None:
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        _widen_type(vi.type)
    for i, t in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(_widen_tensor(t))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                attr.t.CopyFrom(_widen_tensor(attr.t))
            elif attr.type == onnx.AttributeProto.INT and attr.name in ("to", "dtype") \
                    and attr.i in _FLOATS:
                attr.i = TensorProto.DOUBLE
            elif attr.type == onnx.AttributeProto.GRAPH:
                _widen_graph(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    _widen_graph(g)


def widen(model: onnx.ModelProto) -> onnx.ModelProto:
    """A float64 copy of ``model`` (the original is untouched)."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    _widen_graph(wide.graph)
    for f in wide.functions:
        for node in f.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.INT and attr.name in ("to", "dtype") \
                        and attr.i in _FLOATS:
                    attr.i = TensorProto.DOUBLE
    return wide


def widen_inputs(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: (v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in inputs.items()}


def run_shadow(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The float64 shadow's outputs (raises what the ReferenceEvaluator raises), with the
    evaluator's known defects corrected (backends.reference_defects); intermediates are
    freed after their last consumer."""
    evaluator: Any = corrected_evaluator(widen(model))
    with np.errstate(all="ignore"):
        outputs = run_releasing(evaluator, widen_inputs(inputs))
    return [np.asarray(outputs[n]) for n in evaluator.output_names]


@dataclass(frozen=True)
class EmptyIntermediate:
    """The first float intermediate of rank ≥ 2 with no element (the inputs may not suit
    the model)."""

    tensor: str
    op_type: str
    node: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ShadowTrace:
    outputs: dict[str, Any]
    first_empty: EmptyIntermediate | None


def run_shadow_traced(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> ShadowTrace:
    """The float64 shadow's outputs by name and its first empty intermediate, watched as
    the run goes: no intermediate outlives its last consumer (raises what the evaluator
    raises)."""
    evaluator: Any = corrected_evaluator(widen(model))
    empty: list[EmptyIntermediate] = []

    def watch(node: onnx.NodeProto, name: str, value: Any) -> None:
        if not empty and node.op_type != "Constant" and isinstance(value, np.ndarray) \
                and value.ndim >= 2 and value.size == 0 and value.dtype.kind == "f":
            empty.append(EmptyIntermediate(name, node.op_type, node.name,
                                           tuple(value.shape)))

    with np.errstate(all="ignore"):
        outputs = run_releasing(evaluator, widen_inputs(inputs), watch)
    return ShadowTrace(outputs, empty[0] if empty else None)
