"""A model case's runs beyond a path's own outputs, reused across runs as the paths' are
(``storage.path_outputs``): a runtime baseline's noise-floor runs, keyed by what makes them
(the model, the inputs, the path and its runtime's version, and the noise: its seed, its
label, its count and scale, the code that draws it); and the variant files gero builds,
keyed by the model, the inputs, the seed, the calibration feeds, the builder's code and the
versions of the tools it calls (ONNX Runtime's quantizer and float16 converter, onnx)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from gero_runner.backends.base import Backend, PathSpec
from gero_runner.checks import model as model_checks
from gero_runner.execution.paths import kept_runs, kept_version
from gero_runner.models import variants as var
from gero_runner.storage.hashing import tensor_hash
from gero_runner.storage.path_outputs import PathOutputs, Stored, path_key


@functools.cache
def _noise_code() -> str:
    """The noise-floor runs' own code and figures: a change to either recomputes them."""
    source = inspect.getsource(model_checks.noisy_runs)
    figures = repr((model_checks.NOISE_RUNS, model_checks.NOISE_RELATIVE))
    return hashlib.sha256((source + figures).encode()).hexdigest()


def noisy_runs_kept(reuse: PathOutputs | None, backend: Backend, spec: PathSpec, model: bytes,
                    inputs: dict[str, np.ndarray], seed: int, label: str,
                    timer: Callable[[], AbstractContextManager[None]]
                    ) -> list[list[np.ndarray]]:
    """``checks.model.noisy_runs``, reused where a run kept the same (``reuse`` None:
    computed)."""
    how = {"noise": label, "seed": seed, "code": _noise_code()}
    return kept_runs(reuse, spec, kept_version(backend), model, inputs, how,
                     lambda: model_checks.noisy_runs(backend, spec, model, inputs, seed, label,
                                                     timer))


@functools.cache
def _builder_version() -> str:
    """The variant builders' code (``gero_runner.models``) and the tools they call."""
    import onnx
    import onnxruntime

    h = hashlib.sha256(f"onnx {onnx.__version__} onnxruntime {onnxruntime.__version__}"
                       .encode())
    for source in sorted(Path(var.__file__).parent.glob("*.py")):
        h.update(source.name.encode())
        h.update(source.read_bytes())
    return h.hexdigest()


def variant_kept(reuse: PathOutputs | None, name: str, model: bytes,
                 inputs: dict[str, np.ndarray], seed: int, calibration: var.Calibration
                 ) -> bytes:
    """``models.variants.build``, reused where a run kept the same file (an int8-static
    calibration is most of a rerun's time on a CNN); a build that fails is never kept."""
    if reuse is None:
        return var.build(name, model, inputs, seed, calibration)
    feeds = [{k: tensor_hash(np.asarray(x)) for k, x in sample.items()}
             for sample in calibration.samples]
    key = path_key(model, inputs, f"gero-variant:{name}", _builder_version(), "", 0,
                   {"seed": seed, "calibration": feeds, "source": calibration.source}, 1)
    stored, _ = reuse.load(key)
    if stored is not None and len(stored.outputs) == 1:
        return stored.outputs[0].tobytes()
    built = var.build(name, model, inputs, seed, calibration)
    reuse.store(key, Stored([np.frombuffer(built, np.uint8)], math.nan, math.nan, 1, True))
    return built
