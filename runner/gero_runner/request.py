"""What a run is asked to do, checked when it is made: a leaf every layer may import.

The CLI builds a ``RunRequest`` from its flags; a script builds one directly. Either way a
bad value is refused here with one sentence naming it, so ``threads=0`` from Python is
the same error as ``--threads 0``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from gero_runner.errors import GeroError
from gero_runner.tolerances import DEFAULTS, FLOAT_DTYPES, Tolerances

DEFAULT_TIMEOUT_S = 120.0
MAX_SEED = 2**32 - 1
"""The largest seed: what every input generator takes (and a Parquet int64 holds)."""
DEFAULT_PATH_BUDGET_S = 60.0
"""Seconds each path of a model case may take (``--path-budget``): a runtime setting on the
model, on a variant or on the contract graphs, the ReferenceEvaluator, the float64 shadow, a
variant's build, a runtime's noise-floor runs."""
EXECUTORS = ("local", "dask")
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
