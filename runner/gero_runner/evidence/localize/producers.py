"""Whether two graphs' tensors of one name are the same quantity: a variant file keeps its
model's tensor names, but a builder may fold a node into the one before it and give that
node the folded one's output name (ORT's static quantizer drops a Clip or Relu after an
Add or Conv when the quantised range covers it, so the Add writes the Clip's tensor,
unclipped). Two tensors of one name are compared only when the nodes that make them agree:
the same operator once the representation nodes a builder adds are looked through
(QuantizeLinear/DequantizeLinear pairs, Casts, the dequantizing Mul and bias Add after an
integer MatMul or Conv), or one of the equivalences below."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

LOOKED_THROUGH = frozenset({"QuantizeLinear", "DequantizeLinear", "Cast",
                            "DynamicQuantizeLinear"})
"""Nodes a builder adds around a computation without changing what it computes."""
INTEGER_OPS = {"MatMulInteger": "MatMul", "ConvInteger": "Conv"}
"""An integer operator and the float one it stands for (the dynamic quantizer's)."""
EQUIVALENT = {"Gemm": "MatMul", "FusedMatMul": "MatMul"}
"""Operators that compute the same product (the dynamic quantizer splits a Gemm into an
integer MatMul and an Add of the bias)."""
DEQUANTIZING = frozenset({"Mul", "Add"})
"""What follows an integer operator to give real units back (scale, then bias)."""


@dataclass(frozen=True)
class Renamed:
    """A tensor name two graphs give to different quantities."""

    tensor: str
    made_a: str
    """The node that makes it in the first graph ("OpType 'name'")."""
    made_b: str
    folded_in: str = ""
    """'a' or 'b': the graph that folded a node away (its maker of the tensor is, in the
    other graph, a node that writes another tensor, and the other graph's maker is
    missing from it); '' where neither is plainly a fold."""


def canonical(op_type: str) -> str:
    """The operator a node stands for: 'QLinearConv' and 'ConvInteger' are a Conv, a Gemm
    a MatMul, a com.microsoft 'DynamicQuantizeLSTM' an LSTM."""
    op = op_type.removeprefix("QLinear").removeprefix("DynamicQuantize")
    op = INTEGER_OPS.get(op, op)
    return EQUIVALENT.get(op, op)


def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in graph.node for o in n.output if o}


def maker(graph: onnx.GraphProto, tensor: str,
          made: dict[str, onnx.NodeProto] | None = None) -> onnx.NodeProto | None:
    """The node that computes ``tensor``, looking through the nodes a builder adds around
    it (``LOOKED_THROUGH``; a Mul or Add that dequantizes an integer operator's output)."""
    made = _producers(graph) if made is None else made
    node = made.get(tensor)
    for _ in range(16):  # a Q/DQ pair and a Cast or two: a short walk
        if node is None:
            return None
        if node.op_type in LOOKED_THROUGH and node.input and node.input[0] in made:
            node = made[node.input[0]]
            continue
        if node.op_type in DEQUANTIZING:
            integer = _integer_before(node, made)
            if integer is not None:
                return integer
        return node
    return node


def _integer_before(node: onnx.NodeProto, made: dict[str, onnx.NodeProto]
                    ) -> onnx.NodeProto | None:
    """The integer operator a dequantizing Mul or bias Add reads (through a Cast, the
    scale Mul), if any, within a few steps."""
    frontier = [node]
    for _ in range(4):
        nxt = []
        for n in frontier:
            for r in n.input:
                p = made.get(r)
                if p is None:
                    continue
                if p.op_type in INTEGER_OPS:
                    return p
                if p.op_type in ("Cast", *DEQUANTIZING):
                    nxt.append(p)
        frontier = nxt
    return None


def label(node: onnx.NodeProto | None, tensor: str) -> str:
    if node is None:
        return f"the input {tensor!r}"
    return f"{node.op_type} {(node.name or node.output[0])!r}"


def weights(graph: onnx.GraphProto) -> set[str]:
    """The tensors made from weights only (initializers, Constants and what is computed
    from them alone): a quantised file holds them as DequantizeLinear of its integers, or
    as initializers where the model had Constants; the same quantity either way."""
    inputs = {i.name for i in graph.input} - {t.name for t in graph.initializer}
    known = {t.name for t in graph.initializer}
    for node in graph.node:
        reads = [r for r in node.input if r]
        if node.op_type == "Constant" or (reads and all(r in known for r in reads)
                                          and not inputs & set(reads)):
            known.update(o for o in node.output if o)
    return known


def renamed(a: onnx.ModelProto, b: onnx.ModelProto, tensors: list[str]) -> list[Renamed]:
    """Among ``tensors`` (made in both graphs), those whose makers disagree, the folded
    ones first."""
    made_a, made_b = _producers(a.graph), _producers(b.graph)
    names_a = {n.name: n for n in a.graph.node if n.name}
    names_b = {n.name: n for n in b.graph.node if n.name}
    constant = weights(a.graph) | weights(b.graph)
    out = []
    for t in tensors:
        if t in constant:
            continue
        na, nb = maker(a.graph, t, made_a), maker(b.graph, t, made_b)
        if na is None or nb is None or canonical(na.op_type) == canonical(nb.op_type):
            continue
        # Folded: one side's maker is, by name, a node of the other graph that writes
        # something else, and the other side's maker is not in the first graph at all.
        folded = ""
        if na.name in names_b and t not in names_b[na.name].output and \
                nb.name not in names_a:
            folded = "a"
        elif nb.name in names_a and t not in names_a[nb.name].output and \
                na.name not in names_b:
            folded = "b"
        out.append(Renamed(t, label(na, t), label(nb, t), folded))
    return sorted(out, key=lambda r: not r.folded_in)


def graph_words(relative: str) -> str:
    """'variants/int8-static.onnx' → 'the int8-static file'; 'model.onnx' → 'the model'."""
    if relative.startswith("variants/") and relative.endswith(".onnx"):
        return f"the {relative.removeprefix('variants/').removesuffix('.onnx')} file"
    return "the model" if relative == "model.onnx" else relative


def sentence(found: list[Renamed], graph_a: str, graph_b: str) -> str:
    """What the graphs changed, in words, for a localization's notes."""
    wa, wb = graph_words(graph_a), graph_words(graph_b)
    first = found[0]
    if first.folded_in == "a":
        said = (f"{wa} folds {first.made_b} into {first.made_a}, which writes "
                f"{first.tensor!r} there")
    elif first.folded_in == "b":
        said = (f"{wb} folds {first.made_a} into {first.made_b}, which writes "
                f"{first.tensor!r} there")
    else:
        said = (f"{wa} makes {first.tensor!r} with {first.made_a}, {wb} with "
                f"{first.made_b}")
    more = (f" ({len(found) - 1} more tensor(s) like it: "
            f"{', '.join(r.tensor for r in found[1:4])}{'…' if len(found) > 4 else ''})"
            if len(found) > 1 else "")
    return (f"{said}{more}: a tensor of one name made by different operators is not the "
            "same quantity, so it is not compared; the nodes on either side of it are run "
            "as one region")
