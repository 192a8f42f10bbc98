"""A model case's runs beyond a path's own outputs, reused across runs as the paths' are
(``storage.path_outputs``): a runtime baseline's noise-floor runs, keyed by what makes them
(the model, the inputs, the path and its runtime's version, and the noise: its seed, its
label, its count and scale, the code that draws it)."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np

from gero_runner.backends.base import Backend, PathSpec
from gero_runner.checks import model as model_checks
from gero_runner.execution.paths import kept_runs, kept_version
from gero_runner.storage.path_outputs import PathOutputs


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
