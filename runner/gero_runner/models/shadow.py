"""The float64 shadow of a model: every float tensor widened to float64, run on the
ReferenceEvaluator, as the arbiter of disagreements between float32 paths.

Widened: graph inputs, outputs and value_info types; initializers; Constant values (its
``value_float(s)`` become a float64 ``value``); ConstantOfShape values (one without
``value`` makes float32 zeros: it gets a float64 zero); ``to``/``dtype`` attributes that
name a float type (Cast, EyeLike, RandomNormal…; RandomNormal/RandomUniform without
``dtype`` make float32: they get float64), in the main graph, in every subgraph (If/Loop/Scan
bodies) and in the model's local functions. An operator whose schema fixes a float32 output
(ai.onnx.ml's Scaler, TreeEnsemble…) gets a Cast to float64 after it. An operator that
reads the bits of its float input (BitCast) cannot be widened: ``obstacles`` names it, and
no shadow is made.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.backends.reference_evaluator import run_releasing
from gero_runner.errors import GeroError

_FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
_WIDE_DTYPES = {"float16", "float32", "bfloat16"}
"""NumPy names of the element types widened (float8/float4 stay as they are, as in the graph)."""

BIT_EXACT_OPS = frozenset({"BitCast"})
"""Operators whose result depends on the bits of their float input's type: computed on
float64 bits they give another result (or refuse), so a model holding one has no shadow."""

_TYPE_ATTRIBUTES = ("to", "dtype", "output_datatype")
_FLOAT_DEFAULT_DTYPE = {"RandomNormal": "dtype", "RandomUniform": "dtype",
                        "BlackmanWindow": "output_datatype", "HammingWindow": "output_datatype",
                        "HannWindow": "output_datatype", "MelWeightMatrix": "output_datatype"}
"""Operators whose output is float32 when their type attribute is absent."""


class ShadowUnavailable(GeroError):
    """The model holds an operator that cannot be widened to float64."""


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


def _widen_attributes(node: onnx.NodeProto, opsets: dict[str, int]) -> None:
    for attr in node.attribute:
        if attr.ref_attr_name:
            continue  # a function's attribute reference: widened where it is given
        if attr.type == onnx.AttributeProto.TENSOR:
            attr.t.CopyFrom(_widen_tensor(attr.t))
        elif attr.type == onnx.AttributeProto.INT and attr.name in _TYPE_ATTRIBUTES \
                and attr.i in _FLOATS:
            attr.i = TensorProto.DOUBLE
        elif attr.type == onnx.AttributeProto.GRAPH:
            _widen_graph(attr.g, opsets)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for g in attr.graphs:
                _widen_graph(g, opsets)
    names = {a.name for a in node.attribute}
    if node.domain not in ("", "ai.onnx"):
        return
    if node.op_type == "Constant" and names & {"value_float", "value_floats"}:
        attr = next(a for a in node.attribute if a.name in ("value_float", "value_floats"))
        if not attr.ref_attr_name:
            value = np.asarray(onnx.helper.get_attribute_value(attr), dtype=np.float64)
            node.attribute.remove(attr)
            node.attribute.append(onnx.helper.make_attribute(
                "value", numpy_helper.from_array(value)))
    elif node.op_type == "ConstantOfShape" and "value" not in names:
        node.attribute.append(onnx.helper.make_attribute(
            "value", numpy_helper.from_array(np.zeros(1, np.float64))))
    elif node.op_type in _FLOAT_DEFAULT_DTYPE and _FLOAT_DEFAULT_DTYPE[node.op_type] not in names:
        node.attribute.append(onnx.helper.make_attribute(_FLOAT_DEFAULT_DTYPE[node.op_type],
                                                         TensorProto.DOUBLE))


NARROW_KERNELS = frozenset({"AffineGrid", "Adam"})
"""Operators whose ReferenceEvaluator kernel returns float32 whatever its input: their
output is cast to float64 after them (the shadow carries their float32 rounding)."""

_NARROW_TYPES = {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"}


def _fixed_float_outputs(node: onnx.NodeProto, opsets: dict[str, int]) -> list[int]:
    """Indices of the outputs that stay float32/float16 in a widened graph: those whose
    schema allows no float64 (ai.onnx.ml's Scaler, TfIdfVectorizer…) and those of a
    float32 kernel (NARROW_KERNELS)."""
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    if node.op_type in NARROW_KERNELS:
        return list(range(len(node.output)))
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
    except onnx.defs.SchemaError:
        return []
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    found = []
    for i, _ in enumerate(node.output):
        if not schema.outputs:
            break
        formal = schema.outputs[min(i, len(schema.outputs) - 1)]
        types = allowed.get(formal.type_str, {formal.type_str})
        if types & _NARROW_TYPES and "tensor(double)" not in types:
            found.append(i)
    return found


def _widen_nodes(nodes: Any, opsets: dict[str, int]) -> None:
    """Widen each node in place; a node with a fixed float output gets a Cast after it."""
    widened: list[onnx.NodeProto] = []
    for node in nodes:
        _widen_attributes(node, opsets)
        widened.append(node)
        for i in _fixed_float_outputs(node, opsets):
            name = node.output[i]
            if not name:
                continue
            node.output[i] = f"{name}__gero_narrow"
            widened.append(onnx.helper.make_node("Cast", [node.output[i]], [name],
                                                 to=TensorProto.DOUBLE))
    copies = [onnx.NodeProto() for _ in widened]
    for c, n in zip(copies, widened, strict=True):
        c.CopyFrom(n)
    del nodes[:]
    nodes.extend(copies)


def _widen_graph(graph: onnx.GraphProto, opsets: dict[str, int]) -> None:
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        _widen_type(vi.type)
    for i, t in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(_widen_tensor(t))
    _widen_nodes(graph.node, opsets)


def _all_nodes(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    for node in nodes:
        yield node
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                yield from _all_nodes(g.node)


def _known_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of each value shape inference types (main graph)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an uninferable model: its types stay unknown
        inferred = model
    g = inferred.graph
    types = {t.name: t.data_type for t in g.initializer}
    types.update({vi.name: vi.type.tensor_type.elem_type
                  for vi in [*g.input, *g.output, *g.value_info]
                  if vi.type.HasField("tensor_type")})
    return types


def _reads_float_bits(node: onnx.NodeProto, types: dict[str, int]) -> bool:
    to = next((a.i for a in node.attribute if a.name == "to"), 0)
    return to in _FLOATS or types.get(node.input[0], 0) in (*_FLOATS, 0)


def obstacles(model: onnx.ModelProto) -> list[str]:
    """The operators of ``model`` (subgraphs and local functions included) that cannot be
    widened to float64, sorted; empty when the shadow can be made. A BitCast is one when
    it reads or makes a float32/float16 (or a type nobody can infer)."""
    nodes = [n for n in [*_all_nodes(model.graph.node),
                         *(n for f in model.functions for n in _all_nodes(f.node))]
             if n.domain in ("", "ai.onnx") and n.op_type in BIT_EXACT_OPS]
    if not nodes:
        return []
    types = _known_types(model)
    return sorted({n.op_type for n in nodes if _reads_float_bits(n, types)})


def obstacle_sentence(ops: list[str]) -> str:
    """The verdict's sentence for a model whose shadow cannot be built."""
    return (f"no float64 arbiter: {', '.join(ops)} cannot be widened (the result depends "
            "on the bits of its float input's type)")


FUNCTION_DOMAIN = "gero.shadow"
"""Domain of the local copies of onnx function bodies the shadow widens."""


def _localise_function_ops(model: onnx.ModelProto, opsets: dict[str, int]) -> None:
    """An operator the evaluator runs through its onnx function body (no NumPy kernel:
    MeanVarianceNormalization) makes that body's constants float32: a local copy of the
    body, widened with the model, runs instead."""
    from onnx.reference.ops._op_list import load_op

    made: set[str] = set()
    for node in _all_nodes(model.graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        version = opsets.get("", 1)
        try:
            load_op("", node.op_type, version)
            continue
        except Exception:  # no NumPy kernel of that version
            pass
        try:
            schema: Any = onnx.defs.get_schema(node.op_type, version, "")  # stubs lack has_function
        except onnx.defs.SchemaError:
            continue
        if not schema.has_function:
            continue
        node.domain = FUNCTION_DOMAIN
        if node.op_type not in made:
            made.add(node.op_type)
            body = onnx.FunctionProto()
            body.CopyFrom(schema.function_body)
            body.domain = FUNCTION_DOMAIN
            if not any(o.domain in ("", "ai.onnx") for o in body.opset_import):
                body.opset_import.append(onnx.helper.make_opsetid("", version))
            model.functions.append(body)
    if made:
        model.opset_import.append(onnx.helper.make_opsetid(FUNCTION_DOMAIN, 1))


MS_DOMAIN = "com.microsoft"
DEQUANTIZED = ("DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM")
"""The quantised operators an already quantised model's shadow computes dequantized:
DynamicQuantizeLinear as the identity (scale 1, zero point 0), MatMulInteger as
(A - a0)·(B - b0) and ConvInteger as Conv(x - x0, w - w0) in float64, com.microsoft
DynamicQuantizeLSTM as an LSTM with its int8 weights dequantized."""


def needs_dequantizing(model: onnx.ModelProto) -> list[str]:
    """The quantised com.microsoft operators (the ReferenceEvaluator has none) that the
    shadow computes dequantized (``DEQUANTIZED``), sorted; empty: the shadow is exact."""
    return sorted({n.op_type for n in _all_nodes(model.graph.node)
                   if n.domain == MS_DOMAIN and n.op_type in DEQUANTIZED})


def dequantized_sentence(ops: list[str]) -> str:
    return (f"the float64 arbiter computes {', '.join(MS_DOMAIN + ' ' + o for o in ops)} "
            "with the int8 weights dequantized, and DynamicQuantizeLinear as the identity "
            "(no quantisation of activations): it arbitrates the model's float computation, "
            "not its int8 rounding")


def inexact_sentence(ops: list[str]) -> str:
    """Why a file holding quantised com.microsoft operators has no exact float64 shadow
    (an already quantised model's fp16 file: tashkeel's DynamicQuantizeLSTM)."""
    return (f"no exact float64 computation of {', '.join(MS_DOMAIN + ' ' + o for o in ops)}: "
            "the ReferenceEvaluator has none, and the model's arbiter computes it with the "
            "int8 weights dequantized and no activation rounding, which is not this file's "
            "computation")


def _const(name: str, value: float) -> onnx.NodeProto:
    return onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(value, np.float64)))


