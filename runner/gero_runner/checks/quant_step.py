"""One step of a quantizer: an already-quantised model's output that ends in QuantizeLinear
-> DequantizeLinear -> a monotone element-wise tail (smart_turn's Sigmoid) moves by whole
steps of that quantizer when anything before it differs in its last bits. A runtime that
computes the fp16 file's float16 nodes in float32 (wider than the file declares) can land
one step away from the file's correct computations: 0.006422 instead of 0.006176, one step
of the last QuantizeLinear (scale 0.0394) through the Sigmoid. That move is shown here, not
assumed: the file computed exactly with its last DequantizeLinear moved by one scale gives
the path's output (``one_step``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

_TAIL: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Cast": lambda x: x, "Identity": lambda x: x,
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "Tanh": np.tanh,
    "Relu": lambda x: np.maximum(x, 0.0), "Exp": np.exp,
}
"""Monotone element-wise operators a step passes through (Cast between float types: the
exact computation carries no rounding)."""

_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
           onnx.TensorProto.BFLOAT16}


@dataclass(frozen=True)
class Quantizer:
    """The last QuantizeLinear before an output, its DequantizeLinear's output and per-tensor
    scale, and the tail's operators from there to the output (in order)."""

    name: str
    dequantized: str
    scale: float
    tail: tuple[str, ...]


def last_quantizer(model: onnx.ModelProto, output: str) -> Quantizer | None:
    """The QuantizeLinear -> DequantizeLinear pair an output ends in through a monotone
    element-wise tail, with a per-tensor scale; None where it does not."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {t.name: t for t in model.graph.initializer}
    tail: list[str] = []
    name = output
    while (node := producer.get(name)) is not None and node.op_type in _TAIL:
        if node.op_type == "Cast" and not any(
                a.name == "to" and a.i in _FLOATS for a in node.attribute):
            return None
        tail.append(node.op_type)
        name = node.input[0]
    dq = producer.get(name)
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 2:
        return None
    q = producer.get(dq.input[0])
    if q is None or q.op_type != "QuantizeLinear" or dq.input[1] not in inits:
        return None
    scale = numpy_helper.to_array(inits[dq.input[1]])
    if scale.size != 1:
        return None
    return Quantizer(q.name or q.output[0], name, float(scale.reshape(-1)[0]),
                     tuple(reversed(tail)))


def one_step(model: bytes, inputs: dict[str, np.ndarray], output: str, actual: np.ndarray,
             within: Callable[[np.ndarray], bool]) -> str:
    """Where ``actual`` (a path's output ``output`` of the file) is, within the gate
    ``within`` judges by, the file computed exactly with its last DequantizeLinear moved by
    one step (up or down at each element, some moved), the sentence that says so; else ''
    (no such quantizer, or the move does not account for the output)."""
    from gero_runner.models import shadow

    proto = onnx.load_from_string(model)
    quantizer = last_quantizer(proto, output)
    if quantizer is None:
        return ""
    proto.graph.output.append(onnx.ValueInfoProto(name=quantizer.dequantized))
    try:
        got = shadow.run_shadow(proto, inputs)
    except Exception:  # no exact computation: the step cannot be shown
        return ""
    d = np.asarray(got[-1], dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    moved = [_through(quantizer.tail, d + k * quantizer.scale) for k in (0, -1, 1)]
    if any(m.shape != a.shape for m in moved):
        return ""
    best = np.argmin(np.stack([np.abs(a - m) for m in moved]), axis=0)
    nearest = np.choose(best, moved)
    if not best.any() or not within(nearest):
        return ""
    exact = moved[0]
    at = int(np.argmax(np.abs(a - exact)))
    # (the worst element: the path's value against the file's exact one)
    return (f"the output moves by one step of QuantizeLinear {quantizer.name!r} "
            f"({a.flat[at]:.4g} vs {exact.flat[at]:.4g})")


def _through(tail: tuple[str, ...], x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        for op in tail:
            x = _TAIL[op](x)
    return x
