"""int8 and float16 variants of a model, built with ONNX Runtime's own tools.

- ``int8-dynamic``: ``quantize_dynamic``, int8 weights per channel, activations quantized
  at run time.
- On an x86 CPU without VNNI both int8 variants quantise weights to 7 bits
  (``reduce_range``), as ONNX Runtime's quantization guide advises: its U8S8 kernels there
  (VPMADDUBSW) saturate int16 sums and are off by whole units otherwise (a 2.6 max error on
  an 8x4 MatMul). The model file says so in its ``gero.int8_reduce_range`` metadata.
- A tensor quantised over a non-finite or near-FLT_MAX range (an additive attention mask
  of 0 and -3.4e38: scale 1.33e36) is named in the file's ``gero.build_notes`` metadata
  (``huge_ranges``); the variant's rows carry the sentence as a note. An activation whose
  calibrated range is not finite (an additive mask of 0 and -inf: scale +inf, every value
  NaN after its Q/DQ pair) is kept float in the int8-static file, and a note says which
  (``keep_nonfinite_float``): the file then measures int8, not the builder.
- The fp16 file of a model without ai.onnx operators (ai.onnx.ml only) imports ai.onnx for
  the Casts the converter adds; a Resize given ``sizes`` keeps its empty ``scales`` a
  float32 initializer (``_empty_resize_scales``).

Before quantising, weights that an exporter wrote as Constant nodes become initializers
(the quantizer only finds weights there).
- ``int8-static``: ``quantize_static``, QDQ format, int8 weights per channel and int8
  activations, MinMax calibration over the user's arrays (``--calibration FILE.npz``, else
  the ``--inputs`` arrays). Without either, over seeded synthetic inputs (the case's float
  inputs redrawn from a normal field with the same shape): those exercise the quantized
  kernels but do not calibrate for accuracy, and the variant's verdict says so. The
  calibration session runs in priority-based order (``_calibration_in_priority_order``).
- ``fp16``: ``onnxruntime.transformers.float16.convert_float_to_float16`` with
  ``keep_io_types``: float16 weights and activations, float32 graph inputs and outputs with a
  Cast at each end, finite values beyond the float16 range clamped to ±65504. The
  quantisation operators of an already quantised graph stay float32 (blocked, with Casts),
  and so does its dequantisation arithmetic (a Cast from an int32 accumulator and the scale
  Mul after it, which float16 would make inf past 65504): a build note says so. A model
  with no float32 tensor (a float64 TreeEnsemble) gets no fp16 file: nothing to convert.
"""

from __future__ import annotations

import logging
import platform
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner.errors import GeroError
from gero_runner.models.graph import subgraph_reads, subgraphs
from gero_runner.schema import MODEL_VARIANTS

INT8_DYNAMIC, INT8_STATIC, FP16 = MODEL_VARIANTS
VARIANTS = MODEL_VARIANTS
CALIBRATION_SAMPLES = 8
QDQ_OPSET = 19
"""The ReferenceEvaluator implements QuantizeLinear/DequantizeLinear from opset 19 on, so
static QDQ variants are built from the model converted to opset 19 when it is older."""


def parse_variants(names: list[str]) -> list[str]:
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        raise GeroError(f"unknown variant(s) {', '.join(bad)}; choose from {', '.join(VARIANTS)}")
    return list(dict.fromkeys(names))


UNCALIBRATED = ("uncalibrated: quantised with ranges from seeded N(0,1) noise, not from "
                "the model's data (give --inputs or --calibration FILE.npz)")
"""What an int8-static verdict says when no user arrays calibrated the variant."""


@dataclass(frozen=True)
class Calibration:
    """The feeds an ``int8-static`` variant is calibrated on, and where they came from."""

    samples: tuple[dict[str, np.ndarray], ...] = ()
    source: str = ""
    """e.g. 'the --inputs arrays of x.npz'; empty: seeded noise (uncalibrated)."""

    def note(self) -> str:
        return f"calibrated on {self.source}" if self.samples else UNCALIBRATED


