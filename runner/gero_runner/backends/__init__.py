"""Execution paths, one module per runtime, all behind ``base.Backend``.

Adding a runtime is one module here with a ``RUNTIME`` instance, its line in ``RUNTIMES``
and its optional extra in pyproject.toml.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable

from gero_runner.backends.base import Backend
from gero_runner.errors import GeroError

# Runtimes under test, by the name rows and `gero run --backends` use, in display order.
RUNTIMES: dict[str, str] = {
    "onnxruntime": "gero_runner.backends.ort",
    "openvino": "gero_runner.backends.openvino",
    "tract": "gero_runner.backends.tract",
}
REFERENCE = "onnx-reference"
"""The ReferenceEvaluator: run for every case, whatever runtimes are selected."""
_MODULES = {**RUNTIMES, REFERENCE: "gero_runner.backends.reference"}


@functools.cache
def get(name: str) -> Backend:
    """The backend of that name (its module is imported, its runtime is not)."""
    try:
        module = _MODULES[name]
    except KeyError as e:
        raise GeroError(f"unknown backend {name!r}; known: {', '.join(_MODULES)}") from e
    backend: Backend = importlib.import_module(module).RUNTIME
    return backend


def is_backend(name: str) -> bool:
    return name in _MODULES


def installed_runtimes() -> tuple[str, ...]:
    return tuple(name for name in RUNTIMES if get(name).installed())


def select(names: Iterable[str] | None) -> tuple[str, ...]:
    """The runtimes a run uses: the named ones (each must be installed), or every installed
    one. The ReferenceEvaluator is not among them: it always runs."""
    if names is None:
        return installed_runtimes()
    chosen: list[str] = []
    for name in names:
        if name == REFERENCE:
            continue  # always runs
        if name not in RUNTIMES:
            raise GeroError(f"unknown backend {name!r}; choose from {', '.join(RUNTIMES)} "
                            f"(the {REFERENCE} path always runs)")
        backend = get(name)
        if not backend.installed():
            raise GeroError(f"backend {name!r} is not installed: {backend.install_hint()}")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise GeroError(f"no runtime selected; choose from {', '.join(RUNTIMES)}")
    return tuple(chosen)
