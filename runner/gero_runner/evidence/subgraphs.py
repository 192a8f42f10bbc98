"""Graph surgery for localization: the nodes that make one tensor from tensors both paths
have (its region), a region as a model of its own, a prefix of a graph, and a graph with one
tensor fed from outside (a runtime marks intermediates as outputs itself:
``Backend.intermediates``).

Every function takes and returns ``onnx.ModelProto`` copies; the model a caller passes is
never changed. Names are the graph's own tensor names: two graphs (a model and its int8 or
float16 variant) are matched by them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import TensorProto, helper

from gero_runner.models.graph import subgraph_reads

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE,
               TensorProto.BFLOAT16}
QUANTIZED_TYPES = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
                   TensorProto.INT32}
"""Integer tensors compared exactly (quantized activations and their accumulators; int64 and
bool tensors are shapes and masks)."""


def copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Every name the node reads, its subgraphs' outer reads included."""
    return [i for i in dict.fromkeys([*node.input, *sorted(subgraph_reads(node))]) if i]


def producers(graph: onnx.GraphProto) -> dict[str, int]:
    """Tensor name -> index of the node that makes it."""
    return {o: i for i, n in enumerate(graph.node) for o in n.output if o}


def prefix(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """The nodes needed for ``names`` only, with ``names`` as the outputs: a run of a
    prefix of a large graph costs what the prefix costs."""
    wanted = list(dict.fromkeys(names))
    out = copy(model)
    graph = out.graph
    needed = set(wanted)
    keep: list[onnx.NodeProto] = []
    for node in reversed(list(graph.node)):
        if needed & set(node.output):
            keep.append(node)
            needed.update(node_reads(node))
    kept = list(reversed(keep))
    copies = [onnx.NodeProto() for _ in kept]
    for c, n in zip(copies, kept, strict=True):
        c.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(copies)
    inputs = [i for i in graph.input if i.name in needed]
    del graph.input[:]
    graph.input.extend(inputs)
    inits = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    del graph.output[:]
    graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted)
    return out


def region(graph: onnx.GraphProto, tensor: str, available: set[str]) -> list[int]:
    """Indices (in graph order) of the nodes that make ``tensor`` from ``available``
    tensors, the graph's inputs and its initializers: one node where every tensor is
    compared, the nodes a runtime fused where only the fused node's ends survive."""
    made = producers(graph)
    stop = available | {i.name for i in graph.input} | {t.name for t in graph.initializer}
    if tensor not in made:
        return []
    found: set[int] = set()
    pending = [made[tensor]]
    while pending:
        i = pending.pop()
        if i in found:
            continue
        found.add(i)
        for name in node_reads(graph.node[i]):
            if name not in stop and name in made:
                pending.append(made[name])
    return sorted(found)


def region_inputs(graph: onnx.GraphProto, nodes: list[int]) -> list[str]:
    """What a region reads from outside it (initializers aside), in first-read order: names
    of this graph (its inputs, its nodes' outputs). A subgraph's own tensors, which
    ``node_reads`` includes, are no tensor of this graph that a run could give."""
    made = {o for i in nodes for o in graph.node[i].output}
    inits = {t.name for t in graph.initializer}
    known = {i.name for i in graph.input} | set(producers(graph))
    return list(dict.fromkeys(name for i in nodes for name in node_reads(graph.node[i])
                              if name in known and name not in made and name not in inits))


def region_model(model: onnx.ModelProto, nodes: list[int], outputs: list[str],
                 feeds: dict[str, np.ndarray], name: str = "region",
                 typed: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The region alone as a model: its outer reads are graph inputs typed and shaped as
    ``feeds`` (the values it will be given), the initializers it reads come along, and
    ``outputs`` are its outputs (typed as ``typed`` gives them, when it does: the ONNX
    checker wants a type). Opsets, IR version and local functions are the model's."""
    graph = model.graph
    picked = [graph.node[i] for i in nodes]
    reads = {r for n in picked for r in node_reads(n)}
    inits = [t for t in graph.initializer if t.name in reads]
    init_names = {t.name for t in inits}
    made = {o for n in picked for o in n.output}
    inputs = [helper.make_tensor_value_info(
        k, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), list(np.asarray(v).shape))
        for k, v in feeds.items() if k in reads and k not in made and k not in init_names]
    typed = typed or {}
    outs = [helper.make_tensor_value_info(
        o, helper.np_dtype_to_tensor_dtype(typed[o].dtype), list(typed[o].shape))
        if o in typed else onnx.ValueInfoProto(name=o) for o in outputs]
    sub = helper.make_graph([_copy_node(n) for n in picked], name, inputs, outs, inits)
    out = helper.make_model(sub, opset_imports=list(model.opset_import))
    out.ir_version = model.ir_version
    out.functions.extend(model.functions)
    return out