def calibration_from_arrays(arrays: dict[str, np.ndarray], feeds: dict[str, np.ndarray],
                            source: str) -> Calibration:
    """``--calibration`` arrays as feeds: each array has its input's rank (one sample) or
    one more (a leading sample axis); an input the file lacks keeps the run's feed."""
    unknown = sorted(set(arrays) - set(feeds))
    if unknown:
        raise GeroError(f"{source}: array(s) {', '.join(unknown)} name no model input; "
                        f"inputs: {', '.join(feeds)}")
    if not arrays:
        raise GeroError(f"{source}: holds no array")
    counts: dict[str, int] = {}
    for name, x in arrays.items():
        rank = feeds[name].ndim
        if x.ndim == rank:
            counts[name] = 1
        elif x.ndim == rank + 1 and x.shape[0] > 0:
            counts[name] = x.shape[0]
        else:
            raise GeroError(f"{source}: array {name!r} has shape {list(x.shape)}; input "
                            f"{name!r} has rank {rank}: give its shape, or one more leading "
                            "axis of samples")
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{k} {v}" for k, v in counts.items())
        raise GeroError(f"{source}: the arrays hold different numbers of samples ({listed})")
    n = next(iter(counts.values()))
    samples = []
    for i in range(n):
        sample = dict(feeds)
        for name, x in arrays.items():
            one = x if x.ndim == feeds[name].ndim else x[i]
            sample[name] = np.ascontiguousarray(one.astype(feeds[name].dtype, copy=False))
        samples.append(sample)
    return Calibration(tuple(samples), f"{source} ({n} sample{'s' if n > 1 else ''})")


_INVALID_GRAPH = ("INVALID_GRAPH", "INVALID_PROTOBUF", "Type Error", "ShapeInferenceError",
                  "type mismatch")


def invalid_graph(error: str) -> bool:
    """Whether a runtime's error says the file is not a valid graph (a type or shape
    inference error), rather than that it lacks a kernel or failed while running."""
    return any(k in error for k in _INVALID_GRAPH)


QUANTISED_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger",
                 "MatMulInteger", "QLinearConv", "QLinearMatMul", "DynamicQuantizeLSTM",
                 "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QAttention", "QGemm",
                 "QLinearAdd", "QLinearMul", "MatMulNBits", "QOrderedMatMul")


def already_quantised(model: onnx.ModelProto) -> str:
    """Why the model is already quantised ('21 ConvInteger, 22 DynamicQuantizeLinear' or
    '73 int8 weight initializers'), or '' when it is not."""
    counts: dict[str, int] = {}
    for node in model.graph.node:
        if node.op_type in QUANTISED_OPS or node.op_type.startswith("QLinear"):
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    if counts:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return "its graph holds " + ", ".join(f"{n} {op}" for op, n in ranked[:4]) + (
            f" and {len(ranked) - 4} more quantised operator type(s)" if len(ranked) > 4
            else "")
    small = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT4,
             onnx.TensorProto.UINT4)
    weights = [t for t in model.graph.initializer if t.data_type in small and len(t.dims) >= 2]
    if weights:
        return (f"its weights are stored as {len(weights)} 8-bit (or narrower) initializers "
                "dequantised in the graph")
    return ""


