"""The one interface every execution path implements.

A runtime is a ``Backend``: it lists its paths (one per setting: ONNX Runtime's optimisation
levels, OpenVINO's inference precisions, tract with and without its optimiser), builds a
session from model bytes and a path's recorded settings, runs it, releases it, reports its
version, and says in one line when it cannot take a case. Everything above this package
(execution, contracts, variants, models, replay, timing) talks to runtimes only through it.

Runtimes are imported inside the methods: the parent of the worker pool forks its workers
and must not hold a runtime's thread pools, and the explorer must not pay their import.
"""

from __future__ import annotations

import functools
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gero_runner.backends.names import NAMES
from gero_runner.backends.names import NOT_APPLICABLE as NOT_APPLICABLE  # re-exported

if TYPE_CHECKING:
    from gero_runner.case import Arrays, CaseInstance



@dataclass(frozen=True)
class PathSpec:
    """One path of a runtime: a setting, with what every observation of it records."""

    backend: str
    """The rows' backend column (``Backend.name``)."""
    name: str
    """Unique within a case: names the path's evidence folder, e.g. 'ort-all'."""
    optimization: str
    """The rows' optimization column: the setting, e.g. 'all', 'f32', 'bf16-default'."""
    threads: int
    settings: Mapping[str, Any]
    """Enough to rebuild the session (``Backend.build``); recorded as JSON on every row."""


class Backend(ABC):
    """A runtime gero can run a case on."""

    name: ClassVar[str]
    """The rows' backend column, also the name ``gero run --backends`` takes."""
    prefix: ClassVar[str]
    """Path names are ``{prefix}-{optimization}``."""
    distribution: ClassVar[str]
    """The PyPI distribution that provides the runtime (its version is recorded)."""
    module: ClassVar[str]
    """The import name, probed without importing it."""
    extra: ClassVar[str | None] = None
    """gero's optional extra that installs it (None: a core dependency)."""
    title: ClassVar[str] = ""
    """How sentences name it ("ONNX Runtime"); its name when empty."""
    short: ClassVar[str] = ""
    """Its name where room is short (a column head, a bar's label: "ov"); its name when empty."""
    path_label: ClassVar[str] = "{short}:{setting}"
    """How tables and lists name one of its paths, a template over ``short`` and the path's
    setting (its ``optimization``): "ov:f32". Rendered by ``backends.path_label`` in Python
    and ``backends.path_label_sql`` in SQL, the one rule every view uses."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A backend gero names (backends.names) takes its names from that table, their one
        # owner; a backend made elsewhere (a test's) keeps what its class says.
        super().__init_subclass__(**kwargs)
        known = NAMES.get(cls.__dict__.get("name", ""))
        if known is not None:
            cls.prefix, cls.title, cls.short = known.prefix, known.title, known.short
            cls.path_label = known.path_label

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def install_hint(self) -> str:
        target = f"'gero[{self.extra}]'" if self.extra else self.distribution
        return f"pip install {target}"

    def version(self) -> str:
        return _version(self.distribution)

    @abstractmethod
    def paths(self, threads: int) -> list[PathSpec]:
        """Every setting this runtime is run at, in display order (the first is its base)."""

    def label(self) -> str:
        return self.title or self.name

    def short_name(self) -> str:
        return self.short or self.name

    def model_baseline(self, paths: list[PathSpec]) -> PathSpec:
        """Of this runtime's paths (``paths(threads)``), the one the model family measures
        its noise floor on and judges a model's int8/fp16 variants against: its most
        optimised setting (the last) unless a runtime says otherwise."""
        return paths[-1]

    def supports(self, case: CaseInstance) -> str | None:
        """None when the runtime can take the case, else a one-line reason."""
        return None

    @abstractmethod
    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        """A session for the serialised model with a path's settings."""

    @abstractmethod
    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        """The graph outputs, in graph order, as NumPy arrays."""

    def release(self, session: Any) -> None:
        """Free the session now (its teardown is timed as backend work)."""
        del session

    def with_threads(self, settings: Mapping[str, Any], threads: int) -> dict[str, Any] | None:
        """The settings at another intra-op thread count, or None when the runtime has no
        such setting (the threads contract then does not apply to it)."""
        return None

    def spec(self, optimization: str, threads: int, settings: Mapping[str, Any]) -> PathSpec:
        return PathSpec(self.name, f"{self.prefix}-{optimization}", optimization, threads,
                        settings)


@functools.cache  # reading package metadata costs ~1 ms; rows ask per output
def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def input_dtypes(case: CaseInstance) -> set[str]:
    return {str(x.dtype) for x in case.inputs.values()}


def as_array(value: Any) -> np.ndarray:
    """An output as an array; a string tensor (object array of str) as a unicode array, so
    that it is stored without pickles and compared exactly."""
    x = np.asarray(value)
    if x.dtype == object and all(isinstance(v, str) for v in x.reshape(-1)):
        return x.astype(str) if x.size else np.zeros(x.shape, dtype="<U1")
    return x