def _centred(name: str, zero: str, out: str) -> list[onnx.NodeProto]:
    """out = float64(name) - float64(zero) (just the cast without a zero point)."""
    if not zero:
        return [onnx.helper.make_node("Cast", [name], [out], to=TensorProto.DOUBLE)]
    return [onnx.helper.make_node("Cast", [name], [f"{out}__v"], to=TensorProto.DOUBLE),
            onnx.helper.make_node("Cast", [zero], [f"{out}__z"], to=TensorProto.DOUBLE),
            onnx.helper.make_node("Sub", [f"{out}__v", f"{out}__z"], [out])]


def _dequantized_lstm(node: onnx.NodeProto, inits: dict[str, TensorProto],
                      graph: onnx.GraphProto) -> list[onnx.NodeProto] | None:
    """An ONNX LSTM with W and R dequantized in float64 (None: weights not constant)."""
    ins = [*node.input, *[""] * (12 - len(node.input))]
    parts = [ins[i] for i in (1, 2, 8, 9, 10, 11)]
    if not all(p in inits for p in parts):
        return None
    w, r, ws, wz, rs, rz = (numpy_helper.to_array(inits[p]).astype(np.float64) for p in parts)

    def dequantize(q: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
        # [directions, rows, 4*hidden], scale/zero per direction or per direction and gate
        shape = (q.shape[0], 1, -1)
        wide = (q - zero.reshape(shape)) * scale.reshape(shape)
        return np.ascontiguousarray(wide.transpose(0, 2, 1))  # ONNX LSTM: [dir, 4H, rows]

    names = [f"{node.output[0] or node.name}__gero_W", f"{node.output[0] or node.name}__gero_R"]
    graph.initializer.extend([numpy_helper.from_array(dequantize(w, ws, wz), names[0]),
                              numpy_helper.from_array(dequantize(r, rs, rz), names[1])])
    inputs = [ins[0], names[0], names[1], *ins[3:8]]
    while inputs and not inputs[-1]:
        inputs.pop()
    lstm = onnx.helper.make_node("LSTM", inputs, list(node.output), name=node.name)
    lstm.attribute.extend(node.attribute)
    return [lstm]


def _dequantized_conv(node: onnx.NodeProto, inits: dict[str, TensorProto],
                      graph: onnx.GraphProto) -> list[onnx.NodeProto] | None:
    """ConvInteger as a float64 Conv of x - x0 and w - w0 (None: w or w0 not constant).
    Left as it is, the evaluator's ConvInteger would truncate the identity's float
    activations to integers (X.astype(np.int32))."""
    x, w, x0, w0 = [*node.input, "", ""][:4]
    if w not in inits or (w0 and w0 not in inits):
        return None
    weight = numpy_helper.to_array(inits[w]).astype(np.float64)
    if w0:  # a scalar, or one per output channel
        zero = numpy_helper.to_array(inits[w0]).astype(np.float64)
        weight = weight - (zero if zero.ndim == 0
                           else zero.reshape((-1,) + (1,) * (weight.ndim - 1)))
    y = node.output[0]
    graph.initializer.append(numpy_helper.from_array(weight, f"{y}__gero_w"))
    conv = onnx.helper.make_node("Conv", [f"{y}__gero_x", f"{y}__gero_w"], [y], name=node.name)
    conv.attribute.extend(node.attribute)
    return [*_centred(x, x0, f"{y}__gero_x"), conv]


def _run_time_bias_rounding(graph: onnx.GraphProto) -> set[str]:
    """Outputs of the Floor/Round nodes that quantise a bias at run time: Floor(b /
    (x_scale·w_scale)), cast to int32 (maybe reshaped) and added to a ConvInteger's or
    MatMulInteger's int32 sum (ONNX Runtime's dynamic Conv). With the identity's scale 1
    the shadow keeps them unrounded, in float64 (its Cast too)."""
    producer = {o: n for n in graph.node for o in n.output}
    sums = {n.output[0] for n in graph.node if n.op_type in ("ConvInteger", "MatMulInteger")}
    found: set[str] = set()
    for add in graph.node:
        if add.op_type != "Add" or not set(add.input) & sums:
            continue
        name = next((i for i in add.input if i not in sums), "")
        node = producer.get(name)
        while node is not None and node.op_type in ("Reshape", "Unsqueeze"):
            node = producer.get(node.input[0])
        if node is None or node.op_type != "Cast" or not any(
                a.name == "to" and a.i == TensorProto.INT32 for a in node.attribute):
            continue
        rounding = producer.get(node.input[0])
        if rounding is not None and rounding.op_type in ("Floor", "Round"):
            found.add(rounding.output[0])
    return found


def _dequantize_graph(graph: onnx.GraphProto) -> None:
    """Rewrite ``DEQUANTIZED`` operators of ``graph`` in place (see there)."""
    inits = {t.name: t for t in graph.initializer}
    out: list[onnx.NodeProto] = []
    rewritten: set[str] = set()
    bias_rounding = _run_time_bias_rounding(graph)
    for node in graph.node:
        made: list[onnx.NodeProto] | None = None
        if (node.op_type in ("Floor", "Round") and node.output[0] in bias_rounding) or \
                (node.op_type == "Cast" and node.input[0] in bias_rounding):
            made = [onnx.helper.make_node("Identity", [node.input[0]], [node.output[0]])]
        elif node.op_type == "DynamicQuantizeLinear" and node.domain in ("", "ai.onnx"):
            y, scale, zero = [*node.output, "", ""][:3]
            made = [onnx.helper.make_node("Identity", [node.input[0]], [y])] if y else []
            made += [_const(n, v) for n, v in ((scale, 1.0), (zero, 0.0)) if n]
        elif node.op_type == "MatMulInteger" and node.domain in ("", "ai.onnx"):
            a, b, a0, b0 = [*node.input, "", ""][:4]
            y = node.output[0]
            made = [*_centred(a, a0, f"{y}__gero_a"), *_centred(b, b0, f"{y}__gero_b"),
                    onnx.helper.make_node("MatMul", [f"{y}__gero_a", f"{y}__gero_b"], [y])]
        elif node.op_type == "ConvInteger" and node.domain in ("", "ai.onnx"):
            made = _dequantized_conv(node, inits, graph)
        elif node.op_type == "DynamicQuantizeLSTM" and node.domain == MS_DOMAIN:
            made = _dequantized_lstm(node, inits, graph)
        if made is None:
            out.append(node)
            continue
        rewritten.update(node.output)
        out.extend(made)
    if not rewritten:
        return
    kept = [vi for vi in graph.value_info if vi.name not in rewritten]  # int types no more
    del graph.value_info[:]
    graph.value_info.extend(kept)
    copies = [onnx.NodeProto() for _ in out]
    for c, n in zip(copies, out, strict=True):
        c.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(copies)


QLINEAR: dict[str, tuple[str, int]] = {
    "QLinearAdd": ("Add", 2), "QLinearMul": ("Mul", 2), "QLinearSigmoid": ("Sigmoid", 1),
    "QLinearLeakyRelu": ("LeakyRelu", 1), "QLinearGlobalAveragePool": ("GlobalAveragePool", 1),
    "QLinearSoftmax": ("Softmax", 1)}
"""com.microsoft QLinear operators the shadow computes as what they stand for, exactly:
each (x, scale, zero point) input dequantized, the float operator, the result quantized
with the output's scale and zero point (float op, number of quantized inputs)."""
_QLINEAR_ATTRIBUTES = {"LeakyRelu": ("alpha",), "Softmax": ("axis",)}


def _dequantized(x: str, scale: str, zero: str, out: str) -> list[onnx.NodeProto]:
    """out = (float64(x) - float64(zero)) * scale, in plain arithmetic: the evaluator has
    DequantizeLinear only from opset 19."""
    return [*_centred(x, zero, f"{out}__c"),
            onnx.helper.make_node("Mul", [f"{out}__c", scale], [out])]


def _quantized(f: str, scale: str, zero: str, elem: int, out: str) -> list[onnx.NodeProto]:
    """out = saturate(round_half_even(f / scale) + zero) in ``elem`` (QuantizeLinear)."""
    info = np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(elem))
    made = [onnx.helper.make_node("Div", [f, scale], [f"{out}__d"]),
            onnx.helper.make_node("Round", [f"{out}__d"], [f"{out}__r"]),
            onnx.helper.make_node("Cast", [zero], [f"{out}__z"], to=TensorProto.DOUBLE),
            onnx.helper.make_node("Add", [f"{out}__r", f"{out}__z"], [f"{out}__s"]),
            _const(f"{out}__lo", float(info.min)), _const(f"{out}__hi", float(info.max)),
            onnx.helper.make_node("Max", [f"{out}__s", f"{out}__lo"], [f"{out}__m"]),
            onnx.helper.make_node("Min", [f"{out}__m", f"{out}__hi"], [f"{out}__q"]),
            onnx.helper.make_node("Cast", [f"{out}__q"], [out], to=elem)]
    return made


