"""Execution paths, one module per runtime, all behind ``base.Backend``.

Adding a runtime is one module here with a ``RUNTIME`` instance, its line in ``RUNTIMES``
and its optional extra in pyproject.toml. Its names (``title``, ``short``, ``path_label``)
are its own attributes; every view names a backend and a path through the functions here.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable

from gero_runner.backends.base import NOT_APPLICABLE, Backend
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


@functools.cache
def ort_levels() -> tuple[str, ...]:
    """ONNX Runtime's optimisation levels in their natural order, the order every view sorts
    paths by (``ort.LEVEL_NAMES``, loaded like every backend module: the query layer names
    no module that imports onnxruntime, even deferred)."""
    levels: tuple[str, ...] = importlib.import_module(RUNTIMES["onnxruntime"]).LEVEL_NAMES
    return levels


def _named() -> list[Backend]:
    """Every backend rows can name: the registry's and the corrected ReferenceEvaluator
    (the reference of some comparisons and the float64 shadow's evaluator)."""
    from gero_runner.backends import reference

    return [*(get(name) for name in _MODULES), reference.CORRECTED_RUNTIME]


@functools.cache
def _by_name() -> dict[str, Backend]:
    return {b.name: b for b in _named()}


def title(backend: str) -> str:
    """How a sentence names a backend ("ONNX Runtime", "the ReferenceEvaluator"); a name
    gero does not know as itself."""
    known = _by_name().get(backend)
    return known.label() if known else backend


def short_name(backend: str) -> str:
    """A backend's name where room is short ("ort", "ov"); a name gero does not know as
    itself."""
    known = _by_name().get(backend)
    return known.short_name() if known else backend


def _label_template(backend: Backend) -> str:
    return backend.path_label.replace("{short}", backend.short_name())


def path_label(backend: str, optimization: str) -> str:
    """How every table and list names a path (``Backend.path_label``): ONNX Runtime's
    levels alone ("all"), "reference", another runtime's setting after its short name
    ("ov:f32", "tract:optimized"). A backend gero does not know: its name, with its
    setting when it has one."""
    known = _by_name().get(backend)
    if known is None:
        return backend if optimization == NOT_APPLICABLE else f"{backend}:{optimization}"
    return _label_template(known).replace("{setting}", optimization)


def _sql_text(template: str, optimization: str) -> str:
    parts = ["'" + p.replace("'", "''") + "'" if p else "" for p in template.split("{setting}")]
    pieces = [parts[0]]
    for p in parts[1:]:
        pieces += [optimization, p]
    return " || ".join(p for p in pieces if p) or "''"


@functools.cache
def path_label_sql(backend: str = "backend", optimization: str = "optimization") -> str:
    """``path_label`` as a SQL expression over the two columns (the same templates)."""
    arms = " ".join(f"WHEN '{b.name}' THEN {_sql_text(_label_template(b), optimization)}"
                    for b in _named())
    return (f"CASE {backend} {arms} ELSE (CASE WHEN {optimization} = "
            f"'{NOT_APPLICABLE}' THEN {backend} ELSE {backend} || ':' || {optimization} END) END")


@functools.cache
def path_name_sql(backend: str = "backend", optimization: str = "optimization") -> str:
    """A path's ``PathSpec.name`` (its evidence folder, what a failure message names:
    "ort-all") as SQL: ``{prefix}-{setting}``, a path without setting by its backend."""
    arms = " ".join(f"WHEN '{b.name}' THEN '{b.prefix}-'" for b in _named())
    return (f"CASE WHEN {optimization} = '{NOT_APPLICABLE}' THEN {backend} "
            f"ELSE (CASE {backend} {arms} ELSE {backend} || '-' END) || {optimization} END")


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
