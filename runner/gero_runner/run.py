"""A run: collect cases from a suite, evaluate them in workers, store rows and the record."""

from __future__ import annotations

import importlib
import platform
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import pyarrow as pa

from gero_runner import backends
from gero_runner.cases.base import CaseInstance
from gero_runner.errors import GeroError
from gero_runner.execution.evaluate import RunSettings
from gero_runner.execution.pool import Outcome, run_cases
from gero_runner.request import SUITES, ModelOptions, RunRequest, suite_names
from gero_runner.schema import OBSERVATION_SCHEMA, RESULT_CLASSES, SIGHTING_SCHEMA, RunRecord
from gero_runner.storage.store import (
    DataRoot,
    batch_from_bytes,
    new_run_id,
    rows_to_batch,
    with_constants,
)
from gero_runner.tolerances import ToleranceTable

# The request types live in a leaf module (the case modules import them); a run is asked for
# from here.
__all__ = ["ModelOptions", "RunRequest", "allocate_run_id", "collect_cases", "execute",
           "store_results", "suite_names"]

def collect_cases(request: RunRequest) -> list[CaseInstance]:
    """Every case of the requested suite(s) and user models, in a stable order."""
    names = list(SUITES) if request.suite == "all" else [request.suite]
    if request.models and request.suite == "synthetic" and not request.ops:
        names = []  # `gero run --model X` runs the user's models only
    cases: list[CaseInstance] = []
    for name in names:
        module_name, _, function = SUITES[name].partition(":")
        cases += getattr(importlib.import_module(module_name), function)(request)
    if request.models:
        from gero_runner.cases.user_models import cases_for_request as user_cases

        cases += user_cases(request)
    if request.limit is not None:
        cases = cases[: request.limit]
    return cases


def recorded_suite(request: RunRequest) -> str:
    """The suite a run record names: ``model`` when only the user's models ran, a suite
    and ``model`` joined by '+' when both did."""
    if not request.models:
        return request.suite
    if request.suite == "synthetic" and not request.ops:
        return "model"
    return f"{request.suite}+model"


def model_checks(request: RunRequest) -> tuple[str, ...]:
    """The request's check families, plus the model-level family for model suites."""
    if (request.suite in ("models", "all") or request.models) and "model" not in request.checks:
        return (*request.checks, "model")
    return request.checks


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def allocate_run_id(root: DataRoot, requested: str | None, started: datetime) -> str:
    """The requested run id, or a new one from the start time; never one that exists."""
    run_id = requested or new_run_id(started)
    if run_id in root.run_ids():
        raise GeroError(f"run {run_id!r} already exists in {root.path}; choose another --run-id")
    return run_id


def execute(request: RunRequest,
            progress: Callable[[int, int], None] | None = None,
            warn: Callable[[str], None] | None = None) -> RunRecord:
    """Run the request into its data root and return its record.

    Ctrl-C stops the run but keeps what finished: the record then has status
    ``interrupted`` (and is returned like any other).
    """
    started = datetime.now(UTC)
    wall_start = time.perf_counter()
    root = DataRoot(request.data_root)
    run_id = allocate_run_id(root, request.run_id, started)
    runtimes = backends.select(request.backends)
    cases = collect_cases(request)
    if not cases:
        raise GeroError("no cases selected: check --suite, --ops, --dtypes and --model")
    if warn is not None:
        for case in cases:
            for message in case.metadata.get("warnings", []):
                warn(message)
    table = ToleranceTable(request.tolerances)
    settings = RunSettings(
        data_root=str(request.data_root), threads=request.threads, repeats=request.repeats,
        tolerances={d: (t["rtol"], t["atol"]) for d, t in table.as_dict().items()},
        checks=model_checks(request), backends=runtimes,
    )
    results: dict[int, Outcome] = {}
    status = "complete"
    try:
        for outcome in run_cases(cases, settings, jobs=request.jobs, timeout_s=request.timeout_s):
            results[outcome.index] = outcome
            if progress is not None:
                progress(len(results), len(cases))
    except KeyboardInterrupt:
        status = "interrupted"
    return store_results(root, run_id, suite=recorded_suite(request),
                         command_line=request.command_line,
                         seed=request.seed, jobs=request.jobs, threads=request.threads,
                         started=started, wall_start=wall_start, status=status,
                         results=results, table=table, warn=warn,
                         models=[str(Path(m).resolve()) for m in request.models],
                         runtimes=runtimes)


def store_results(root: DataRoot, run_id: str, *, suite: str, command_line: str, seed: int,
                  jobs: int, threads: int, started: datetime, wall_start: float, status: str,
                  results: dict[int, Outcome], table: ToleranceTable,
                  warn: Callable[[str], None] | None,
                  models: list[str] | None = None,
                  runtimes: tuple[str, ...] = ("onnxruntime",)) -> RunRecord:
    """Deduplicate the outcomes' rows against the data root and write the run.

    Rows are taken in case order, so the stored tables do not depend on the worker count.
    """
    now = datetime.now(UTC)
    store_start = time.perf_counter()
    known = root.known_observation_ids(warn)
    parts: list[pa.RecordBatch] = []
    backend_seconds = evidence_seconds = case_seconds = 0.0
    for index in sorted(results):
        result = results[index].result
        backend_seconds += result.backend_seconds
        evidence_seconds += result.evidence_seconds
        case_seconds += result.total_seconds
        parts.append(rows_to_batch(result.rows) if result.batch is None
                     else batch_from_bytes(result.batch))
    # One chunk: filtering 500 small chunks costs ~50 times more than one large one.
    rows = pa.Table.from_batches(parts, schema=OBSERVATION_SCHEMA).combine_chunks()
    first: list[bool] = []  # per row, in case order: first sighting in this run
    new: list[bool] = []  # ... and not yet stored in the data root
    seen: set[str] = set()
    counts = dict.fromkeys(RESULT_CLASSES, 0)
    for oid, result_class in zip(rows.column("observation_id").to_pylist(),
                                 rows.column("result").to_pylist(), strict=True):
        is_first = oid not in seen
        first.append(is_first)
        new.append(is_first and oid not in known)
        if is_first:
            seen.add(oid)
            counts[result_class] += 1
    observations = with_constants(rows.filter(pa.array(new, pa.bool_())),
                                  run_id=run_id, created_at=now)
    sighted = rows.filter(pa.array(first, pa.bool_()))
    sightings = with_constants(
        pa.table({f.name: sighted.column(f.name) if f.name in sighted.column_names else
                  pa.nulls(sighted.num_rows, f.type) for f in SIGHTING_SCHEMA},
                 schema=SIGHTING_SCHEMA),
        run_id=run_id, seen_at=now)
    record = RunRecord(
        run_id=run_id, started_at=started.isoformat(), finished_at=now.isoformat(),
        status=status, suite=suite, command_line=command_line,
        seed=seed, jobs=jobs, threads=threads, cpu_model=cpu_model(),
        python_version=sys.version.split()[0], numpy_version=_version("numpy"),
        onnx_version=_version("onnx"), onnxruntime_version=_version("onnxruntime"),
        tolerances=table.as_dict(), case_count=len(results),
        observation_count=sightings.num_rows, new_observation_count=observations.num_rows,
        counts=counts, wall_seconds=time.perf_counter() - wall_start,
        backend_seconds=backend_seconds, evidence_seconds=evidence_seconds,
        store_seconds=time.perf_counter() - store_start, case_seconds=case_seconds,
        models=list(models or []),
        backends={name: backends.get(name).version()
                  for name in (*runtimes, backends.REFERENCE)},
    )
    root.write_run(record, observations, sightings)
    return record
