"""Execution paths, one module per runtime, all behind ``base.Backend``.

Adding a runtime is one module here with a ``RUNTIME`` instance, its line in ``RUNTIMES``,
its names' line in ``names.NAMES`` and its optional extra in pyproject.toml. What the
evidence tools need of it (localize, blame, the fork policy, the precision checks, the
version line) it declares on its ``Backend`` (see ``base``): nothing above this package
tests a runtime's name. A runtime outside gero's tree registers itself (``register``) from
a module named in ``$GERO_RUNTIME_MODULES``. Every view names a backend and a path through
the functions here, which read ``names`` alone.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gero_runner.backends.names import (
    CORRECTED,
    NAMES,
    NOT_APPLICABLE,
    ORT_LEVELS,
    RELEASE,
    Names,
    label_template,
)
from gero_runner.backends.names import levels as levels  # re-exported
from gero_runner.backends.names import path_label as path_label
from gero_runner.backends.names import release_of as release_of
from gero_runner.backends.names import short_name as short_name
from gero_runner.backends.names import title as title
from gero_runner.backends.names import with_levels as with_levels
from gero_runner.errors import GeroError

if TYPE_CHECKING:  # a backend's module (NumPy, its runtime) loads only when asked for
    from gero_runner.backends.base import Backend

# Runtimes under test, by the name rows and `gero run --backends` use, in display order.
RUNTIMES: dict[str, str] = {
    "onnxruntime": "gero_runner.backends.ort",
    "openvino": "gero_runner.backends.openvino",
    "tract": "gero_runner.backends.tract",
}
REFERENCE = "onnx-reference"
"""The ReferenceEvaluator: run for every case, whatever runtimes are selected."""
_MODULES = {**RUNTIMES, REFERENCE: "gero_runner.backends.reference"}
_EVALUATORS = {REFERENCE: "RUNTIME", CORRECTED: "CORRECTED_RUNTIME"}
"""The ReferenceEvaluator and its corrected twin (the reference of some comparisons and the
float64 shadow's evaluator), both in ``backends.reference``, by their ``RUNTIME`` names."""

MODULES_ENV = "GERO_RUNTIME_MODULES"
"""Comma-separated modules of runtimes outside gero's tree (importable by every gero
process, its workers included: on ``PYTHONPATH``), each calling ``register`` at its top."""


@functools.cache
def get(name: str) -> Backend:
    """The backend of that name (its module is imported, its runtime is not); a release
    (``RUNTIME==VERSION``) is one of its own, run in its interpreter (``backends.release``)."""
    if RELEASE in name:
        from gero_runner.backends import release

        return release.backend(name)
    if name in _EVALUATORS:
        module, attribute = _MODULES[REFERENCE], _EVALUATORS[name]
    else:
        try:
            module, attribute = _MODULES[name], "RUNTIME"
        except KeyError as e:
            raise GeroError(f"unknown backend {name!r}; known: {', '.join(_MODULES)}") from e
    backend: Backend = getattr(importlib.import_module(module), attribute)
    return backend


def find(name: str) -> Backend | None:
    """The backend of that name, or None for a name this process does not know (a row of
    a runtime registered elsewhere, a path that is not a backend: 'float64-shadow')."""
    known = name in _MODULES or name in _EVALUATORS or release_of(name) is not None
    return get(name) if known else None


def is_reference(name: str) -> bool:
    """The ReferenceEvaluator, stock or corrected: the path runtimes are compared with."""
    return name in _EVALUATORS


def register(line: Names, module: str) -> None:
    """A runtime outside gero's tree: its names' line and the module that holds its
    ``RUNTIME`` (a ``base.Backend``), added to ``NAMES`` and ``RUNTIMES``. Its module calls
    this at its top, before its Backend class (which takes its names from the line), and
    is named in ``$GERO_RUNTIME_MODULES`` so that every gero process loads it."""
    if NAMES.get(line.name, line) != line or _MODULES.get(line.name, module) != module:
        raise GeroError(f"runtime {line.name!r} ({module}) is registered already")
    NAMES[line.name] = line
    RUNTIMES[line.name] = _MODULES[line.name] = module
    path_label_sql.cache_clear()
    path_name_sql.cache_clear()


def ort_levels() -> tuple[str, ...]:
    """ONNX Runtime's optimisation levels in their natural order, the order every view sorts
    paths by (``names.ORT_LEVELS``: the query layer imports no backend module)."""
    return ORT_LEVELS


def _sql_text(template: str, optimization: str) -> str:
    parts = ["'" + p.replace("'", "''") + "'" if p else "" for p in template.split("{setting}")]
    pieces = [parts[0]]
    for p in parts[1:]:
        pieces += [optimization, p]
    return " || ".join(p for p in pieces if p) or "''"


@functools.cache
def path_label_sql(backend: str = "backend", optimization: str = "optimization") -> str:
    """``path_label`` as a SQL expression over the two columns (the same templates)."""
    arms = " ".join(f"WHEN '{b.name}' THEN {_sql_text(label_template(b), optimization)}"
                    for b in NAMES.values())
    # a release ("onnxruntime==1.20.1"): its runtime's short name and its version
    releases = " ".join(
        f"WHEN starts_with({backend}, '{b.name}{RELEASE}') THEN '{b.short_name()}' || "
        f"substr({backend}, {len(b.name) + 1}) || ':' || {optimization}"
        for b in NAMES.values())
    return (f"CASE {backend} {arms} ELSE (CASE {releases} WHEN {optimization} = "
            f"'{NOT_APPLICABLE}' THEN {backend} ELSE {backend} || ':' || {optimization} END) END")


@functools.cache
def path_name_sql(backend: str = "backend", optimization: str = "optimization") -> str:
    """A path's ``PathSpec.name`` (its evidence folder, what a failure message names:
    "ort-all") as SQL: ``{prefix}-{setting}``, a path without setting by its backend."""
    arms = " ".join(f"WHEN '{b.name}' THEN '{b.prefix}-'" for b in NAMES.values())
    return (f"CASE WHEN {optimization} = '{NOT_APPLICABLE}' THEN {backend} "
            f"ELSE (CASE {backend} {arms} ELSE {backend} || '-' END) || {optimization} END")


def is_backend(name: str) -> bool:
    return name in _MODULES or release_of(name) is not None


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
        if RELEASE in name:
            from gero_runner.backends import release_env

            release_env.parse(name)  # one sentence for a release gero cannot run
        elif name not in RUNTIMES:
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


def _load_registered() -> None:
    """Import the modules ``$GERO_RUNTIME_MODULES`` names (each registers its runtime)."""
    for module in filter(None, (m.strip() for m in os.environ.get(MODULES_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise GeroError(f"{MODULES_ENV} names {module!r}, which cannot be imported "
                            f"({e}): put its folder on PYTHONPATH") from None


_load_registered()  # last: a registered module imports this package