def calibration_inputs(inputs: dict[str, np.ndarray], seed: int,
                       count: int = CALIBRATION_SAMPLES) -> list[dict[str, np.ndarray]]:
    """Seeded synthetic feeds: float inputs redrawn, other inputs kept."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        samples.append({k: (rng.standard_normal(v.shape).astype(v.dtype) if v.dtype.kind == "f"
                            else v) for k, v in inputs.items()})
    return samples


class _Reader:
    """onnxruntime.quantization.CalibrationDataReader over a list of feeds."""

    def __init__(self, samples: list[dict[str, np.ndarray]]) -> None:
        self._it = iter(samples)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)

    def rewind(self) -> None:  # pragma: no cover - not called by MinMax
        pass


def opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _at_least_opset(model: bytes, target: int) -> bytes:
    proto = onnx.load_from_string(model)
    if opset(proto) >= target:
        return model
    from onnx import version_converter

    try:
        return bytes(version_converter.convert_version(proto, target).SerializeToString())
    except Exception:  # an old model the converter cannot lift: quantize it as it is
        return model


def toposort(graph: onnx.GraphProto) -> None:
    """Reorder nodes so each comes after the producers of its inputs (stable otherwise), in
    the graph and in its subgraphs. A node with subgraphs (If, Loop, Scan) also needs the
    outer names its bodies read; names from outside the graph (its inputs, initializers, an
    enclosing graph's values) are there from the start."""
    for node in graph.node:
        for sub in subgraphs(node):
            toposort(sub)
    produced = {o for n in graph.node for o in n.output}
    pending = list(graph.node)
    needs = {id(n): ((set(n.input) | subgraph_reads(n)) & produced) - set(n.output)
             for n in pending}
    known: set[str] = set()
    ordered: list[onnx.NodeProto] = []
    while pending:
        rest = []
        for node in pending:
            if needs[id(node)] <= known:
                ordered.append(node)
                known.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):  # a cycle: keep the rest as it is
            ordered += rest
            break
        pending = rest
    copies = [onnx.NodeProto() for _ in ordered]
    for c, n in zip(copies, ordered, strict=True):
        c.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(copies)


def _constants_to_initializers(graph: onnx.GraphProto) -> int:
    """Moves the graph's Constant tensors (and those of its subgraphs) to its initializers;
    how many moved."""
    moved = 0
    for node in graph.node:
        for sub in subgraphs(node):  # If/Loop/Scan bodies: silero-vad's whole model
            moved += _constants_to_initializers(sub)
    constants = [n for n in graph.node if n.op_type == "Constant" and n.domain in
                 ("", "ai.onnx") and len(n.attribute) == 1 and n.attribute[0].name == "value"]
    outputs = {o.name for o in graph.output}
    for node in constants:
        if node.output[0] in outputs:  # a graph output must stay a node's output
            continue
        tensor = onnx.TensorProto()
        tensor.CopyFrom(node.attribute[0].t)
        tensor.name = node.output[0]
        graph.initializer.append(tensor)
        graph.node.remove(node)
        moved += 1
    return moved


def _initializers_into_subgraphs(graph: onnx.GraphProto) -> int:
    """Copies the graph's initializers that If/Loop/Scan bodies read from outside into those
    bodies (and theirs, below), and drops the ones no node of the graph reads itself;
    how many copies. ONNX Runtime's quantizer looks for a body's weights among the body's
    own initializers ("Expected model_8k.encoder.0.reparam_conv.weight to be an
    initializer": silero-vad's op18 file keeps both branches' weights in the main graph)."""
    weights = {t.name: t for t in graph.initializer}
    copies = 0
    for node in graph.node:
        for sub in subgraphs(node):
            own = ({t.name for t in sub.initializer} | {i.name for i in sub.input}
                   | {o for n in sub.node for o in n.output})
            reads = {name for n in sub.node for name in set(n.input) | subgraph_reads(n)}
            for name in sorted((reads & weights.keys()) - own):
                sub.initializer.append(weights[name])
                copies += 1
            copies += _initializers_into_subgraphs(sub)
    if copies:
        used = ({i for n in graph.node for i in n.input} | {o.name for o in graph.output}
                | {i.name for i in graph.input})
        kept = [t for t in graph.initializer if t.name in used]
        del graph.initializer[:]
        graph.initializer.extend(kept)
    return copies


def constants_to_initializers(model: bytes) -> bytes:
    """Constant nodes (a tensor ``value``) as initializers of the same name, in the main
    graph and in every subgraph, and the outer initializers a subgraph reads copied into it.

    Some exporters (Paddle) write every weight as a Constant node; ONNX Runtime's quantizer
    looks for weights among the initializers and stops ("Expected conv2d_394.w_0 to be an
    initializer") without this."""
    proto = onnx.load_from_string(model)
    moved = _constants_to_initializers(proto.graph)
    moved += _initializers_into_subgraphs(proto.graph)
    if not moved:
        return model
    return bytes(proto.SerializeToString())


def quantised_nodes(graph: onnx.GraphProto) -> int:
    """Nodes the quantizer wrote, in the graph and its subgraphs."""
    count = 0
    for node in graph.node:
        if node.op_type in QUANTISED_OPS or node.op_type.startswith("QLinear"):
            count += 1
        count += sum(quantised_nodes(sub) for sub in subgraphs(node))
    return count


