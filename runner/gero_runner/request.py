"""What a run is asked to do, checked when it is made: a leaf every layer may import.

``RunKeywords`` declares each option once: the keyword ``gero.run`` takes, its type, the
``gero run`` flag that sets it, how its value is read and where it goes. The CLI's argument
groups add and read their flags by keyword, ``gero.run`` and ``gero.request`` take the
keywords, and ``request_from_keywords`` makes the ``RunRequest`` (a script may build one
directly). Either way a bad value is refused here with one sentence naming it, so
``threads=0`` from Python is the same error as ``--threads 0``.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, TypedDict, get_type_hints

from gero_runner.errors import GeroError
from gero_runner.tolerances import DEFAULTS, FLOAT_DTYPES, Tolerances, parse_items

DEFAULT_TIMEOUT_S = 120.0
MAX_SEED = 2**32 - 1
"""The largest seed: what every input generator takes (and a Parquet int64 holds)."""
DEFAULT_PATH_BUDGET_S = 60.0
"""Seconds each path of a model case may take (``--path-budget``): a runtime setting on the
model, on a variant or on the contract graphs, the ReferenceEvaluator, the float64 shadow, a
variant's build, a runtime's noise-floor runs."""
EXECUTORS = ("local", "dask")
PATHS_NEEDED = "needed"
PATHS_ALL = "all"
PATHS_CHOICES = (PATHS_NEEDED, PATHS_ALL)
"""``--paths``: a model case runs the settings that can change or explain a verdict
(``needed``), or every setting of every runtime (``all``; ``checks.model_parts``)."""
DEFAULT_MAX_TENSOR_MB = 1024.0
"""Largest tensor a case may make (``--max-tensor-mb``; see ``storage.budget``)."""
DEFAULT_MAX_EVIDENCE_MB = 64.0
"""Tensors a case keeps on disk before the rest are kept as summaries (``--max-evidence-mb``)."""

# `--task`: tasks whose outputs carry a decision (argmax agreement is gated), and the others.
DECISION_TASKS = ("classifier", "decoder", "recognizer")
OTHER_TASKS = ("encoder", "regressor", "detector", "dense")


def check_timeout(value: object, name: str = "timeout (--timeout)") -> None:
    """A per-case timeout is a positive, finite number of seconds (``inf`` would overflow
    the waits, 0 would time out every case)."""
    if not (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0):
        raise GeroError(f"{name} must be a positive number of seconds, got {value!r}")


# Suites by name: "module:function" returning the cases of a request (imported lazily).
SUITES: dict[str, str] = {
    "synthetic": "gero_runner.cases.synthetic.registry:cases_for_request",
    "onnx-backend": "gero_runner.cases.onnx_backend:cases_for_request",
    "models": "gero_runner.cases.shipped_models:cases_for_request",
}
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def suite_names() -> list[str]:
    return [*SUITES, "all"]


@dataclass(frozen=True)
class ModelOptions:
    """How to feed and judge a model (``--dim``, ``--input*``, ``--task``, ``--variants``,
    ``--output-kind``); each item's syntax is checked by ``models.inputs`` against the model."""

    dims: tuple[str, ...] = ()
    """Values of dynamic input dimensions, ``NAME=VALUE``."""
    task: str | None = None
    """e.g. ``classifier``: adds the decision metric."""
    variants: tuple[str, ...] = ()
    """Variants to build and gate: int8-dynamic, int8-static, fp16."""
    output_kinds: tuple[str, ...] = ()
    """``NAME=KIND`` per output: dense | confidence | rotation | translation | keypoints."""
    input_shapes: tuple[str, ...] = ()
    """``NAME=SHAPE`` per input (``--input``): the whole shape, ``NAME=`` for a scalar."""
    input_ranges: tuple[str, ...] = ()
    """``NAME=LO,HI`` per input (``--input-range``): uniform draws in [LO, HI]."""
    input_values: tuple[str, ...] = ()
    """``NAME=V`` per input (``--input-value``): a constant."""
    inputs_file: str | None = None
    """An ``.npz`` of real arrays by input name (``--inputs``)."""
    calibration_file: str | None = None
    """An ``.npz`` of calibration arrays by input name for the ``int8-static`` variant
    (``--calibration``): each the input's shape (one sample) or with one more leading axis
    (that many samples)."""
    decision_axes: tuple[str, ...] = ()
    """``NAME=AXIS`` per output (``--decision-axis``): the class axis its cosine and
    decisions are taken along (default: the last)."""

    def __post_init__(self) -> None:
        for flag, value in (("--inputs", self.inputs_file),
                            ("--calibration", self.calibration_file)):
            if value is not None and not Path(value).is_file():
                raise GeroError(f"{flag} {value}: no such file")


