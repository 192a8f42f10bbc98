"""A run: collect cases from a suite, evaluate them in workers, store rows and the record."""

from __future__ import annotations

import importlib
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa

from gero_runner.cases.base import CaseInstance
from gero_runner.errors import GeroError
from gero_runner.execution.evaluate import RunSettings
from gero_runner.execution.pool import DEFAULT_TIMEOUT_S, Outcome, run_cases
from gero_runner.schema import OBSERVATION_SCHEMA, RESULT_CLASSES, SIGHTING_SCHEMA, RunRecord
from gero_runner.storage.store import (
    DataRoot,
    batch_from_bytes,
    new_run_id,
    rows_to_batch,
    with_constants,
)
from gero_runner.tolerances import ToleranceTable

# Suites by name: "module:function" returning the cases of a request (imported lazily).
SUITES: dict[str, str] = {
    "synthetic": "gero_runner.cases.synthetic.registry:cases_for_request",
    "onnx-backend": "gero_runner.cases.onnx_backend:cases_for_request",
    "models": "gero_runner.cases.shipped_models:cases_for_request",
}


@dataclass
class RunRequest:
    """What the user asked for: which cases, where to store them, with which settings."""

    suite: str = "synthetic"
    data_root: Path = Path("data")
    ops: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    model_options: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    jobs: int = 1
    threads: int = 1
    repeats: int = 5
    seed: int = 0
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    checks: tuple[str, ...] = ("contracts", "variants")
    command_line: str = ""
    limit: int | None = None
    """Run only the first N cases (for quick looks and tests)."""


def suite_names() -> list[str]:
    return [*SUITES, "all"]


def collect_cases(request: RunRequest) -> list[CaseInstance]:
    """Every case of the requested suite(s) and user models, in a stable order."""
    if request.suite not in suite_names():
        raise GeroError(f"unknown suite {request.suite!r}; choose from {', '.join(suite_names())}")
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


def execute(request: RunRequest,
            progress: Callable[[int, int], None] | None = None,
            warn: Callable[[str], None] | None = None) -> RunRecord:
    """Run the request into its data root; on Ctrl-C, keep what finished and re-raise."""
    started = datetime.now(UTC)
    wall_start = time.perf_counter()
    root = DataRoot(request.data_root)
    run_id = request.run_id or new_run_id(started)
    if run_id in root.run_ids():
        raise GeroError(f"run {run_id!r} already exists in {root.path}; choose another --run-id")
    cases = collect_cases(request)
    if not cases:
        raise GeroError("no cases selected: check --suite, --ops, --dtypes and --model")
    table = ToleranceTable(request.tolerances)
    settings = RunSettings(
        data_root=str(request.data_root), threads=request.threads, repeats=request.repeats,
        tolerances={d: (t["rtol"], t["atol"]) for d, t in table.as_dict().items()},
        checks=model_checks(request),
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
    record = store_results(request, root, run_id, started, wall_start, status, results, table,
                           warn)
    if status == "interrupted":
        raise KeyboardInterrupt(record)
    return record


def store_results(request: RunRequest, root: DataRoot, run_id: str, started: datetime,
                  wall_start: float, status: str, results: dict[int, Outcome],
                  table: ToleranceTable,
                  warn: Callable[[str], None] | None) -> RunRecord:
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
        status=status, suite=request.suite, command_line=request.command_line,
        seed=request.seed, jobs=request.jobs, threads=request.threads, cpu_model=cpu_model(),
        python_version=sys.version.split()[0], numpy_version=_version("numpy"),
        onnx_version=_version("onnx"), onnxruntime_version=_version("onnxruntime"),
        tolerances=table.as_dict(), case_count=len(results),
        observation_count=sightings.num_rows, new_observation_count=observations.num_rows,
        counts=counts, wall_seconds=time.perf_counter() - wall_start,
        backend_seconds=backend_seconds, evidence_seconds=evidence_seconds,
        store_seconds=time.perf_counter() - store_start, case_seconds=case_seconds,
    )
    root.write_run(record, observations, sightings)
    return record