def _emulated_qlinear(node: onnx.NodeProto, inits: dict[str, TensorProto]
                      ) -> list[onnx.NodeProto] | None:
    """The QLinear node as dequantize → op → quantize in float64 arithmetic (None: not
    one of QLINEAR, channels-last, or an output zero point that is not a constant)."""
    if node.domain != MS_DOMAIN or node.op_type not in QLINEAR:
        return None
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    op, count = QLINEAR[node.op_type]
    ins = [*node.input, *[""] * (3 * count + 2 - len(node.input))]
    y_scale, y_zero = ins[3 * count:3 * count + 2]
    if attrs.get("channels_last", 0) or y_zero not in inits:
        return None
    y = node.output[0]
    made: list[onnx.NodeProto] = []
    for i in range(count):
        x, scale, zero = ins[3 * i:3 * i + 3]
        made += _dequantized(x, scale, zero, f"{y}__gero_x{i}")
    kept = {k: v for k, v in attrs.items() if k in _QLINEAR_ATTRIBUTES.get(op, ())}
    made.append(onnx.helper.make_node(op, [f"{y}__gero_x{i}" for i in range(count)],
                                      [f"{y}__gero_f"], **kept))
    return made + _quantized(f"{y}__gero_f", y_scale, y_zero, inits[y_zero].data_type, y)