def build(name: str, model: bytes, inputs: dict[str, np.ndarray], seed: int,
          calibration: Calibration | None = None) -> bytes:
    """The variant's serialised model (raises on failure; the caller records it).
    ``calibration``: the int8-static variant's feeds (seeded noise when empty)."""
    if name == FP16:
        from onnxruntime.transformers.float16 import (
            DEFAULT_OP_BLOCK_LIST,
            convert_float_to_float16,
        )

        proto = onnx.load_from_string(model)
        if not has_float32_tensor(proto):
            raise GeroError("nothing to convert: no float32 tensor (the fp16 file would be "
                            "the model again, and its rows would say nothing about float16)")
        # An already quantised graph keeps its quantisation in float32 (DynamicQuantizeLinear
        # takes float32 only: the converter fed it float16 and wrote an invalid graph on
        # ddddocr's int8 recogniser); the float parts around it become float16.
        quantised = sorted({n.op_type for n in proto.graph.node
                            if n.op_type in QUANTISED_OPS or n.op_type.startswith("QLinear")})
        kept = dequantisation_nodes(proto)
        fp16: Any = convert_float_to_float16(
            proto, keep_io_types=True,
            op_block_list=[*DEFAULT_OP_BLOCK_LIST, *quantised] if quantised else None,
            node_block_list=kept)
        _no_float16_round_trips(fp16.graph, set(kept))
        toposort(fp16.graph)  # the converter appends its input Casts after their consumers
        _import_default_domain(fp16)
        _empty_resize_scales(fp16.graph)
        if kept:
            onnx.helper.set_model_props(fp16, {BUILD_NOTES: (
                f"gero kept the dequantisation arithmetic of {len(kept)} node(s) in float32 "
                "(each Cast from an int32 accumulator and the scale Mul after it): an int32 "
                "MatMulInteger/ConvInteger sum cast to float16 is inf past 65504, an "
                "overflow of the builder's, not of the model's")})
        return bytes(fp16.SerializeToString())

    # The quantizer logs advice (pre-processing) on the root logger for every model.
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        return _quantize(name, model, inputs, seed, calibration or Calibration())
    finally:
        logging.disable(previous)


def has_float32_tensor(model: onnx.ModelProto) -> bool:
    """Whether any tensor of the model (an input, output, initializer, Constant or
    intermediate, in any subgraph) is float32: the fp16 converter converts those alone (a
    float64 TreeEnsemble model came out as itself)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an invalid graph: judge by the declared types
        inferred = model

    def holds(graph: onnx.GraphProto) -> bool:
        infos = [*graph.input, *graph.value_info, *graph.output]
        if any(vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for vi in infos):
            return True
        tensors = [*graph.initializer, *(a.t for n in graph.node for a in n.attribute
                                         if a.type == onnx.AttributeProto.TENSOR)]
        if any(t.data_type == onnx.TensorProto.FLOAT for t in tensors):
            return True
        return any(holds(sub) for n in graph.node for sub in subgraphs(n))

    return holds(inferred.graph)


INTEGER_ACCUMULATORS = ("MatMulInteger", "ConvInteger")


def dequantisation_nodes(model: onnx.ModelProto) -> list[str]:
    """Names of the nodes that turn int32 accumulators into floats (a Cast from int32)
    and of the Mul right after each (the scale, and the Mul that makes that scale), in the
    graph and its subgraphs; nameless ones are named here so the fp16 converter can block
    them. Converted, the Cast of an int32 MatMulInteger accumulator (frspell: 309502) to
    float16 is inf past 65504: the fp16 file's overflow would be gero's."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an invalid graph: the converter says so itself
        inferred = model
    kinds: dict[str, int] = {}

    def record(graph: onnx.GraphProto) -> None:
        for vi in [*graph.input, *graph.value_info, *graph.output]:
            kinds[vi.name] = vi.type.tensor_type.elem_type
        kinds.update({t.name: t.data_type for t in graph.initializer})
        for node in graph.node:
            for sub in subgraphs(node):
                record(sub)

    record(inferred.graph)
    # int32 and uint32: the accumulators of MatMulInteger/ConvInteger (an int8 weight or
    # an int64 shape fits float16 and is converted as before).
    wide_ints = {onnx.TensorProto.INT32, onnx.TensorProto.UINT32}
    kept: list[onnx.NodeProto] = []

    def scan(graph: onnx.GraphProto) -> None:
        made = {o: n for n in graph.node for o in n.output}
        casts = {n.output[0] for n in graph.node if n.op_type == "Cast" and n.input
                 and (kinds.get(n.input[0]) in wide_ints
                      or getattr(made.get(n.input[0]), "op_type", "") in INTEGER_ACCUMULATORS)}
        kept.extend(n for n in graph.node if n.output and n.output[0] in casts)
        for node in graph.node:
            if node.op_type == "Mul" and casts & set(node.input):
                kept.append(node)
                kept.extend(made[i] for i in node.input
                            if i not in casts and i in made and made[i].op_type == "Mul")
            for sub in subgraphs(node):
                scan(sub)

    scan(model.graph)
    names = {n.name for n in model.graph.node}
    for i, node in enumerate(kept):
        if not node.name:
            node.name = f"gero_dequantise_{i}"
            while node.name in names:
                node.name += "_"
            names.add(node.name)
    return list(dict.fromkeys(n.name for n in kept))


