"""A model's input signature and seeded inputs for it.

Dimensions: fixed sizes are kept; a symbolic or unknown dimension takes the value given by
``--dim NAME=VALUE`` (NAME is the dimension's ``dim_param``, or ``INPUT[AXIS]`` for one
without a name), and one name has one value at every input and axis it appears on. Else a
default: 2 for a name that leads any input (the batch, so batch contracts have two
examples); for the spatial axes of an image input, the size the model's metadata states
(Ultralytics' ``imgsz``, :func:`metadata_sizes`), else what the graph's downsampling needs
(:func:`spatial_defaults`); 16 for any other axis.

Values (seeded, reproducible from the case seed):
- float inputs: standard normal, or, where the graph begins by normalising the input with
  constants (``(x / 255 - mean) / std`` as Sub/Mul/Div/Add nodes), values that this
  normalisation maps to standard normal (:func:`leading_affine`): the graph's own
  statement of the range it expects;
- integer inputs: inputs whose name says mask are all ones, token type / segment ids are
  zeros, position ids count along the last axis; other integers (token ids) are uniform in
  [0, V) where V is what the graph indexes with them (through Casts and reshapes): the row
  count of the table a Gather reads (an embedding, stored or dequantized), a OneHot's
  depth, or the rows of the weight a compared one-hot multiplies; else in [0, 100);
- bool inputs: all true when named like a mask, else fair coin flips.

``models.inputs`` lets the user override any of this per input (shape, range, constant,
real arrays).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from gero_runner.errors import GeroError

_UNNAMED = ("", "?", "-1", "None", "none")
"""dim_param values that name nothing: some exporters (Paddle) write '?' at every dynamic
axis, which would otherwise tie a height to a width."""
BATCH_DEFAULT = 2
OTHER_DEFAULT = 16
TOKEN_RANGE_DEFAULT = 100


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: np.dtype[Any]
    dims: tuple[int | str | None, ...]
    """Each dimension: a fixed size, a dim_param name, or None (unknown)."""
    ranked: bool = True
    """The model declares the input's rank (else its shape must be given)."""


def load_model(path: str | Path) -> onnx.ModelProto:
    """Load and check an ONNX file; any problem is a GeroError naming the file."""
    p = Path(path)
    if not p.is_file():
        raise GeroError(f"--model {path}: no such file")
    try:
        model = onnx.load(str(p))
    except Exception as e:
        raise GeroError(f"--model {path}: not a loadable ONNX model ({type(e).__name__}: "
                        f"{str(e)[:300]})") from e
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise GeroError(f"--model {path}: the ONNX checker rejects it: {str(e)[:500]}") from e
    return model


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Inputs that are fed at run time (graph inputs that are also initializers are not)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def input_specs(model: onnx.ModelProto, source: str = "model") -> list[InputSpec]:
    specs = []
    for vi in graph_inputs(model):
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            raise GeroError(f"{source}: input {vi.name!r} has ONNX type {kind}; gero feeds "
                            "tensors only")
        tt = vi.type.tensor_type
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception as e:
            raise GeroError(f"{source}: input {vi.name!r} has an unknown element type "
                            f"{tt.elem_type}") from e
        if dtype.kind not in "fiub" or dtype.itemsize == 0 or dtype.name not in np.sctypeDict:
            raise GeroError(f"{source}: input {vi.name!r} has element type "
                            f"{helper.tensor_dtype_to_string(tt.elem_type)}, which gero "
                            "cannot generate")
        if not tt.HasField("shape"):
            specs.append(InputSpec(vi.name, dtype, (), ranked=False))
            continue
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param.strip() not in _UNNAMED:
                dims.append(d.dim_param)
            else:
                dims.append(None)
        specs.append(InputSpec(vi.name, dtype, tuple(dims)))
    if not specs:
        raise GeroError(f"{source}: the model has no runtime inputs to feed")
    return specs


def parse_dims(items: Iterable[str]) -> dict[str, int]:
    """``["batch=4", "seq=128"]`` -> ``{"batch": 4, "seq": 128}``."""
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            size = int(value)
        except ValueError:
            size = 0
        if not sep or not name.strip() or size < 1:
            raise GeroError(f"bad --dim {item!r}: expected NAME=VALUE with a positive integer")
        dims[name.strip()] = size
    return dims


