"""What the user says to feed a model (``--input``, ``--input-range``, ``--input-value``,
``--inputs FILE.npz``, ``--dim``), validated against its signature, and the feeds built
from it with every choice recorded.

A choice says, per input: the shape fed and where each dynamic size came from, and where
the values came from (the file, a constant, a range, or the seeded default). The case keeps
these choices (``CaseInstance.input_choices``) and every row of the case shows them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from gero_runner.errors import GeroError
from gero_runner.models import npz, signature
from gero_runner.models.signature import InputSpec
from gero_runner.request import ModelOptions
from gero_runner.storage.budget import mib


@dataclass(frozen=True)
class InputOptions:
    """The user's input options, parsed (names not yet checked against a model)."""

    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    arrays_file: str = ""
    dims: dict[str, int] = field(default_factory=dict)
    max_bytes: int = 1 << 30
    """Largest input to generate (``--max-tensor-mb``, 1 GiB by default): a bigger one is
    refused before anything is allocated, with the shape that asked for it."""

    def names(self) -> set[str]:
        return {*self.shapes, *self.ranges, *self.values, *self.arrays}


def _split(item: str, flag: str, expect: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name.strip():
        raise GeroError(f"bad {flag} {item!r}: expected {expect}")
    return name.strip(), value.strip()


def _number(text: str, flag: str, item: str, expect: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise GeroError(f"bad {flag} {item!r}: {text!r} is not a number; expected "
                        f"{expect}") from None
    if math.isnan(value):
        raise GeroError(f"bad {flag} {item!r}: NaN is not a value gero can draw from")
    return value


def parse_shape(item: str) -> tuple[str, tuple[int, ...]]:
    """``x=1,3,48,192`` (or ``1x3x48x192``) -> ("x", (1, 3, 48, 192)); ``sr=`` -> ("sr", ())."""
    expect = "NAME=SHAPE with positive sizes separated by commas (NAME= for a scalar)"
    name, text = _split(item, "--input", expect)
    if not text:
        return name, ()
    parts = text.replace("x", ",").replace("[", "").replace("]", "").split(",")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise GeroError(f"bad --input {item!r}: expected {expect}") from None
    if any(d < 1 for d in shape):
        raise GeroError(f"bad --input {item!r}: sizes must be at least 1")
    return name, shape


def parse_range(item: str) -> tuple[str, tuple[float, float]]:
    expect = "NAME=LO,HI"
    name, text = _split(item, "--input-range", expect)
    lo_text, sep, hi_text = text.partition(",")
    if not sep:
        raise GeroError(f"bad --input-range {item!r}: expected {expect}")
    lo = _number(lo_text, "--input-range", item, expect)
    hi = _number(hi_text, "--input-range", item, expect)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise GeroError(f"bad --input-range {item!r}: needs finite LO ≤ HI")
    return name, (lo, hi)


def parse_value(item: str) -> tuple[str, float]:
    expect = "NAME=V with a number V"
    name, text = _split(item, "--input-value", expect)
    if text.lower() in ("true", "false"):
        return name, float(text.lower() == "true")
    return name, _number(text, "--input-value", item, expect)


def load_arrays(path: str, flag: str = "--inputs",
                max_bytes: int = 1 << 30) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file by name, each at most ``max_bytes``
    (``--max-tensor-mb``), sizes checked from the headers before anything is read (no
    pickles; see ``models.npz``)."""
    return npz.read_arrays(path, flag, max_bytes)


def parse_options(opts: ModelOptions, max_bytes: int = 1 << 30) -> InputOptions:
    """The ``model_options`` of a request as InputOptions (each flag's syntax checked);
    ``max_bytes`` bounds each tensor (``--max-tensor-mb``), the ``--inputs`` arrays too."""
    shapes = dict(parse_shape(i) for i in opts.input_shapes)
    ranges = dict(parse_range(i) for i in opts.input_ranges)
    values = dict(parse_value(i) for i in opts.input_values)
    both = sorted(set(ranges) & set(values))
    if both:
        raise GeroError(f"input {', '.join(both)} has both --input-range and --input-value; "
                        "give one")
    arrays_file = opts.inputs_file or ""
    arrays = load_arrays(arrays_file, "--inputs", max_bytes) if arrays_file else {}
    clash = sorted(set(arrays) & ({*shapes, *ranges, *values}))
    if clash:
        raise GeroError(f"input {', '.join(clash)} comes from --inputs {arrays_file}; it "
                        "cannot also take --input, --input-range or --input-value")
    return InputOptions(shapes, ranges, values, arrays, arrays_file,
                        signature.parse_dims(opts.dims), max_bytes)


def check_names(options: InputOptions, specs_by_model: Mapping[str, list[InputSpec]]) -> None:
    """Every input an option names belongs to some model; every --dim names a dimension."""
    inputs = {s.name for specs in specs_by_model.values() for s in specs}
    unknown = sorted(options.names() - inputs)
    if unknown:
        what = f"--inputs {options.arrays_file} has" if set(unknown) <= set(options.arrays) \
            else "input options name"
        raise GeroError(f"{what} unknown input(s) {', '.join(unknown)}; inputs: "
                        f"{', '.join(sorted(inputs))}")
    known = {d for specs in specs_by_model.values() for d in signature.dynamic_dims(specs)}
    bad = [d for d in options.dims if d not in known]
    if bad:
        listed = list(dict.fromkeys(d for specs in specs_by_model.values()
                                    for d in signature.dynamic_dims(specs)))
        raise GeroError(f"--dim {', '.join(bad)} is not a dynamic dimension of the inputs; "
                        f"dimensions that can be set: "
                        f"{', '.join(listed) or 'none (every size is fixed)'}")


def _given_shapes(specs: list[InputSpec], options: InputOptions,
                  source: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """Shapes fixed by --input or by the arrays of --inputs, checked against the signature."""
    given: dict[str, tuple[tuple[int, ...], str]] = {}
    for spec in specs:
        if spec.name in options.arrays:
            given[spec.name] = (options.arrays[spec.name].shape,
                                f"--inputs {options.arrays_file}")
        elif spec.name in options.shapes:
            given[spec.name] = (options.shapes[spec.name], "--input")
    for name, (shape, flag) in given.items():
        spec = next(s for s in specs if s.name == name)
        if not spec.ranked:
            continue
        declared = "[" + ", ".join("?" if d is None else str(d) for d in spec.dims) + "]"
        if len(shape) != len(spec.dims):
            raise GeroError(f"{source}: {flag} gives input {name!r} shape {list(shape)} of "
                            f"rank {len(shape)}; the model declares rank {len(spec.dims)} "
                            f"{declared}")
        fixed = [(a, d) for a, d in enumerate(spec.dims)
                 if isinstance(d, int) and shape[a] != d]
        if fixed:
            a, d = fixed[0]
            raise GeroError(f"{source}: {flag} gives input {name!r} size {shape[a]} at axis "
                            f"{a}; the model fixes it at {d} {declared}")
    return given


def _dims_from_shapes(specs: list[InputSpec], given: Mapping[str, tuple[tuple[int, ...], str]],
                      dims: Mapping[str, int], source: str) -> dict[str, tuple[int, str]]:
    """Sizes of dimension names that given shapes imply; two that disagree are an error."""
    implied: dict[str, tuple[int, str]] = {k: (v, "--dim") for k, v in dims.items()}
    for spec in specs:
        if spec.name not in given or not spec.ranked:
            continue
        shape, flag = given[spec.name]
        for axis, d in enumerate(spec.dims):
            if not isinstance(d, str):
                continue
            where = f"{flag} ({spec.name} axis {axis})"
            if d in implied and implied[d][0] != shape[axis]:
                raise GeroError(f"{source}: dimension {d!r} is {implied[d][0]} from "
                                f"{implied[d][1]} but {shape[axis]} from {where}; one "
                                "dimension name has one size")
            implied.setdefault(d, (shape[axis], where))
    return implied


def _cast(x: np.ndarray, spec: InputSpec, source: str, what: str) -> tuple[np.ndarray, str]:
    if x.dtype == spec.dtype:
        return x, ""
    same_kind = (x.dtype.kind in "f" and spec.dtype.kind == "f") or (
        x.dtype.kind in "iu" and spec.dtype.kind in "iu") or (
        x.dtype.kind in "biu" and spec.dtype.kind == "b")
    if not same_kind:
        raise GeroError(f"{source}: {what} for input {spec.name!r} is {x.dtype}; the model "
                        f"takes {spec.dtype}")
    cast = x.astype(spec.dtype)
    if spec.dtype.kind in "iu" and not np.array_equal(cast.astype(x.dtype), x):
        raise GeroError(f"{source}: {what} for input {spec.name!r} does not fit "
                        f"{spec.dtype}")
    return cast, f" (cast from {x.dtype})"


def _values(spec: InputSpec, shape: tuple[int, ...], options: InputOptions,
            model: onnx.ModelProto, rng: np.random.Generator,
            source: str) -> tuple[np.ndarray, str]:
    name = spec.name
    if name in options.arrays:
        x, note = _cast(options.arrays[name], spec, source, f"--inputs {options.arrays_file}")
        return x, f"array {name!r} of {options.arrays_file}{note}"
    if name in options.values:
        v = options.values[name]
        if spec.dtype.kind in "iub" and v != int(v):
            raise GeroError(f"{source}: --input-value {name}={v:g} is not an integer; input "
                            f"{name!r} is {spec.dtype}")
        if spec.dtype.kind in "iu":
            info = np.iinfo(spec.dtype)
            if not info.min <= v <= info.max:
                raise GeroError(f"{source}: --input-value {name}={v:g} does not fit "
                                f"{spec.dtype}")
        return np.full(shape, v, dtype=spec.dtype), f"constant {v:g} (--input-value)"
    if name in options.ranges:
        lo, hi = options.ranges[name]
        if spec.dtype.kind == "b":
            raise GeroError(f"{source}: --input-range {name} names a bool input; use "
                            "--input-value")
        if spec.dtype.kind in "iu":
            ilo, ihi = math.ceil(lo), math.floor(hi)
            if ilo > ihi:
                raise GeroError(f"{source}: --input-range {name}={lo:g},{hi:g} holds no "
                                f"integer; input {name!r} is {spec.dtype}")
            info = np.iinfo(spec.dtype)
            if ilo < info.min or ihi > info.max:
                raise GeroError(f"{source}: --input-range {name}={lo:g},{hi:g} does not fit "
                                f"{spec.dtype}")
            x = rng.integers(ilo, ihi, size=shape, endpoint=True).astype(spec.dtype)
            return x, f"uniform integers in [{ilo}, {ihi}] (--input-range)"
        x = rng.uniform(lo, hi, size=shape).astype(spec.dtype)
        return x, f"uniform in [{lo:g}, {hi:g}] (--input-range)"
    x, text = signature.default_values(model, spec, shape, rng)
    return x, f"{text} (default)"


def build_inputs(model: onnx.ModelProto, specs: list[InputSpec], options: InputOptions,
                 seed: int, source: str) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """The feeds for one model and, per input, the choices behind them."""
    given = _given_shapes(specs, options, source)
    implied = _dims_from_shapes(specs, given, options.dims, source)
    chosen = signature.choose_dims(specs, {k: v for k, (v, _) in implied.items()},
                                   signature.spatial_defaults(model, specs),
                                   signature.metadata_sizes(model, specs))
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    choices: list[dict[str, Any]] = []
    for spec in specs:
        dims_note: dict[str, str] = {}
        if spec.name in given:
            shape, shape_source = given[spec.name]
        elif not spec.ranked:
            raise GeroError(f"{source}: input {spec.name!r} has no shape in the model; give "
                            f"it with --input {spec.name}=SHAPE (--input {spec.name}= for a "
                            "scalar)")
        else:
            shape, shape_source = signature.resolve_shape(spec, options.dims, chosen), "model"
            for axis, d in enumerate(spec.dims):
                if not isinstance(d, int):
                    key = signature.dim_key(spec, axis)
                    origin = implied[key][1] if key in implied else chosen[key].source
                    dims_note[key] = f"{shape[axis]} ({origin})"
        size = math.prod(shape) * spec.dtype.itemsize
        if size > options.max_bytes:  # checked before allocating: [100000, 100000] is 40 GB
            raise GeroError(
                f"{source}: input {spec.name!r} of shape {list(shape)} ({shape_source}) would "
                f"take {size / 2**30:.1f} GiB, over the {mib(options.max_bytes)} a tensor may "
                f"take (--max-tensor-mb); give a smaller one with --input "
                f"{spec.name}=SHAPE")
        x, values = _values(spec, shape, options, model, rng, source)
        # np.ascontiguousarray would make a rank-0 scalar [1]: copy in C order instead
        feeds[spec.name] = np.array(x, order="C", copy=True)
        choice: dict[str, Any] = {"name": spec.name, "dtype": str(x.dtype),
                                  "shape": list(x.shape), "shape_from": shape_source,
                                  "values": values}
        if dims_note:
            choice["dims"] = dims_note
        if x.size and x.dtype.kind in "fiu":
            choice["min"], choice["max"] = float(x.min()), float(x.max())
        choices.append(choice)
    return feeds, choices


def describe(choices: list[dict[str, Any]]) -> str:
    """One line per case: 'x float32 [2,3,64,64] standard normal (default); ...'."""
    parts = []
    for c in choices:
        shape = "[" + ",".join(str(d) for d in c["shape"]) + "]"
        dims = ""
        if c.get("dims"):
            dims = " (" + ", ".join(f"{k}={v}" for k, v in c["dims"].items()) + ")"
        elif c["shape_from"] != "model":
            dims = f" (shape from {c['shape_from']})"
        parts.append(f"{c['name']} {c['dtype']} {shape}{dims}: {c['values']}")
    return "; ".join(parts)
