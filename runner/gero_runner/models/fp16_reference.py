"""An honest yardstick for an fp16 file, and what a runtime that inserts precision casts
(ONNX Runtime's CPU) makes of one.

- ``rounded_shadow``: the float64 shadow of the fp16 file with every float16 tensor rounded
  to float16 where a node writes it. Each node computes exactly (in float64) and rounds
  its result once, as a correct float16 engine would; engines that really compute in
  float16 (tract, the ReferenceEvaluator) are measured against it instead of against a
  runtime that widens to float32 inside.
- ``float32_nodes``: the nodes of the fp16 file that such a runtime runs in float32 (its
  graph at its base setting, ``Backend.optimized_graph``: ONNX Runtime's after session
  initialisation at ``disable_all``, with the Casts it inserts around kernels that lack
  float16 and the ones its precision-free-cast rewrite moves), by operator type.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.backends.reference_evaluator import run_releasing
from gero_runner.models import shadow

if TYPE_CHECKING:
    from gero_runner.backends.base import Backend

ROUND_SUFFIX = "__gero_f64"
PRECISION_FREE = "InsertedPrecisionFreeCast_"
"""The prefix ONNX Runtime gives the tensors its precision-free-cast rewrite widens."""


def _float16_values(model: onnx.ModelProto) -> set[str]:
    """Names of the tensors whose type is float16 (shape inference), in the main graph and
    in every subgraph (If/Loop/Scan bodies: ONNX names are unique across the scopes)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an op shape inference does not know: the declared types only
        inferred = model
    return {vi.name for g in _graphs(inferred.graph)
            for vi in [*g.value_info, *g.output, *g.input]
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT16}


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and its subgraphs, recursively."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                yield from _graphs(g)


def _round_graph(graph: onnx.GraphProto, halves: set[str]) -> None:
    """A round trip through float16 after every float16 node output of ``graph`` and of its
    subgraphs (a Loop body rounds at each step, as the file declares: SLANet's 501-step
    Loop is 0.0109 from fp32 rounded there too, 0.00133 rounded in the main graph only);
    the node writes a renamed tensor and the Casts write the name, so a subgraph's outputs
    and the names the outer scope reads keep their meaning."""
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for attr in copy.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                _round_graph(g, halves)
        rounded = [o for o in copy.output if o in halves]
        for k, name in enumerate(copy.output):
            if name in rounded:
                copy.output[k] = name + ROUND_SUFFIX
        nodes.append(copy)
        for name in rounded:
            nodes.append(helper.make_node("Cast", [name + ROUND_SUFFIX], [name + "__h"],
                                          to=TensorProto.FLOAT16))
            nodes.append(helper.make_node("Cast", [name + "__h"], [name],
                                          to=TensorProto.DOUBLE))
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]  # the widened names' types changed; the evaluator needs none


def rounding_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """The widened (float64) fp16 model with a round trip through float16 after every node
    output that is float16 in the original, inside If/Loop/Scan bodies too."""
    halves = _float16_values(model)
    wide = shadow.widen(model)  # exact: a dequantized operator would not be the file's
    _round_graph(wide.graph, halves)
    return wide


def rounded_shadow(model: bytes, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The fp16 file's outputs computed exactly and rounded to float16 at every node
    (float64 arrays; raises what the ReferenceEvaluator raises)."""
    return rounded_shadow_traced(model, inputs)[0]


def rounded_shadow_traced(model: bytes, inputs: dict[str, np.ndarray]
                          ) -> tuple[list[np.ndarray], str]:
    """``rounded_shadow`` and where its main graph first overflows float16 (a tensor finite
    computed exactly, inf rounded) and first holds a NaN, with their operators ('' when
    neither): where the file as declared breaks (t5's encoder: its attention mask overflows
    harmlessly, its block-0 residual stream past ±65504 turns NaN in the layer norm)."""
    proto = onnx.load_from_string(model)
    ops = {o: n.op_type for n in proto.graph.node for o in n.output}
    evaluator: Any = corrected_evaluator(rounding_model(proto))
    overflow: list[str] = []  # the first value finite in float64 that float16 makes inf
    nan: list[str] = []  # the first NaN computed (an inf met an inf: t5's layer norm)
    finite: dict[str, bool] = {}

    def watch(node: onnx.NodeProto, name: str, value: Any) -> None:
        if nan or not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            return
        tensor = name.removesuffix(ROUND_SUFFIX).removesuffix("__h")
        where = f"{tensor} ({ops.get(tensor, node.op_type)})"
        if np.isnan(value).any():
            nan.append(f"the first NaN at {where}")
        elif name.endswith(ROUND_SUFFIX):
            finite[tensor] = bool(np.isfinite(value).all())
        elif not overflow and name.endswith("__h") and finite.get(tensor) \
                and not np.isfinite(value).all():
            overflow.append(f"the first overflow at {where}")

    with np.errstate(all="ignore"):
        outputs = run_releasing(evaluator, shadow.widen_inputs(inputs), watch)
    return [np.asarray(outputs[n]) for n in evaluator.output_names], ", ".join(overflow + nan)


@dataclass(frozen=True)
class Widened:
    """What a runtime that inserts precision casts does with an fp16 file."""

    float32_nodes: dict[str, int]
    """Operator type -> nodes of the fp16 file that compute in float32 there."""
    float16_nodes: int
    """Nodes of the fp16 file with a float16 output."""
    casts_before: int
    casts_after: int

    def sentence(self) -> str:
        n = sum(self.float32_nodes.values())
        ranked = sorted(self.float32_nodes.items(), key=lambda kv: (-kv[1], kv[0]))
        ops = ", ".join(f"{op} {k}" for op, k in ranked[:6])
        more = f" and {len(ranked) - 6} more types" if len(ranked) > 6 else ""
        return (f"computes the fp16 file in float32 at {n} of its {self.float16_nodes} float16 "
                f"nodes ({ops}{more}): its CPU kernels widen them, with {self.casts_after} "
                f"Casts in its graph where the file has {self.casts_before}")


def float32_nodes(model: bytes, runtime: Backend) -> Widened:
    """The fp16 file's float16 nodes that ``runtime`` runs in float32 (its graph at its base
    setting, the first of its paths: ONNX Runtime's ``disable_all``)."""
    original = onnx.load_from_string(model)
    halves = _float16_values(original)
    produced = {o: n for n in original.graph.node for o in n.output}
    sixteen = {n.name or n.output[0]: n.op_type for o, n in produced.items()
               if o in halves and n.op_type != "Cast"}
    seen = runtime.optimized_graph(model, runtime.paths(1)[0].settings)
    if seen is None:
        raise ValueError(f"{runtime.label()} keeps no optimised graph to read its casts in")
    still = _float16_values(seen)
    widened: collections.Counter[str] = collections.Counter()
    for node in seen.graph.node:
        # ORT renames what it widens (InsertedPrecisionFreeCast_c for c)
        key = node.name or (node.output[0].removeprefix(PRECISION_FREE) if node.output else "")
        if key in sixteen and not any(o in still for o in node.output):
            widened[node.op_type] += 1
    return Widened(dict(widened), len(sixteen),
                   sum(n.op_type == "Cast" for n in original.graph.node),
                   sum(n.op_type == "Cast" for n in seen.graph.node))