def _emulate_qlinear_graph(graph: onnx.GraphProto) -> None:
    inits = {t.name: t for t in graph.initializer}
    out: list[onnx.NodeProto] = []
    for node in graph.node:
        out.extend(_emulated_qlinear(node, inits) or [node])
    if len(out) == len(graph.node):
        return
    copies = [onnx.NodeProto() for _ in out]
    for c, n in zip(copies, out, strict=True):
        c.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(copies)


SHADOW_COMPUTES = frozenset({*DEQUANTIZED, *QLINEAR})
"""The com.microsoft operators the shadow computes although the evaluator has none."""


def widen(model: onnx.ModelProto, dequantize: bool = False) -> onnx.ModelProto:
    """A float64 copy of ``model`` (the original is untouched); raises ShadowUnavailable
    when an operator cannot be widened (``obstacles``). ``dequantize``: the quantised
    operators are computed dequantized (``DEQUANTIZED``)."""
    ops = obstacles(model)
    if ops:
        raise ShadowUnavailable(obstacle_sentence(ops))
    if not dequantize and (quantised := needs_dequantizing(model)):
        raise ShadowUnavailable(inexact_sentence(quantised))
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    if dequantize:
        _dequantize_graph(wide.graph)
    _emulate_qlinear_graph(wide.graph)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version
              for o in wide.opset_import}
    _localise_function_ops(wide, opsets)
    _widen_graph(wide.graph, opsets)
    for f in wide.functions:
        _widen_nodes(f.node, opsets)
    if "" not in opsets and any(n.op_type == "Cast" and n.domain == ""
                                for n in _all_nodes(wide.graph.node)):
        wide.opset_import.append(onnx.helper.make_opsetid("", 13))  # for the added Casts
    return wide


