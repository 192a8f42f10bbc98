"""The user's side of a parity check: the module, its checkpoint and seeded inputs.

``--module PKG.MODULE:FACTORY`` names a callable that returns a ``torch.nn.Module``; the
directory the command runs in is put on ``sys.path`` first, as ``python -m`` does, so a
module next to the user's files imports. Inputs are ``NAME=SHAPE[:DTYPE]`` and are
generated from a seed (floats standard normal, integers uniform in [0, 16), bools fair).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.errors import GeroError
from gero_runner.parity.torch_support import require_torch

INPUT_DTYPES = ("float32", "float16", "float64", "int64", "int32", "bool")
INT_HIGH = 16
"""Integer inputs are uniform in [0, INT_HIGH): valid indices for small embedding tables."""


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def label(self) -> str:
        return f"{self.name}[{','.join(str(d) for d in self.shape)}]:{self.dtype}"


def parse_input(text: str) -> InputSpec:
    """``x=2x3x32x32`` or ``ids=1,16:int64`` -> InputSpec."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest:
        raise GeroError(f"bad --input {text!r}: expected NAME=SHAPE[:DTYPE], e.g. x=2x3x32x32")
    shape_text, _, dtype = rest.partition(":")
    dtype = dtype.strip() or "float32"
    if dtype not in INPUT_DTYPES:
        raise GeroError(f"bad --input {text!r}: dtype {dtype!r} is not one of "
                        f"{', '.join(INPUT_DTYPES)}")
    parts = shape_text.replace(",", "x").split("x") if shape_text.strip() else []
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError as e:
        raise GeroError(f"bad --input {text!r}: shape {shape_text!r} must be integers "
                        "separated by x or ,") from e
    if any(d < 1 for d in shape):
        raise GeroError(f"bad --input {text!r}: every dimension must be at least 1")
    return InputSpec(name, shape, dtype)


def parse_inputs(items: list[str]) -> list[InputSpec]:
    specs = [parse_input(i) for i in items]
    if not specs:
        raise GeroError("give at least one --input NAME=SHAPE[:DTYPE] (the module's arguments, "
                        "in order)")
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise GeroError(f"--input names must be unique; repeated: {', '.join(dupes)}")
    return specs


def make_inputs(specs: list[InputSpec], seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs, in argument order; the same seed gives bit-identical arrays."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.dtype.startswith("float"):
            x = rng.standard_normal(spec.shape).astype(spec.dtype)
        elif spec.dtype == "bool":
            x = rng.integers(0, 2, spec.shape).astype(bool)
        else:
            x = rng.integers(0, INT_HIGH, spec.shape).astype(spec.dtype)
        inputs[spec.name] = x
    return inputs


def import_factory(spec: str, search_path: Path | None = None) -> Any:
    """The callable named by ``PKG.MODULE:FACTORY`` (``search_path`` goes first on sys.path)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise GeroError(f"bad --module {spec!r}: expected PKG.MODULE:FACTORY, e.g. "
                        "mypkg.models:build_model")
    if search_path is not None:
        entry = str(search_path.resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise GeroError(f"--module {spec}: cannot import {module_name!r} ({e}); run gero from "
                        "the directory that contains it or put it on PYTHONPATH") from e
    except Exception as e:  # the user's module raised while importing
        raise GeroError(f"--module {spec}: importing {module_name!r} raised "
                        f"{type(e).__name__}: {e}") from e
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise GeroError(f"--module {spec}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise GeroError(f"--module {spec}: {attr!r} is not callable")
    return target


def load_module(spec: str, checkpoint: Path | None = None,
                search_path: Path | None = None) -> Any:
    """Build the module (factory or nn.Module class), load the checkpoint, set eval mode."""
    torch = require_torch()
    factory = import_factory(spec, search_path)
    try:
        module = factory()
    except Exception as e:  # the user's factory failed
        raise GeroError(f"--module {spec}: calling the factory raised "
                        f"{type(e).__name__}: {e}") from e
    if not isinstance(module, torch.nn.Module):
        raise GeroError(f"--module {spec}: the factory returned {type(module).__name__}, "
                        "not a torch.nn.Module")
    if checkpoint is not None:
        load_checkpoint(module, checkpoint)
    return module.eval()


def load_checkpoint(module: Any, path: Path) -> None:
    """Load a state dict (bare, or under 'state_dict' / 'model'); tensors only, no pickles."""
    torch = require_torch()
    if not path.is_file():
        raise GeroError(f"--checkpoint {path}: no such file")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, ...
        raise GeroError(f"--checkpoint {path}: cannot load as a weights-only checkpoint "
                        f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                        ) from e
    if isinstance(state, dict):
        for key in ("state_dict", "model"):
            if isinstance(state.get(key), dict):
                state = state[key]
                break
    if not isinstance(state, dict):
        raise GeroError(f"--checkpoint {path}: expected a state dict, got {type(state).__name__}")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise GeroError(f"--checkpoint {path}: does not fit the module: "
                        f"{str(e).splitlines()[0]}") from e


def flatten_outputs(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A module's return value as named tensors: a tensor is 'output', a tuple 'output_N',
    a dict its keys (nested containers join names with '.'). Order is the ONNX output order."""
    torch = require_torch()
    if isinstance(value, torch.Tensor):
        return [(prefix or "output", value)]
    if isinstance(value, dict):
        items = [(f"{prefix}.{k}" if prefix else str(k), v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        base = prefix or "output"
        items = [(f"{base}_{i}", v) for i, v in enumerate(value)]
    else:
        raise GeroError(f"the module returned {type(value).__name__}; parity compares tensors "
                        "(a tensor, or a tuple / list / dict of tensors)")
    flat: list[tuple[str, Any]] = []
    for name, v in items:
        flat += flatten_outputs(v, name)
    return flat