def _no_float16_round_trips(graph: onnx.GraphProto, kept: set[str]) -> None:
    """The converter passes a float32 tensor between blocked nodes through float16 (a Cast
    to float16, then one back): a ``kept`` node reads the float32 tensor itself instead,
    and Casts nobody reads any more are dropped."""
    made = {o: n for n in graph.node for o in n.output}
    to = onnx.TensorProto

    def cast_to(node: onnx.NodeProto | None, elem: int) -> bool:
        return (node is not None and node.op_type == "Cast"
                and any(a.name == "to" and a.i == elem for a in node.attribute))

    for node in graph.node:
        if node.name not in kept:
            continue
        for i, name in enumerate(node.input):
            back = made.get(name)
            down = made.get(back.input[0]) if back is not None and back.input else None
            if cast_to(back, to.FLOAT) and cast_to(down, to.FLOAT16):
                assert down is not None
                node.input[i] = down.input[0]
    for _ in range(2):  # the Cast back, then the Cast down it read
        read = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
        read |= {i for n in graph.node for i in subgraph_reads(n)}
        dead = [n for n in graph.node if n.op_type == "Cast" and n.name.endswith(
            ("_cast_to_fp16_node", "_cast_to_fp32_node")) and n.output[0] not in read]
        for n in dead:
            graph.node.remove(n)
    for node in graph.node:
        for sub in subgraphs(node):
            _no_float16_round_trips(sub, kept)


FP16_CAST_OPSET = 13
"""The default-domain opset a float16 file gets for the converter's Casts when the model
imports none (an ai.onnx.ml-only model)."""


def _import_default_domain(model: onnx.ModelProto) -> None:
    """The converter adds ai.onnx Casts but no import of that domain: a model of ai.onnx.ml
    operators alone became a file that onnx.checker refuses (no opset import for domain
    '') and the ReferenceEvaluator cannot load. The import is added, with the IR version
    that opset needs."""
    if any(o.domain in ("", "ai.onnx") for o in model.opset_import):
        return
    if not any(n.domain in ("", "ai.onnx") for n in model.graph.node):
        return
    model.opset_import.append(onnx.helper.make_opsetid("", FP16_CAST_OPSET))
    model.ir_version = max(model.ir_version,
                           onnx.helper.find_min_ir_version_for(list(model.opset_import)))


def _empty_value(name: str, graph: onnx.GraphProto,
                 producer: dict[str, onnx.NodeProto]) -> bool:
    """Whether ``name`` is an initializer or a Constant's value with no element."""
    from onnx import numpy_helper

    init = next((t for t in graph.initializer if t.name == name), None)
    if init is not None:
        return numpy_helper.to_array(init).size == 0
    node = producer.get(name)
    if node is None or node.op_type != "Constant":
        return False
    value = next((a.t for a in node.attribute if a.name == "value"), None)
    return value is not None and numpy_helper.to_array(value).size == 0


