"""A model's input signature and seeded inputs for it.

Dimensions: fixed sizes are kept; a symbolic or unknown dimension takes the value given by
``--dim NAME=VALUE`` (NAME is the dimension's ``dim_param``), else a default: 2 for the
leading (batch) axis, so batch contracts have two examples, and 16 for any other axis.

Values (seeded, reproducible from the case seed):
- float inputs: standard normal;
- integer inputs: inputs whose name says mask are all ones, token type / segment ids are
  zeros, position ids count along the last axis; other integers (token ids) are uniform in
  [0, V) where V is the row count of the initializer they index through a Gather (the
  embedding table), else in [0, 100);
- bool inputs: all true when named like a mask, else fair coin flips.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from gero_runner.errors import GeroError

BATCH_DEFAULT = 2
OTHER_DEFAULT = 16
TOKEN_RANGE_DEFAULT = 100


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: np.dtype[Any]
    dims: tuple[int | str | None, ...]
    """Each dimension: a fixed size, a dim_param name, or None (unknown)."""


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
            raise GeroError(f"{source}: input {vi.name!r} has no shape; gero needs its rank")
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
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


def dynamic_dims(specs: list[InputSpec]) -> list[str]:
    return sorted({d for s in specs for d in s.dims if isinstance(d, str)})


def has_dynamic_batch(specs: list[InputSpec]) -> bool:
    """Every input of rank ≥ 1 has a symbolic or unknown leading axis."""
    ranked = [s for s in specs if s.dims]
    return bool(ranked) and all(not isinstance(s.dims[0], int) for s in ranked)


def resolve_shape(spec: InputSpec, dims: Mapping[str, int]) -> tuple[int, ...]:
    shape = []
    for axis, d in enumerate(spec.dims):
        if isinstance(d, int):
            shape.append(d)
        elif isinstance(d, str) and d in dims:
            shape.append(dims[d])
        else:
            shape.append(BATCH_DEFAULT if axis == 0 else OTHER_DEFAULT)
    return tuple(shape)


def check_dim_names(specs: list[InputSpec], dims: Mapping[str, int], source: str) -> None:
    known = dynamic_dims(specs)
    unknown = [n for n in dims if n not in known]
    if unknown:
        raise GeroError(f"{source}: --dim {', '.join(unknown)} is not a dynamic dimension of "
                        f"its inputs; known: {', '.join(known) or 'none (all sizes fixed)'}")


def _token_range(model: onnx.ModelProto, name: str) -> int:
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            table = inits.get(node.input[0])
            if table is not None and table.dims:
                return int(table.dims[0])
    return TOKEN_RANGE_DEFAULT


def make_inputs(model: onnx.ModelProto, specs: list[InputSpec], dims: Mapping[str, int],
                seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs for every spec (see the module docstring for the rules)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        shape = resolve_shape(spec, dims)
        lname = spec.name.lower()
        if spec.dtype.kind == "f":
            x: np.ndarray = rng.standard_normal(shape).astype(spec.dtype)
        elif spec.dtype.kind == "b":
            x = (np.ones(shape, dtype=bool) if "mask" in lname
                 else rng.integers(0, 2, size=shape).astype(bool))
        elif "mask" in lname:
            x = np.ones(shape, dtype=spec.dtype)
        elif "token_type" in lname or "segment" in lname:
            x = np.zeros(shape, dtype=spec.dtype)
        elif "position" in lname and shape:
            x = np.broadcast_to(np.arange(shape[-1]), shape).astype(spec.dtype)
        else:
            high = _token_range(model, spec.name)
            if spec.dtype.kind == "u" or np.iinfo(spec.dtype).max < high:
                high = min(high, int(np.iinfo(spec.dtype).max) + 1)
            x = rng.integers(0, high, size=shape).astype(spec.dtype)
        feeds[spec.name] = np.ascontiguousarray(x)
    return feeds


def dims_label(specs: list[InputSpec], dims: Mapping[str, int]) -> str:
    """'batch=2,seq=16' for the dynamic dimensions actually used (or 'static')."""
    used: dict[str, int] = {}
    for spec in specs:
        for axis, (d, size) in enumerate(zip(spec.dims, resolve_shape(spec, dims),
                                             strict=True)):
            if not isinstance(d, int):
                used[d if isinstance(d, str) else f"{spec.name}[{axis}]"] = size
    return ",".join(f"{k}={v}" for k, v in used.items()) or "static"