@dataclass(frozen=True)
class RunRequest:
    """What the user asked for: which cases, where to store them, with which settings."""

    suite: str = "synthetic"
    data_root: Path = Path("data")
    ops: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    model_options: ModelOptions = ModelOptions()
    run_id: str | None = None
    jobs: int = 1
    threads: int = 1
    """ONNX Runtime intra-op threads (at least 1: the rows record it as the path's setting)."""
    repeats: int = 5
    seed: int = 0
    tolerances: Tolerances = DEFAULTS
    """The defaults with the run's overrides (``Tolerances.with_overrides``)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    checks: tuple[str, ...] = ("contracts", "variants")
    backends: tuple[str, ...] | None = ("onnxruntime",)
    """Runtimes under test (see backends.select); None: every installed one. The onnx
    ReferenceEvaluator runs whatever is selected."""
    command_line: str = ""
    limit: int | None = None
    """Run only the first N cases (for quick looks and tests)."""
    executor: str = "local"
    """Where cases run: ``local`` (``jobs`` worker processes here) or ``dask`` (the Dask
    distributed cluster whose scheduler is ``scheduler``)."""
    scheduler: str | None = None
    """``tcp://HOST:PORT`` of the Dask scheduler (default: ``$GERO_DASK_SCHEDULER``)."""
    max_tensor_mb: float = DEFAULT_MAX_TENSOR_MB
    max_evidence_mb: float = DEFAULT_MAX_EVIDENCE_MB
    path_budget_s: float = DEFAULT_PATH_BUDGET_S
    """Seconds each path of a model case may take (``--path-budget``)."""
    skip_paths: tuple[str, ...] = ()
    """Runtime settings not to run, ``RUNTIME:SETTING`` (``--skip-path``), checked against
    the runtimes when the run starts."""
    paths: str = PATHS_NEEDED
    """Which settings a model case runs (``--paths``): ``needed`` or ``all``."""
    reuse: bool = True
    """Reuse the path outputs an earlier run kept in the data root where nothing they
    depend on changed, and keep this run's (False: ``--no-reuse``, every path computed)."""

    def __post_init__(self) -> None:
        if self.suite not in suite_names():
            raise GeroError(f"unknown suite {self.suite!r}; choose from "
                            f"{', '.join(suite_names())}")
        bad = [d for d in self.dtypes if d not in FLOAT_DTYPES]
        if bad:
            raise GeroError(f"unknown dtype(s) {', '.join(bad)}; choose from "
                            f"{', '.join(FLOAT_DTYPES)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (
                0 <= self.seed <= MAX_SEED):
            raise GeroError(f"seed (--seed) must be a whole number from 0 to {MAX_SEED}, "
                            f"got {self.seed!r}")
        for name in ("jobs", "threads", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GeroError(f"{name} (--{name}) must be a whole number of at least 1, "
                                f"got {value!r}")
        if self.executor not in EXECUTORS:
            raise GeroError(f"unknown executor {self.executor!r}; choose from "
                            f"{', '.join(EXECUTORS)}")
        if self.scheduler is not None and self.executor != "dask":
            raise GeroError("--scheduler names a Dask scheduler; it needs --executor dask")
        if self.limit is not None and (isinstance(self.limit, bool)
                                       or not isinstance(self.limit, int) or self.limit < 1):
            raise GeroError(f"limit (--limit) must be a whole number of at least 1, got "
                            f"{self.limit!r}")
        check_timeout(self.timeout_s)
        if not isinstance(self.tolerances, Tolerances):
            raise GeroError(f"tolerances must be a gero_runner.tolerances.Tolerances, e.g. "
                            f"Tolerances.with_overrides(rtol={{'float16': 1e-2}}), got "
                            f"{self.tolerances!r}")
        check_timeout(self.path_budget_s, "path budget (--path-budget)")
        if self.paths not in PATHS_CHOICES:
            raise GeroError(f"paths (--paths) must be {' or '.join(PATHS_CHOICES)}, got "
                            f"{self.paths!r}")
        for name in ("max_tensor_mb", "max_evidence_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value > 0):
                raise GeroError(f"{name} (--{name.replace('_', '-')}) must be a positive "
                                f"number of MiB, got {value!r}")
        if self.run_id is not None and (not _RUN_ID.fullmatch(self.run_id)
                                        or self.run_id in (".", "..")):
            raise GeroError(f"run id {self.run_id!r} must be a plain name: letters, digits, "
                            "'.', '_' and '-', not starting with '.', '_' or '-'")
        for model in self.models:
            if not Path(model).is_file():
                raise GeroError(f"--model {model}: no such file")
        o = self.model_options
        given = [flag for flag, v in (("--input", o.input_shapes), ("--input-range",
                                      o.input_ranges), ("--input-value", o.input_values),
                                      ("--inputs", o.inputs_file), ("--dim", o.dims),
                                      ("--calibration", o.calibration_file)) if v]
        if given and not self.models:
            raise GeroError(f"{', '.join(given)} set the inputs of --model PATH; no --model "
                            "given")


# The keywords of `gero.run` -----------------------------------------------------------------

PathLike = str | os.PathLike[str]


def _as_given(keyword: str, value: Any) -> Any:
    return value  # a number or a flag: RunRequest checks it


def _text(keyword: str, value: Any) -> Any:
    if value is not None and not isinstance(value, str):
        raise GeroError(f"{keyword} must be a string, got {value!r}")
    return value


def _names(keyword: str, value: Any) -> tuple[str, ...]:
    """A list of names, never a string read as a list of its characters."""
    if isinstance(value, str):
        raise GeroError(f"{keyword} must be a list of names, not the string {value!r}: "
                        f"give [{value!r}]")
    names = tuple(value) if isinstance(value, Iterable) else None
    if names is None or not all(isinstance(v, str) for v in names):
        raise GeroError(f"{keyword} must be a list of names (strings), got {value!r}")
    return names


def _name_list(keyword: str, value: Any) -> list[str]:
    return list(_names(keyword, value))


def _runtimes(keyword: str, value: Any) -> tuple[str, ...] | None:
    return None if value is None else _names(keyword, value)


def _models(keyword: str, value: Any) -> list[str]:
    items = [value] if isinstance(value, str | os.PathLike) else (
        list(value) if isinstance(value, Iterable) else None)
    if items is None or not all(isinstance(m, str | os.PathLike) for m in items):
        raise GeroError(f"{keyword} must be paths of ONNX files, got {value!r}")
    return [str(m) for m in items]


def _path(keyword: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise GeroError(f"{keyword} must be a path, got {value!r}")
    return None if value is None else str(value)


def default_data_root() -> Path:
    """``$GERO_DATA_DIR``, else ``./data``: the data root every command uses by default."""
    return Path(os.environ.get("GERO_DATA_DIR") or "data")


def _data_root(keyword: str, value: Any) -> Path:
    path = _path(keyword, value)
    return default_data_root() if path is None else Path(path)


def _pairs(keyword: str, value: Any) -> tuple[str, ...]:
    """``{"batch": 4}`` or ``["batch=4"]`` as the CLI's ``NAME=VALUE`` strings (each item's
    syntax is checked against the model by ``models.inputs``)."""
    if isinstance(value, Mapping):
        return tuple(f"{k}={v}" for k, v in value.items())
    # A string alone is refused too: read as a list it would be its characters.
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise GeroError(f"{keyword}: expected NAME=VALUE items or a mapping, got {value!r}")
    items = tuple(value)
    bad = [v for v in items if not isinstance(v, str) or "=" not in v]
    if bad:
        raise GeroError(f"{keyword}: expected NAME=VALUE items or a mapping, got {bad[0]!r}")
    return items


def _tolerance(keyword: str, value: Any) -> Mapping[str, object] | None:
    """``{"float16": 1e-2}`` or the CLI's ``["float16=1e-2"]``."""
    if value is None or isinstance(value, Mapping):
        return value
    return parse_items(keyword, _names(keyword, value))


def _workers(keyword: str, value: Any) -> Any:
    return (os.cpu_count() or 1) if value is None else value


def _flag(keyword: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise GeroError(f"{keyword} must be True or False, got {value!r}")
    return value


def _checks(keyword: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, bool):
        raise GeroError(f"{keyword} must be True or False, got {value!r}")
    return ("contracts", "variants") if value else ()


_FIELD_DEFAULT: Any = object()


@dataclass(frozen=True)
class Option:
    """How one keyword of ``gero.run`` reaches the ``RunRequest``."""

    flag: str | None
    """The ``gero run`` flag that sets it (None: the command fills it itself)."""
    read: Callable[[str, Any], Any] = _as_given
    """(keyword, value) -> the field's value, or one sentence naming the keyword."""
    into: str | None = None
    """The field it fills when its name is not the keyword's. A keyword named as a
    ``ModelOptions`` field fills that field; ``rtol`` and ``atol`` fill ``tolerances``."""
    default: Any = _FIELD_DEFAULT
    """The keyword's default, read like a value given, where it is not the field's."""
    on_resume: bool = False
    """A resumed run takes it too (where the run is and how it runs); every other option
    is the run's own, and ``resume`` refuses it."""


class RunKeywords(TypedDict, total=False):
    """The keywords of :func:`gero.run` (and :func:`gero.api.request`): each is the
    ``gero run`` flag its annotation names, and defaults to that flag's default."""

    suite: Annotated[str, Option("--suite", _text)]
    """synthetic (gero's operator suite, the default), onnx-backend, models or all; with
    ``models`` and the default suite, only the models run."""
    models: Annotated[Sequence[PathLike] | PathLike, Option("--model", _models)]
    """ONNX models to test."""
    ops: Annotated[Sequence[str], Option("--ops", _name_list)]
    """Operators or entry names."""
    dtypes: Annotated[Sequence[str], Option("--dtypes", _name_list)]
    """From float16, float32, float64."""
    data_dir: Annotated[PathLike | None,
                        Option("--data-dir", _data_root, into="data_root", default=None,
                               on_resume=True)]
    """The data root (default: ``$GERO_DATA_DIR`` or ``./data``)."""
    run_id: Annotated[str | None, Option("--run-id", _text)]
    """The new run's id (default: date, time and a random suffix)."""
    jobs: Annotated[int | None, Option("--jobs", _workers, default=None, on_resume=True)]
    """Worker processes at most (default: the CPU count)."""
    threads: Annotated[int, Option("--threads")]
    """ONNX Runtime intra-op threads."""
    repeats: Annotated[int, Option("--repeats")]
    """Timed runs per path."""
    seed: Annotated[int, Option("--seed")]
    """Seed of the input generators."""
    rtol: Annotated[Mapping[str, float] | Iterable[str] | None, Option("--rtol", _tolerance)]
    """Relative tolerance by dtype, ``{"float16": 1e-2}`` or ``["float16=1e-2"]``."""
    atol: Annotated[Mapping[str, float] | Iterable[str] | None, Option("--atol", _tolerance)]
    """Absolute tolerance by dtype, like ``rtol``."""
    dims: Annotated[Mapping[str, int] | Iterable[str], Option("--dim", _pairs)]
    """Dynamic dimensions of the models' inputs by dim_param or ``INPUT[AXIS]``: a mapping
    or the CLI's ``NAME=VALUE`` strings (so are the other name-to-value options)."""
    input_shapes: Annotated[Mapping[str, str] | Iterable[str], Option("--input", _pairs)]
    """Whole shape of an input, ``"1,3,48,192"`` (``""``: a scalar)."""
    input_ranges: Annotated[Mapping[str, str] | Iterable[str],
                            Option("--input-range", _pairs)]
    """Uniform draws in ``"LO,HI"`` for an input."""
    input_values: Annotated[Mapping[str, float] | Iterable[str],
                            Option("--input-value", _pairs)]
    """A constant for an input."""
    inputs_file: Annotated[PathLike | None, Option("--inputs", _path)]
    """An ``.npz`` of real input arrays by input name."""
    task: Annotated[str | None, Option("--task", _text)]
    """The model's task, e.g. classifier (adds the decision metric)."""
    variants: Annotated[Sequence[str], Option("--variants", _names)]
    """Variants to build and gate: int8-dynamic, int8-static, fp16."""
    output_kinds: Annotated[Mapping[str, str] | Iterable[str],
                            Option("--output-kind", _pairs)]
    """Kind of an output: dense, confidence, rotation, translation or keypoints."""
    calibration_file: Annotated[PathLike | None, Option("--calibration", _path)]
    """An ``.npz`` of calibration arrays for int8-static, by input name."""
    decision_axes: Annotated[Mapping[str, int] | Iterable[str],
                             Option("--decision-axis", _pairs)]
    """Class axis of an output for its cosine and decisions (default: the last)."""
    backends: Annotated[Sequence[str] | None, Option("--backends", _runtimes, default=None)]
    """Runtimes under test (default None: every installed one)."""
    timeout: Annotated[float, Option("--timeout", into="timeout_s")]
    """Seconds per operator case, and for judging a model case once its paths ran."""
    limit: Annotated[int | None, Option("--limit")]
    """Run only the first N cases."""
    contracts: Annotated[bool, Option("--no-contracts", _checks, into="checks")]
    """False skips the contracts and the variants."""
    command_line: Annotated[str, Option(None, _text, on_resume=True)]
    """What the run record says started it (default: this call)."""
    executor: Annotated[str, Option("--executor", _text, on_resume=True)]
    """local (``jobs`` worker processes here) or dask (a Dask distributed cluster; needs
    ``pip install 'gero[dask]'``)."""
    scheduler: Annotated[str | None, Option("--scheduler", _text, on_resume=True)]
    """The Dask scheduler, ``tcp://HOST:PORT`` (default: ``$GERO_DASK_SCHEDULER``)."""
    max_tensor_mb: Annotated[float, Option("--max-tensor-mb")]
    """Largest tensor a case may make, MiB."""
    max_evidence_mb: Annotated[float, Option("--max-evidence-mb")]
    """Tensors one case keeps on disk, MiB."""
    path_budget: Annotated[float, Option("--path-budget", into="path_budget_s")]
    """Seconds each path of a model case may take."""
    skip_paths: Annotated[Sequence[str], Option("--skip-path", _names)]
    """Runtime settings not to run, ``"tract:unoptimized"``."""
    paths: Annotated[str, Option("--paths", _text)]
    """Which settings a model case runs: ``"needed"`` (those that can change or explain a
    verdict) or ``"all"``."""
    reuse: Annotated[bool, Option("--no-reuse", _flag, on_resume=True)]
    """False computes every path, reusing no outputs an earlier run kept."""


@functools.cache
def run_options() -> dict[str, Option]:
    """Each keyword of ``RunKeywords`` and its ``Option``, in their declared order."""
    hints = get_type_hints(RunKeywords, include_extras=True)
    return {name: next(m for m in hint.__metadata__ if isinstance(m, Option))
            for name, hint in hints.items()}


def request_from_keywords(keywords: Mapping[str, Any]) -> RunRequest:
    """The request that ``gero.run``'s keywords ask for: each read once by its ``Option``
    (a value of the wrong kind is one sentence naming the keyword), then checked once as
    the ``RunRequest`` is made."""
    options = run_options()
    unknown = [k for k in keywords if k not in options]
    if unknown:
        raise GeroError(f"unknown option {unknown[0]!r}; the options are "
                        f"{', '.join(options)}")
    model_fields = {f.name for f in fields(ModelOptions)}
    values: dict[str, Any] = {}
    model: dict[str, Any] = {}
    tolerances: dict[str, Any] = {}
    given = {**{k: o.default for k, o in options.items() if o.default is not _FIELD_DEFAULT},
             **keywords}
    for keyword, value in given.items():
        option = options[keyword]
        value = option.read(keyword, value)
        if keyword in model_fields:
            model[keyword] = value
        elif keyword in ("rtol", "atol"):
            tolerances[keyword] = value
        else:
            values[option.into or keyword] = value
    return RunRequest(**values, model_options=ModelOptions(**model),
                      tolerances=Tolerances.with_overrides(**tolerances))