def _widen_value(v: Any) -> Any:
    if isinstance(v, np.ndarray | np.generic):  # a 0-d input may come as a NumPy scalar
        return np.asarray(v, np.float64) if v.dtype.name in _WIDE_DTYPES else v
    if isinstance(v, list):  # a sequence input
        return [_widen_value(x) for x in v]
    return v  # None (an empty optional), a map


def widen_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: _widen_value(v) for k, v in inputs.items()}


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
    raises). The arbiter of a user's model: one holding a quantised com.microsoft operator
    is computed dequantized (``needs_dequantizing``); ``run_shadow``, the exact shadow of
    a variant file, never is."""
    evaluator: Any = corrected_evaluator(widen(model, bool(needs_dequantizing(model))))
    empty: list[EmptyIntermediate] = []

    def watch(node: onnx.NodeProto, name: str, value: Any) -> None:
        if not empty and node.op_type != "Constant" and isinstance(value, np.ndarray) \
                and value.ndim >= 2 and value.size == 0 and value.dtype.kind == "f":
            empty.append(EmptyIntermediate(name, node.op_type, node.name,
                                           tuple(value.shape)))

    with np.errstate(all="ignore"):
        outputs = run_releasing(evaluator, widen_inputs(inputs), watch)
    return ShadowTrace(outputs, empty[0] if empty else None)