def _empty_resize_scales(graph: onnx.GraphProto) -> None:
    """A Resize given ``sizes`` and an empty ``scales`` (paddle2onnx writes both, as opset
    11 asked): the converter routes the empty scales through a Cast to float32, and ONNX
    Runtime, which no longer sees it empty, refuses the file ('Either `sizes` or `scales`
    must be provided, but not both': SLANet's fp16 file). The Resize reads an empty
    float32 initializer instead."""
    producer = {o: n for n in graph.node for o in n.output}
    bypassed: set[str] = set()
    for node in graph.node:
        if node.op_type != "Resize" or len(node.input) < 4 or not node.input[3]:
            continue
        cast = producer.get(node.input[2])
        if cast is None or cast.op_type != "Cast" or \
                not _empty_value(cast.input[0], graph, producer):
            continue
        name = f"{node.name or node.output[0]}__gero_empty_scales"
        graph.initializer.append(onnx.helper.make_tensor(name, onnx.TensorProto.FLOAT, [0],
                                                         []))
        bypassed.add(node.input[2])
        node.input[2] = name
    if not bypassed:
        return
    read = {i for n in graph.node for i in [*n.input, *subgraph_reads(n)]}
    read |= {o.name for o in graph.output}
    kept = [n for n in graph.node if not (set(n.output) & bypassed) or n.output[0] in read]
    if len(kept) < len(graph.node):
        copies = [onnx.NodeProto() for _ in kept]
        for c, n in zip(copies, kept, strict=True):
            c.CopyFrom(n)
        del graph.node[:]
        graph.node.extend(copies)


