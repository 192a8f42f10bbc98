"""A parity run: build the module, evaluate each seeded sample, store a gero run.

The run is written exactly like ``gero run`` writes one (``gero_runner.run.store_results``: new
observations, sightings, run.json with suite ``parity``), so summary, export, diff and the
explorer read it unchanged.

PyTorch, the exporter and ONNX Runtime run in ``gero run``'s worker processes
(``execution.pool``), never in this one: the module is built in the worker, each sample is
bounded by ``--timeout``, and a sample whose worker crashes or hangs is an ``execution``
observation naming the stage it was in; the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gero_runner.errors import GeroError
from gero_runner.execution.context import NOT_APPLICABLE, CaseResult
from gero_runner.execution.paths import note_running
from gero_runner.execution.pool import Outcome, Task, run_cases
from gero_runner.metrics.parity import ParityTolerances
from gero_runner.parity.evaluate import (
    PYTORCH,
    SUITE,
    ParitySettings,
    evaluate_sample,
    failed_sample_rows,
)
from gero_runner.parity.export import DEFAULT_OPSET, OPSETS
from gero_runner.parity.module import InputSpec, load_module
from gero_runner.parity.torch_support import require_torch
from gero_runner.request import DEFAULT_TIMEOUT_S, check_timeout
from gero_runner.run import allocate_run_id, store_results
from gero_runner.schema import Observation, RunRecord, observation_from_row
from gero_runner.storage.store import DataRoot, batch_from_bytes
from gero_runner.tolerances import FLOAT_DTYPES, Tolerances


@dataclass
class ParityRequest:
    """What ``gero parity`` was asked to do."""

    module: str
    inputs: list[InputSpec]
    data_root: Path = Path("data")
    checkpoint: Path | None = None
    onnx: Path | None = None
    output_kinds: dict[str, str] = field(default_factory=dict)
    tolerances: ParityTolerances = field(default_factory=ParityTolerances)
    samples: int = 1
    """Seeded input samples fed to both runtimes (``--max-pairs``)."""
    seed: int = 0
    threads: int = 1
    repeats: int = 3
    opset: int = DEFAULT_OPSET
    run_id: str | None = None
    command_line: str = ""
    search_path: Path | None = None
    """Put first on sys.path before importing the module (the CLI passes the cwd)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Per sample: building the module (first sample of a worker), PyTorch, the export and
    every ONNX Runtime level."""


@dataclass(frozen=True)
class ParityWork:
    """What a parity worker needs to build the module and evaluate any sample."""

    module: str
    checkpoint: str | None
    search_path: str | None
    inputs: tuple[InputSpec, ...]
    seed: int
    onnx_model: bytes | None
    settings: ParitySettings


_built: dict[tuple[str, str | None, str | None], Any] = {}
"""The module of this worker process, built for its first sample."""


def _evaluate(sample: int, work: ParityWork) -> CaseResult:
    key = (work.module, work.checkpoint, work.search_path)
    if key not in _built:
        note_running(PYTORCH, NOT_APPLICABLE)  # a factory that hangs or crashes is PyTorch's stage
        require_torch().set_num_threads(work.settings.threads)
        _built[key] = load_module(work.module, None if work.checkpoint is None
                                  else Path(work.checkpoint),
                                  None if work.search_path is None else Path(work.search_path))
        note_running("")
    return evaluate_sample(_built[key], work.module, list(work.inputs), sample,
                           work.seed + sample, work.onnx_model, work.settings)


def _failed(sample: int, work: ParityWork, message: str, running: str) -> list[Observation]:
    return failed_sample_rows(work.module, list(work.inputs), sample, work.seed + sample,
                              work.onnx_model, work.settings, message, running)


PARITY = Task(_evaluate, _failed, refuses=True)
"""A module that does not import or build, or outputs that do not fit the kinds given,
stop the run with their sentence (exit 2), as before any sample ran."""


@dataclass
class ParityResult:
    record: RunRecord
    rows: list[Observation]
    """Every observation of this run (new or seen before), in evaluation order."""


def run_parity(request: ParityRequest,
               warn: Callable[[str], None] | None = None) -> ParityResult:
    """Evaluate every sample and store the run; GeroError on bad input."""

    if request.samples < 1:
        raise GeroError(f"--max-pairs must be at least 1, got {request.samples}")
    if request.opset not in OPSETS:
        raise GeroError(f"--opset {request.opset} is not supported; choose from "
                        f"{', '.join(str(o) for o in OPSETS)}")
    if request.threads < 1 or request.repeats < 1:
        raise GeroError("--threads and --repeats must be at least 1")
    check_timeout(request.timeout_s)
    onnx_model = None
    if request.onnx is not None:
        if not request.onnx.is_file():
            raise GeroError(f"--onnx {request.onnx}: no such file")
        onnx_model = _read_onnx(request.onnx)
    started = datetime.now(UTC)
    root = DataRoot(request.data_root)
    run_id = allocate_run_id(root, request.run_id, started)

    require_torch()  # its absence is said here, not by a worker
    settings = ParitySettings(data_root=str(request.data_root), tolerances=request.tolerances,
                              output_kinds=dict(request.output_kinds), threads=request.threads,
                              repeats=request.repeats, opset=request.opset)
    work = ParityWork(request.module, None if request.checkpoint is None
                      else str(request.checkpoint.resolve()),
                      None if request.search_path is None else str(request.search_path),
                      tuple(request.inputs), request.seed, onnx_model, settings)
    results: dict[int, Outcome] = {}
    for outcome in run_cases(range(request.samples), work, jobs=1,
                             timeout_s=request.timeout_s, task=PARITY):
        batch = outcome.result.batch
        rows = outcome.result.rows if batch is None else [
            observation_from_row(row) for row in batch_from_bytes(batch).to_pylist()]
        results[outcome.index] = Outcome(outcome.index, CaseResult(
            rows, outcome.result.backend_seconds, outcome.result.total_seconds,
            outcome.result.evidence_seconds))

    dtypes = sorted({str(r["dtype"]) for o in results.values() for r in o.result.rows
                     if str(r["dtype"]) in FLOAT_DTYPES})
    tolerances = Tolerances.with_overrides({d: request.tolerances.rtol for d in dtypes},
                                           {d: request.tolerances.atol for d in dtypes})
    record = store_results(root, run_id, suite=SUITE, command_line=request.command_line,
                           seed=request.seed, jobs=1, threads=request.threads,
                           started=started, status="complete",
                           results=results, tolerances=tolerances, warn=warn)
    rows = [r for i in sorted(results) for r in results[i].result.rows]
    return ParityResult(record, rows)


def _read_onnx(path: Path) -> bytes:
    """The model's bytes with any external data inlined (the evidence must be self-contained)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=True)
    except Exception as e:  # onnx raises DecodeError and friends
        raise GeroError(f"--onnx {path}: not a readable ONNX model ({e})") from e
    return model.SerializeToString()