def dim_key(spec: InputSpec, axis: int) -> str:
    """How a dynamic dimension is named: its dim_param, or ``INPUT[AXIS]`` when it has none."""
    d = spec.dims[axis]
    return d if isinstance(d, str) else f"{spec.name}[{axis}]"


def dynamic_dims(specs: list[InputSpec]) -> list[str]:
    """Named dynamic dimensions, then unnamed ones as ``INPUT[AXIS]`` (both settable)."""
    named = sorted({d for s in specs for d in s.dims if isinstance(d, str)})
    unnamed = [dim_key(s, a) for s in specs for a, d in enumerate(s.dims) if d is None]
    return named + unnamed


def has_dynamic_batch(specs: list[InputSpec]) -> bool:
    """Every input of rank ≥ 1 has a symbolic or unknown leading axis."""
    ranked = [s for s in specs if s.dims]
    return bool(ranked) and all(not isinstance(s.dims[0], int) for s in ranked)


@dataclass(frozen=True)
class DimChoice:
    """The value of one dynamic dimension and where it came from."""

    value: int
    source: str
    """'--dim', 'default: batch', 'default: spatial (graph downsamples by 32)', ..."""


def choose_dims(specs: list[InputSpec], dims: Mapping[str, int],
                spatial: Mapping[str, int] | None = None,
                stated: Mapping[str, DimChoice] | None = None) -> dict[str, DimChoice]:
    """One value per dynamic dimension, the same at every input and axis it appears on.

    A name given with ``--dim`` takes that value; a name that leads any input is the batch
    (2, so batch contracts have two examples); a spatial axis takes the size the model's
    metadata states (``stated``, from :func:`metadata_sizes`), else what the graph needs
    (``spatial``, from :func:`spatial_defaults`); any other takes 16.
    """
    spatial = spatial or {}
    stated = stated or {}
    chosen: dict[str, DimChoice] = {}
    for spec in specs:
        for axis, d in enumerate(spec.dims):
            if isinstance(d, int):
                continue
            key = dim_key(spec, axis)
            if key in dims:
                choice = DimChoice(dims[key], "--dim")
            elif axis == 0:
                choice = DimChoice(BATCH_DEFAULT, "default: batch")
            elif key in stated:
                choice = stated[key]
            elif key in spatial:
                choice = DimChoice(spatial[key], "default: what the graph's "
                                   "downsampling needs")
            else:
                choice = DimChoice(OTHER_DEFAULT, "default")
            old = chosen.get(key)
            if old is None or _ranks_higher(choice, old):
                chosen[key] = choice
    return chosen


def _ranks_higher(new: DimChoice, old: DimChoice) -> bool:
    """A name seen at several axes: --dim wins, then batch, then the larger default."""
    order = ("--dim", "default: batch")
    rank = {s: i for i, s in enumerate(order)}
    a, b = rank.get(new.source, len(order)), rank.get(old.source, len(order))
    return a < b or (a == b == len(order) and new.value > old.value)


def resolve_shape(spec: InputSpec, dims: Mapping[str, int],
                  chosen: Mapping[str, DimChoice] | None = None) -> tuple[int, ...]:
    chosen = chosen if chosen is not None else choose_dims([spec], dims)
    return tuple(d if isinstance(d, int) else chosen[dim_key(spec, axis)].value
                 for axis, d in enumerate(spec.dims))


def check_dim_names(specs: list[InputSpec], dims: Mapping[str, int], source: str) -> None:
    known = dynamic_dims(specs)
    unknown = [n for n in dims if n not in known]
    if unknown:
        raise GeroError(f"{source}: --dim {', '.join(unknown)} is not a dynamic dimension of "
                        f"its inputs; dimensions that can be set: "
                        f"{', '.join(known) or 'none (every size is fixed)'}")


_DOWNSAMPLERS = ("Conv", "MaxPool", "AveragePool", "LpPool", "ConvInteger", "QLinearConv")


def _ints(node: onnx.NodeProto, name: str) -> list[int]:
    for a in node.attribute:
        if a.name == name:
            return [int(x) for x in a.ints]
    return []