def regions_model(model: onnx.ModelProto, regions: list[tuple[list[int], str]],
                  feeds: dict[str, np.ndarray]) -> tuple[onnx.ModelProto, dict[str, str]] | None:
    """Several regions side by side as one model (one compile instead of one per region):
    the tensors each region makes are renamed ``NAME__gero_alone{i}``, so a tensor one
    region makes and another is fed from outside stay apart, and the outer reads are graph
    inputs shared by name, typed as ``feeds``. Returns the model and each region's tensor's
    name in it; None where a region holds a subgraph (its inner reads would need renaming)."""
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    reads: set[str] = set()
    names: dict[str, str] = {}
    for i, (picked, tensor) in enumerate(regions):
        originals = [graph.node[j] for j in picked]
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for n in originals for a in n.attribute):
            return None
        made = {o for n in originals for o in n.output if o}
        if tensor not in made:
            return None
        rename = {m: f"{m}__gero_alone{i}" for m in made}
        for n in originals:
            c = _copy_node(n)
            reads.update(r for r in c.input if r and r not in made)
            c.input[:] = [rename.get(r, r) for r in c.input]
            c.output[:] = [rename.get(o, o) for o in c.output]
            if c.name:
                c.name = f"{c.name}__gero_alone{i}"
            nodes.append(c)
        names[tensor] = rename[tensor]
    inits = [t for t in graph.initializer if t.name in reads]
    inputs = [helper.make_tensor_value_info(
        k, helper.np_dtype_to_tensor_dtype(np.asarray(feeds[k]).dtype),
        list(np.asarray(feeds[k]).shape)) for k in sorted(reads - init_names) if k in feeds]
    if len(inputs) != len(reads - init_names):
        return None  # a read with no value given
    outs = [onnx.ValueInfoProto(name=n) for n in names.values()]
    out = helper.make_model(helper.make_graph(nodes, "regions", inputs, outs, inits),
                            opset_imports=list(model.opset_import))
    out.ir_version = model.ir_version
    out.functions.extend(model.functions)
    return out, names


def fed_from_outside(model: onnx.ModelProto, tensor: str, value: np.ndarray
                     ) -> onnx.ModelProto:
    """The model with ``tensor`` a graph input (given ``value``'s type and shape) instead of
    a node's output: what follows it sees the value given. The producing node's output is
    renamed, so its other outputs still flow."""
    out = copy(model)
    graph = out.graph
    for node in graph.node:
        for j, o in enumerate(node.output):
            if o == tensor:
                node.output[j] = f"{tensor}__gero_replaced"
    graph.input.append(helper.make_tensor_value_info(
        tensor, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)))
    return out


def _copy_node(node: onnx.NodeProto) -> onnx.NodeProto:
    c = onnx.NodeProto()
    c.CopyFrom(node)
    return c


def elem_types(model: onnx.ModelProto, inputs: dict[str, np.ndarray]
               ) -> dict[str, tuple[int, int | None]]:
    """Tensor name -> (ONNX element type, bytes when the shape is known) by shape inference
    with the inputs' concrete shapes; names inference cannot type are missing."""
    fixed = copy(model)
    for i in fixed.graph.input:
        if i.name in inputs:
            x = np.asarray(inputs[i.name])
            i.type.tensor_type.ClearField("shape")
            for d in x.shape:
                i.type.tensor_type.shape.dim.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(fixed, data_prop=True)
    except Exception:  # a model inference cannot take (custom domains): types unknown
        inferred = fixed
    out: dict[str, tuple[int, int | None]] = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input]:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not tt.elem_type:
            continue
        size: int | None = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            count = int(np.prod([d.dim_value for d in tt.shape.dim], dtype=np.int64))
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)).itemsize
            size = count * itemsize
        out[vi.name] = (tt.elem_type, size)
    return out
