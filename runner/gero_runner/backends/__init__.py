"""Execution paths, one module per runtime, all behind ``base.Backend``.

Adding a runtime is one module here with a ``RUNTIME`` instance, its line in ``RUNTIMES``,
its names' line in ``names.NAMES`` and its optional extra in pyproject.toml. Every view
names a backend and a path through the functions here, which read ``names`` alone.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gero_runner.backends.names import NAMES, NOT_APPLICABLE, ORT_LEVELS, Names
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


@functools.cache
def get(name: str) -> Backend:
    """The backend of that name (its module is imported, its runtime is not)."""
    try:
        module = _MODULES[name]
    except KeyError as e:
        raise GeroError(f"unknown backend {name!r}; known: {', '.join(_MODULES)}") from e
    backend: Backend = importlib.import_module(module).RUNTIME
    return backend


def ort_levels() -> tuple[str, ...]:
    """ONNX Runtime's optimisation levels in their natural order, the order every view sorts
    paths by (``names.ORT_LEVELS``: the query layer imports no backend module)."""
    return ORT_LEVELS


def title(backend: str) -> str:
    """How a sentence names a backend ("ONNX Runtime", "the ReferenceEvaluator"); a name
    gero does not know as itself."""
    known = NAMES.get(backend)
    return known.label() if known else backend


def short_name(backend: str) -> str:
    """A backend's name where room is short ("ort", "ov"); a name gero does not know as
    itself."""
    known = NAMES.get(backend)
    return known.short_name() if known else backend


def _label_template(known: Names) -> str:
    return known.path_label.replace("{short}", known.short_name())


def path_label(backend: str, optimization: str) -> str:
    """How every table and list names a path (``Names.path_label``): ONNX Runtime's
    levels alone ("all"), "reference", another runtime's setting after its short name
    ("ov:f32", "tract:optimized"). A backend gero does not know: its name, with its
    setting when it has one."""
    known = NAMES.get(backend)
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
                    for b in NAMES.values())
    return (f"CASE {backend} {arms} ELSE (CASE WHEN {optimization} = "
            f"'{NOT_APPLICABLE}' THEN {backend} ELSE {backend} || ':' || {optimization} END) END")


@functools.cache
def path_name_sql(backend: str = "backend", optimization: str = "optimization") -> str:
    """A path's ``PathSpec.name`` (its evidence folder, what a failure message names:
    "ort-all") as SQL: ``{prefix}-{setting}``, a path without setting by its backend."""
    arms = " ".join(f"WHEN '{b.name}' THEN '{b.prefix}-'" for b in NAMES.values())
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