@cache
def int8_reduce_range() -> str:
    """Why int8 weights get 7 bits on this CPU, or "" when they keep 8 (not x86, VNNI
    present, or the CPU flags cannot be read)."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "i386"):
        return ""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    if re.search(r"\b(avx512_vnni|avx_vnni|amx_int8)\b", flags):
        return ""
    return ("x86 CPU without VNNI: ONNX Runtime's U8S8 kernels saturate with 8-bit weights, "
            "so weights are quantised to 7 bits (reduce_range)")


@contextmanager
def _calibration_in_priority_order() -> Iterator[None]:
    """ONNX Runtime's MinMax calibrator adds a ReduceMin and a ReduceMax to every tensor and
    runs that graph in ORT's default order, which computes the whole main chain before the
    reductions of the early tensors: every activation is alive at once (a 1.39 GB process
    for PP-OCRv4's detector at 736x992). In priority-based order each reduction runs as
    soon as its tensor exists: 260 MB, the same ranges and the same file byte for byte (a
    test holds it). The calibrator's session is the one thing changed, for this call only."""
    import onnxruntime as ort
    from onnxruntime.quantization import calibrate

    original = calibrate.CalibraterBase.create_inference_session

    def create_inference_session(self: Any) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
        self.infer_session = ort.InferenceSession(
            self.augmented_model_path, sess_options=options,
            providers=self.execution_providers)

    calibrate.CalibraterBase.create_inference_session = create_inference_session
    try:
        yield
    finally:
        calibrate.CalibraterBase.create_inference_session = original


def _quantised_something(name: str, model: bytes, written: onnx.ModelProto) -> None:
    """A file the quantizer wrote without one quantised node is the fp32 model again: its
    rows would pass as 'int8' and say nothing about int8 (raises why instead)."""
    if quantised_nodes(written.graph):
        return
    where = ""
    if name == INT8_STATIC and any(subgraphs(n) for n in onnx.load_from_string(model).graph.node):
        where = (": ONNX Runtime's static quantizer leaves If/Loop/Scan bodies as they are, "
                 "and this model's operators are in them")
    raise GeroError(f"the quantizer quantised no operator of the model, so the {name} "
                    f"file would be the fp32 model again{where}")


HUGE_RANGE = 1e30
"""A quantizer's range beyond this (or not finite) holds ±FLT_MAX-like values: an additive
attention mask of 0 and -3.4e38 quantised at scale 1.33e36 keeps no finite value apart."""
BUILD_NOTES = "gero.build_notes"
"""Metadata key of a variant file's build notes (sentences, one a line)."""


def _initializers(graph: onnx.GraphProto, outer: dict[str, onnx.TensorProto]
                  ) -> Iterator[tuple[onnx.NodeProto, dict[str, onnx.TensorProto]]]:
    """Each node with the initializers it can see (its graph's and the outer ones)."""
    seen = {**outer, **{t.name: t for t in graph.initializer}}
    for node in graph.node:
        yield node, seen
        for sub in subgraphs(node):
            yield from _initializers(sub, seen)


def huge_ranges(name: str, model: onnx.ModelProto) -> list[str]:
    """A sentence for each tensor the quantizer put through a QuantizeLinear (or each
    weight it quantised) over a non-finite or near-FLT_MAX range (|x| > HUGE_RANGE), read
    from the file's scales and zero points, naming the tensor."""
    from onnx import numpy_helper

    found: dict[str, str] = {}
    for node, inits in _initializers(model.graph, {}):
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear") or len(node.input) < 2:
            continue
        scale_t = inits.get(node.input[1])
        if scale_t is None:
            continue
        if node.op_type == "QuantizeLinear":
            tensor = node.input[0]
        elif node.input[0] in inits:  # a weight's dequantisation: the weight itself
            tensor = node.input[0].removesuffix("_quantized")
        else:
            continue  # an activation's DequantizeLinear: its QuantizeLinear says it
        scale = numpy_helper.to_array(scale_t).astype(np.float64)
        zp_t = inits.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        zp = numpy_helper.to_array(zp_t) if zp_t is not None else np.zeros((), np.uint8)
        info = np.iinfo(zp.dtype) if zp.dtype.kind in "iu" else np.iinfo(np.int8)
        with np.errstate(all="ignore"):
            lo = (info.min - zp.astype(np.float64)) * scale
            hi = (info.max - zp.astype(np.float64)) * scale
        ends = np.concatenate([np.ravel(lo), np.ravel(hi)])
        finite = bool(np.isfinite(ends).all())
        if tensor in found or (finite and float(np.abs(ends).max(initial=0)) <= HUGE_RANGE):
            continue
        kind = ("a non-finite range" if not finite
                else f"a near-FLT_MAX range (|x| > {HUGE_RANGE:g})")
        found[tensor] = (f"the {name} builder put tensor {tensor!r} through a quantizer "
                         f"over {kind}, [{float(np.min(ends)):.3g}, "
                         f"{float(np.max(ends)):.3g}] (scale {float(np.max(scale)):.3g}): "
                         "every value of it comes back a multiple of that scale")
    return list(found.values())


def keep_nonfinite_float(name: str, graph: onnx.GraphProto,
                         outer: dict[str, onnx.TensorProto] | None = None) -> list[str]:
    """Take out of ``graph`` (in place, subgraphs too) each activation's
    QuantizeLinear → DequantizeLinear pair whose scale is not finite: the calibrated range
    of a tensor holding ±inf (an additive attention mask of 0 and -inf: khmersm's five
    'view_16'… at scale +inf) makes the pair return NaN for every finite value, so the file
    measured its builder, not int8 (khmersm: row cosine -0.942; 0.996 without those
    pairs). Each DequantizeLinear becomes an Identity of the float tensor (names kept), its
    QuantizeLinear goes; a sentence per tensor kept float says so."""
    from onnx import numpy_helper

    inits = {**(outer or {}), **{t.name: t for t in graph.initializer}}
    quantizers: dict[str, onnx.NodeProto] = {}
    for node in graph.node:
        if node.op_type != "QuantizeLinear" or len(node.input) < 2 \
                or node.input[0] in inits or node.input[1] not in inits:
            continue
        scale = numpy_helper.to_array(inits[node.input[1]]).astype(np.float64)
        if not np.isfinite(scale).all():
            quantizers[node.output[0]] = node
    kept: dict[str, str] = {}
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if node.op_type == "QuantizeLinear" and node.output[0] in quantizers:
            continue
        if node.op_type == "DequantizeLinear" and node.input[0] in quantizers:
            q = quantizers[node.input[0]]
            scale = numpy_helper.to_array(inits[q.input[1]]).astype(np.float64)
            kept[q.input[0]] = (
                f"the {name} builder kept tensor {q.input[0]!r} in float, not quantised: its "
                f"calibrated range is not finite (scale {float(np.max(scale)):.3g}), and a "
                "quantizer over it turns every finite value into NaN")
            nodes.append(onnx.helper.make_node("Identity", [q.input[0]], list(node.output),
                                               name=node.name))
            continue
        nodes.append(node)
    consumed = {i for n in nodes for i in [*n.input, *subgraph_reads(n)]}
    if any(q in consumed or q in {o.name for o in graph.output} for q in quantizers):
        return []  # a quantised tensor read as int8 elsewhere: the file is left as it is
    if quantizers:
        copies = [onnx.NodeProto() for _ in nodes]
        for c, n in zip(copies, nodes, strict=True):
            c.CopyFrom(n)
        del graph.node[:]
        graph.node.extend(copies)
        unused = {i for q in quantizers.values() for i in q.input[1:]} - consumed
        left = [t for t in graph.initializer if t.name not in unused]
        del graph.initializer[:]
        graph.initializer.extend(left)
    sentences = list(kept.values())
    for node in graph.node:
        for sub in subgraphs(node):
            sentences += keep_nonfinite_float(name, sub, inits)
    return sentences


def build_notes(model: bytes) -> list[str]:
    """The build notes a variant file records (``BUILD_NOTES``)."""
    props = {p.key: p.value for p in onnx.load_from_string(model).metadata_props}
    return [line for line in props.get(BUILD_NOTES, "").split("\n") if line]


def _quantize(name: str, model: bytes, inputs: dict[str, np.ndarray], seed: int,
              calibration: Calibration) -> bytes:
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    if not any(n.domain in ("", "ai.onnx") for n in onnx.load_from_string(model).graph.node):
        raise GeroError("the model has no ai.onnx operators (only other domains, e.g. "
                        "ai.onnx.ml), and ONNX Runtime's quantizer quantises none of those")
    with tempfile.TemporaryDirectory(prefix="gero-variant-") as tmp:
        src, dst = Path(tmp) / "model.onnx", Path(tmp) / f"{name}.onnx"
        if name == INT8_STATIC:
            model = _at_least_opset(model, QDQ_OPSET)
        src.write_bytes(constants_to_initializers(model))
        reduce_range = bool(int8_reduce_range())
        if name == INT8_DYNAMIC:
            # Subgraphs too: silero-vad holds its whole model in the branches of an If.
            quantize_dynamic(src, dst, per_channel=True, weight_type=QuantType.QInt8,
                             reduce_range=reduce_range,
                             extra_options={"EnableSubgraph": True})
        elif name == INT8_STATIC:
            reader: Any = _Reader(list(calibration.samples)
                                  or calibration_inputs(inputs, seed))
            with _calibration_in_priority_order():
                quantize_static(src, dst, reader, quant_format=QuantFormat.QDQ,
                                per_channel=True, activation_type=QuantType.QInt8,
                                weight_type=QuantType.QInt8,
                                calibrate_method=CalibrationMethod.MinMax,
                                reduce_range=reduce_range)
        else:
            raise GeroError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
        quantized = onnx.load_from_string(dst.read_bytes())
        _quantised_something(name, model, quantized)
        # The quantizer writes a subgraph's reads of outer names without ordering them
        # (silero-vad's If bodies): the ReferenceEvaluator runs nodes in file order.
        toposort(quantized.graph)
        props = {p.key: p.value for p in quantized.metadata_props}
        if reduce_range:
            props["gero.int8_reduce_range"] = int8_reduce_range()
        kept = keep_nonfinite_float(name, quantized.graph) if name == INT8_STATIC else []
        if (notes := kept + huge_ranges(name, quantized)):
            props[BUILD_NOTES] = "\n".join(notes)
        if props:
            onnx.helper.set_model_props(quantized, props)
        return bytes(quantized.SerializeToString())