def _constant_values(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    values[node.output[0]] = numpy_helper.to_array(a.t)
    return values


def spatial_defaults(model: onnx.ModelProto, specs: list[InputSpec]) -> dict[str, int]:
    """Sizes for the dynamic spatial axes (axis ≥ 2) of inputs that feed convolutions and
    pools, so that no feature map shrinks to nothing: the smallest multiple of the graph's
    total downsampling (strides of Conv and pools, Resize by a constant scale below 1)
    that is at least 16 and at least each kernel's extent at its resolution. The smallest,
    because a head that pools the last map to one row (an OCR recogniser: 48 rows, pooled
    by 3 after 16-fold striding) accepts no other multiple. Only axes the graph says
    something about get a value here."""
    consts = _constant_values(model)
    wanted = {s.name: len(s.dims) - 2 for s in specs if len(s.dims) >= 3}
    factor: dict[str, tuple[float, ...]] = {n: (1.0,) * k for n, k in wanted.items()}
    need: dict[str, list[float]] = {n: [0.0] * k for n, k in wanted.items()}
    most: dict[str, list[float]] = {n: [1.0] * k for n, k in wanted.items()}
    origin: dict[str, str] = {n: n for n in wanted}
    for node in model.graph.node:
        sources = [i for i in node.input if i in factor]
        if not sources:
            continue
        src = max(sources, key=lambda i: max(factor[i]))
        f, root = factor[src], origin[src]
        k = len(f)
        out = list(f)
        if node.op_type in _DOWNSAMPLERS:
            kernel = _ints(node, "kernel_shape")
            if not kernel and len(node.input) > 1 and node.input[1] in consts:
                kernel = list(consts[node.input[1]].shape[2:])
            strides = _ints(node, "strides") or [1] * k
            dil = _ints(node, "dilations") or [1] * k
            pads = _ints(node, "pads") or [0] * (2 * k)
            if len(kernel) == k and len(strides) == k:
                for a in range(k):
                    extent = dil[a] * (kernel[a] - 1) + 1 - pads[a] - pads[a + k]
                    need[root][a] = max(need[root][a], f[a] * max(extent, 1))
                    out[a] = f[a] * strides[a]
        elif node.op_type == "Resize" and len(node.input) > 2 and node.input[2] in consts:
            scales = consts[node.input[2]].astype(float).reshape(-1)
            if scales.size == k + 2 and all(scales > 0):
                out = [f[a] / float(scales[a + 2]) for a in range(k)]
        elif node.op_type in ("GlobalAveragePool", "GlobalMaxPool", "Flatten"):
            continue  # the spatial axes end here
        for a in range(k):
            most[root][a] = max(most[root][a], out[a])
        for o in node.output:
            factor[o], origin[o] = tuple(out), root
    sizes: dict[str, int] = {}
    for spec in specs:
        if spec.name not in wanted:
            continue
        for a in range(wanted[spec.name]):
            axis = a + 2
            if isinstance(spec.dims[axis], int) or (most[spec.name][a] <= 1 and
                                                    need[spec.name][a] <= 1):
                continue
            step = max(1, math.ceil(most[spec.name][a]))
            size = max(OTHER_DEFAULT, step, math.ceil(need[spec.name][a]))
            key = dim_key(spec, axis)
            sizes[key] = max(sizes.get(key, 0), math.ceil(size / step) * step)
    return sizes


_METADATA_SIZE_KEYS = ("imgsz", "img_size", "image_size", "input_size")
"""Metadata keys under which exporters state the image size a model was trained at
(Ultralytics writes ``imgsz: [320, 320]``), height first."""


def _resize_targets(model: onnx.ModelProto, name: str) -> list[int] | None:
    """The spatial ``sizes`` of a Resize to constant sizes that input ``name`` reaches first
    (through Casts): the graph scales any image to this size, so feeding it makes the
    Resize an identity-sized one rather than an arbitrary stretch."""
    consts = _constant_values(model)
    current = name
    for node in model.graph.node:
        if current not in node.input:
            continue
        if node.op_type == "Cast":
            current = node.output[0]
            continue
        if node.op_type == "Resize" and node.input[0] == current and len(node.input) > 3:
            sizes = consts.get(node.input[3])
            if sizes is not None and sizes.size == 4 and np.all(sizes > 0):
                return [int(n) for n in sizes.reshape(-1)[2:]]
        return None
    return None


def metadata_sizes(model: onnx.ModelProto, specs: list[InputSpec]) -> dict[str, DimChoice]:
    """The dynamic spatial sizes of 4-D float inputs that the model states: in its metadata
    (a detector exported at 320 pixels is fed 320x320, not the smallest size its strides
    allow) or by resizing the input to constant sizes first."""
    meta = {p.key: p.value for p in model.metadata_props}
    stated: tuple[list[int], str] | None = None
    for key in _METADATA_SIZE_KEYS:
        sizes = [int(n) for n in re.findall(r"\d+", meta.get(key, ""))]
        if len(sizes) == 1:
            sizes *= 2
        if len(sizes) == 2 and all(0 < n <= 8192 for n in sizes):
            stated = sizes, f"default: the model's metadata ({key}: {meta[key]})"
            break
    chosen: dict[str, DimChoice] = {}
    for spec in specs:
        if len(spec.dims) != 4 or spec.dtype.kind != "f":
            continue
        here = stated
        if here is None:
            target = _resize_targets(model, spec.name)
            if target is None:
                continue
            here = target, (f"default: the size the graph resizes it to "
                             f"({target[0]}x{target[1]})")
        for axis, size in zip((2, 3), here[0], strict=True):
            if not isinstance(spec.dims[axis], int):
                chosen[dim_key(spec, axis)] = DimChoice(size, here[1])
    return chosen


_PASS_THROUGH = ("Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand")
"""Ops that carry integer ids on unchanged (their first input to their output)."""
_DEQUANTIZE = ("Cast", "Mul", "DequantizeLinear", "Identity")
"""Ops between a stored table and the Gather that reads it (a weight-only int8 embedding
is Cast(int8) · scale): the table keeps its row count through them."""


def _rows(name: str, inits: Mapping[str, onnx.TensorProto],
          producers: Mapping[str, onnx.NodeProto]) -> int | None:
    """Row count of a table stored as an initializer or computed from one by dequantizing."""
    for _ in range(8):
        if name in inits:
            dims = inits[name].dims
            return int(dims[0]) if dims else None
        node = producers.get(name)
        if node is None or node.op_type not in _DEQUANTIZE or not node.input:
            return None
        name = node.input[0]
    return None


def _token_range(model: onnx.ModelProto, name: str) -> int:
    """How many distinct ids the graph can take at input ``name``: what it indexes with
    them, reached through Casts and reshapes: a Gather's table (an embedding, stored or
    dequantized), a OneHot's depth, or a one-hot made by comparison (``Equal`` with an
    iota, then a MatMul by a [V, D] weight: jax2tf's embedding)."""
    inits = {i.name: i for i in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    consts = _constant_values(model)
    names: set[str] = {name}
    one_hot: set[str] = set()
    for node in model.graph.node:  # topological order: one pass follows a chain
        ins = list(node.input)
        if node.op_type in _PASS_THROUGH and ins and ins[0] in names:
            names.update(node.output)
        elif ((node.op_type in _PASS_THROUGH and ins and ins[0] in one_hot)
              or (node.op_type == "Equal" and any(i in names for i in ins))):
            one_hot.update(node.output)
        elif node.op_type == "MatMul" and len(ins) == 2 and ins[0] in one_hot:
            rows = _rows(ins[1], inits, producers)
            if rows:
                return rows
        elif node.op_type == "Gather" and len(ins) > 1 and ins[1] in names:
            rows = _rows(ins[0], inits, producers)
            if rows:
                return rows
        elif node.op_type == "OneHot" and len(ins) > 1 and ins[0] in names:
            depth = consts.get(ins[1])
            if depth is not None and depth.size == 1 and int(depth.reshape(-1)[0]) > 0:
                return int(depth.reshape(-1)[0])
    return TOKEN_RANGE_DEFAULT


def leading_affine(model: onnx.ModelProto, name: str,
                   rank: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``(a, b)`` of the normalisation ``a·x + b`` a graph applies to float input
    ``name`` before anything else (Sub/Add/Mul/Div by constants, through Casts), broadcast
    to ``rank``; None when it begins otherwise."""
    consts = _constant_values(model)
    a, b = np.ones([1] * rank), np.zeros([1] * rank)
    current, steps = name, 0
    for node in model.graph.node:  # topological: the chain's next node comes later
        if current not in node.input:
            continue
        ins = list(node.input)
        if node.op_type == "Cast" and ins[0] == current:
            current = node.output[0]
            continue
        if node.op_type not in ("Sub", "Add", "Mul", "Div") or len(ins) != 2:
            break
        other = ins[1] if ins[0] == current else ins[0]
        c = consts.get(other)
        if (other == current or c is None or c.dtype.kind != "f" or c.ndim > rank
                or not np.all(np.isfinite(c))):
            break
        c = c.astype(np.float64).reshape([1] * (rank - c.ndim) + list(c.shape))
        first = ins[0] == current
        if node.op_type == "Add":
            b = b + c
        elif node.op_type == "Sub":
            a, b = (a, b - c) if first else (-a, c - b)
        elif node.op_type == "Mul":
            a, b = a * c, b * c
        elif first and np.all(c != 0):  # Div(x, c); Div(c, x) is not affine
            a, b = a / c, b / c
        else:
            break
        current, steps = node.output[0], steps + 1
    if not steps or not np.all(np.isfinite(a)) or np.any(a == 0):
        return None
    return a, b


def default_values(model: onnx.ModelProto, spec: InputSpec, shape: tuple[int, ...],
                   rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Seeded values for one input (see the module docstring) and a phrase saying which."""
    lname = spec.name.lower()
    if spec.dtype.kind == "f":
        z = rng.standard_normal(shape)
        affine = leading_affine(model, spec.name, len(shape))
        try:
            x = z if affine is None else (z - affine[1]) / affine[0]
        except ValueError:  # constants that do not broadcast to the fed shape
            affine, x = None, z
        if affine is None or x.shape != z.shape:
            return z.astype(spec.dtype), "standard normal"
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        return x.astype(spec.dtype), (f"standard normal after the graph's leading "
                                      f"normalisation (here {lo:.3g} to {hi:.3g})")
    if spec.dtype.kind == "b":
        if "mask" in lname:
            return np.ones(shape, dtype=bool), "all true (named like a mask)"
        return rng.integers(0, 2, size=shape).astype(bool), "fair coin flips"
    if "mask" in lname:
        return np.ones(shape, dtype=spec.dtype), "ones (named like a mask)"
    if "token_type" in lname or "segment" in lname:
        return np.zeros(shape, dtype=spec.dtype), "zeros (named like segment ids)"
    if "position" in lname and shape:
        x = np.broadcast_to(np.arange(shape[-1]), shape).astype(spec.dtype)
        return x, "counting along the last axis (named like position ids)"
    high = _token_range(model, spec.name)
    if spec.dtype.kind == "u" or np.iinfo(spec.dtype).max < high:
        high = min(high, int(np.iinfo(spec.dtype).max) + 1)
    return (rng.integers(0, high, size=shape).astype(spec.dtype),
            f"uniform integers in [0, {high - 1}]")


def make_inputs(model: onnx.ModelProto, specs: list[InputSpec], dims: Mapping[str, int],
                seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs for every spec (see the module docstring for the rules)."""
    rng = np.random.default_rng(seed)
    chosen = choose_dims(specs, dims, spatial_defaults(model, specs),
                         metadata_sizes(model, specs))
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        x, _ = default_values(model, spec, resolve_shape(spec, dims, chosen), rng)
        # np.ascontiguousarray would make a rank-0 scalar [1]: copy in C order instead
        feeds[spec.name] = np.array(x, order="C", copy=True)
    return feeds


def dims_label(specs: list[InputSpec], shapes: Mapping[str, tuple[int, ...]]) -> str:
    """'batch=2,seq=16' for the dynamic dimensions as fed (or 'static'); an input whose
    rank the model does not declare is named with its whole shape."""
    used: dict[str, str] = {}
    for spec in specs:
        shape = shapes[spec.name]
        if not spec.ranked:
            used[spec.name] = "x".join(map(str, shape)) or "scalar"
            continue
        for axis, d in enumerate(spec.dims):
            if not isinstance(d, int):
                used.setdefault(dim_key(spec, axis), str(shape[axis]))
    return ",".join(f"{k}={v}" for k, v in used.items()) or "static"
