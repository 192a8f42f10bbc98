"""What a runtime's optimised graph did to the user's graph, read from the graph it keeps
(``Backend.optimized_graph``): how many nodes it added or took away by operator, and its
precision rewrite, the user's float16 nodes it computes in float32 between Casts it
inserted (a wider computation than the graph declares: the float16 rounding of the tensors
inside is skipped). Shared by localize (which names the rewrite as an origin's cause) and
blame (which says what the optimised graph added to the user's nodes).

Read from the graphs alone, with no runtime's name: an inserted widening Cast reads a
float16 tensor of the user's graph and writes a float32 tensor the user's graph lacks; an
inserted narrowing Cast writes a user's float16 tensor from one the user's graph lacks. The
user's nodes between the two are the ones computed wider."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import TensorProto

from gero_runner import backends
from gero_runner.evidence import subgraphs as sg

_NARROW = {TensorProto.FLOAT16, TensorProto.BFLOAT16}
_WIDE = {TensorProto.FLOAT, TensorProto.DOUBLE}


def node_label(node: onnx.NodeProto) -> str:
    """``OpType 'name'``, the node's first output standing for a name it lacks."""
    return f"{node.op_type} {(node.name or (node.output[0] if node.output else ''))!r}"


@dataclass(frozen=True)
class PrecisionRewrite:
    """The user's float16 nodes a side computes in float32."""

    nodes: list[str]
    """``node_label`` of each user node computed wider, in graph order."""
    skipped: list[str]
    """The user's float16 tensors inside those spans whose rounding is skipped."""
    casts_inserted: int

    def sentence(self, who: str) -> str:
        ops = ", ".join(self.nodes[:6]) + (f" and {len(self.nodes) - 6} more"
                                           if len(self.nodes) > 6 else "")
        skipped = (f"; the float16 rounding of {', '.join(self.skipped[:4])} that the graph "
                   "declares is skipped" if self.skipped else "")
        return (f"a precision rewrite: {who} computes {ops} in float32 where the graph "
                f"declares float16 (its optimised graph inserts {self.casts_inserted} "
                f"Cast(s) around them){skipped}")


def _types(model: onnx.ModelProto) -> dict[str, int]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an op inference does not know (custom domains): declared types only
        inferred = model
    g = inferred.graph
    return {vi.name: vi.type.tensor_type.elem_type
            for vi in [*g.value_info, *g.output, *g.input]
            if vi.type.HasField("tensor_type")} | {t.name: t.data_type for t in g.initializer}


def _cast_to(node: onnx.NodeProto) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None) \
        if node.op_type == "Cast" else None


def precision_rewrite(user: onnx.ModelProto, optimized: onnx.ModelProto
                      ) -> PrecisionRewrite | None:
    """The user's float16 nodes ``optimized`` computes in float32, or None where it computes
    each as declared."""
    types = _types(user)
    made = {o for n in user.graph.node for o in n.output if o}
    user_tensors = made | {i.name for i in user.graph.input} | \
        {t.name for t in user.graph.initializer}
    producers = {o: n for n in optimized.graph.node for o in n.output if o}
    covered: set[int] = set()
    inserted = 0
    for node in optimized.graph.node:
        to = _cast_to(node)
        if to is None or not node.input or not node.output:
            continue
        src, dst = node.input[0], node.output[0]
        widening = to in _WIDE and types.get(src) in _NARROW and dst not in user_tensors
        narrowing = to in _NARROW and dst in made and src not in user_tensors
        inserted += widening or narrowing
        if not narrowing:
            continue
        # Back from the narrowing Cast through the optimised graph to the user's tensors
        # the widened span starts from.
        boundary: set[str] = set()
        pending, seen = [src], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in user_tensors:
                boundary.add(name)
                continue
            maker = producers.get(name)
            if maker is not None:
                pending.extend(i for i in maker.input if i)
        covered.update(sg.region(user.graph, dst, boundary))
    if not covered:
        return None
    nodes = [user.graph.node[i] for i in sorted(covered)]
    wide = [n for n in nodes if n.op_type != "Cast"
            and any(types.get(o) in _NARROW for o in n.output)]
    if not wide:
        return None
    inside = {i for n in nodes for i in n.input}
    skipped = [o for n in wide for o in n.output if o in inside and types.get(o) in _NARROW]
    return PrecisionRewrite([node_label(n) for n in wide], skipped, inserted)


def side_precision_rewrite(backend: str, settings: Mapping[str, Any],
                           user: onnx.ModelProto) -> PrecisionRewrite | None:
    """``precision_rewrite`` of a runtime's optimised graph at these settings (None where it
    keeps none: ``Backend.keeps_optimized_graph``)."""
    runtime = backends.find(backend)
    if runtime is None or not runtime.keeps_optimized_graph:
        return None
    graph = runtime.optimized_graph(user.SerializeToString(), settings)
    return None if graph is None else precision_rewrite(user, graph)


def added_by_optimizer(user_ops: Mapping[str, int], optimized_ops: Mapping[str, int]
                       ) -> tuple[dict[str, int], dict[str, int]]:
    """(operators the optimised graph has more of, operators it has fewer of), by count."""
    mine, theirs = Counter(user_ops), Counter(optimized_ops)
    return dict(theirs - mine), dict(mine - theirs)
