"""A run: collect cases from a suite, evaluate them in workers, store rows and the record."""

from __future__ import annotations

import errno
import importlib
import platform
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from gero_runner import backends
from gero_runner.case import CaseInstance
from gero_runner.checks.task import case_task
from gero_runner.errors import GeroError
from gero_runner.execution.context import CaseResult, RunSettings
from gero_runner.execution.paths import check_skip_paths, path_table_here
from gero_runner.execution.plan import Activity
from gero_runner.execution.pool import Outcome, run_cases
from gero_runner.request import SUITES, ModelOptions, RunRequest, suite_names
from gero_runner.schema import RunRecord
from gero_runner.storage.index import is_plain_name
from gero_runner.storage.run_writer import RunWriter
from gero_runner.storage.runs import resolve_run
from gero_runner.storage.store import DataRoot, batch_from_bytes, new_run_id, rows_to_batch
from gero_runner.tolerances import Tolerances

if TYPE_CHECKING:  # imported when a run asks for Dask (an optional extra)
    from gero_runner.execution.cluster import DaskCluster

# The request types live in a leaf module (the case modules import them); a run is asked for
# from here.
__all__ = ["DiskFull", "LostCases", "ModelOptions", "RunRequest", "allocate_run_id",
           "collect_cases", "execute", "store_results", "suite_names"]

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
    """The request's check families, plus the model-level family for model suites, and
    the releases check when a runtime is named by release (``RUNTIME==VERSION``)."""
    checks = request.checks
    if (request.suite in ("models", "all") or request.models) and "model" not in checks:
        checks = (*checks, "model")
    named = request.backends or ()
    if any(backends.release_of(name) for name in named) and "releases" not in checks:
        checks = (*checks, "releases")
    return checks


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


class DiskFull(GeroError):
    """The disk filled up: the run kept what it saved before, and says how to resume."""

    exit_code = 1


class LostCases(GeroError):
    """The executor ended with cases asked for and no outcome recorded (a bug of gero's: a
    crashed worker's case is an ``execution`` row): the run is kept as interrupted, so
    ``--resume`` runs those cases again, and this says which they are."""

    exit_code = 1


def resumable_run(root: DataRoot, given: str) -> str:
    """The run ``--resume`` names: a run id of this data root, or a unique prefix of one
    (never a path: it would resume, and write, a directory outside the root)."""
    check_resume_name(given, root.path)
    return resolve_run(root.path, given, root.run_ids())


def check_resume_name(given: object, data_root: Path | None = None) -> None:
    """``--resume`` takes a run id (or the start of one), never a path."""
    if not isinstance(given, str) or not is_plain_name(given):
        where = f" of {data_root}" if data_root is not None else ""
        raise GeroError(f"resume (--resume) {given!r}: give a run id{where} (or the start of "
                        "one), not a path")


def _versions_now(runtimes: tuple[str, ...]) -> dict[str, str]:
    return {"gero": _version("gero"), "onnx": _version("onnx"),
            "onnxruntime": _version("onnxruntime"),
            **{name: backends.get(name).version() for name in (*runtimes, backends.REFERENCE)}}


def _check_versions(run_id: str, fields: dict[str, Any], runtimes: tuple[str, ...],
                    warn: Callable[[str], None] | None) -> None:
    """A run is finished by the versions that started it: its observations' ids and
    results depend on them (a mix would read as one run of one version)."""
    recorded = {"gero": fields.get("gero_version"), "onnx": fields.get("onnx_version"),
                "onnxruntime": fields.get("onnxruntime_version")}
    if isinstance(fields.get("backends"), dict):
        recorded.update(fields["backends"])
    now = _versions_now(runtimes)
    changed = [f"{name} {recorded[name]} (now {now[name]})" for name in now
               if isinstance(recorded.get(name), str) and recorded[name] != now[name]]
    if changed:
        raise GeroError(f"run {run_id} was started with {', '.join(changed)}: finish it "
                        "with those versions, or start a new run")
    if not isinstance(recorded["gero"], str) and warn is not None:
        warn(f"run {run_id} records no gero version (a gero before 0.1 started it); "
             f"resuming it with gero {now['gero']}")


def request_to_json(request: RunRequest) -> dict[str, Any]:
    """What ``--resume`` needs to collect the same cases again (model paths made absolute)."""
    values = asdict(request)
    values["data_root"] = str(request.data_root)
    values["models"] = [str(Path(m).resolve()) for m in request.models]
    values["checks"] = list(request.checks)
    values["backends"] = None if request.backends is None else list(request.backends)
    values["skip_paths"] = list(request.skip_paths)
    values["tolerances"] = request.tolerances.as_dict()
    values["model_options"] = {k: list(v) if isinstance(v, tuple) else v
                               for k, v in asdict(request.model_options).items()}
    return values


def request_from_json(values: dict[str, Any], data_root: Path, jobs: int,
                      executor: str = "local", scheduler: str | None = None) -> RunRequest:
    """The stored request, into ``data_root`` on this invocation's executor (``jobs``
    workers here, or the Dask cluster at ``scheduler``)."""
    known = {f.name for f in fields(RunRequest)}
    values = {k: v for k, v in values.items() if k in known}
    options = values.get("model_options") or {}
    option_names = {f.name for f in fields(ModelOptions)}
    option_values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                      for k, v in options.items() if k in option_names}
    values["model_options"] = ModelOptions(**option_values)
    values["checks"] = tuple(values.get("checks", ()))
    if isinstance(values.get("backends"), list):
        values["backends"] = tuple(values["backends"])
    values["skip_paths"] = tuple(values.get("skip_paths", ()))
    values["tolerances"] = Tolerances.from_dict(values.get("tolerances") or {})
    values["run_id"] = None
    return RunRequest(**{**values, "data_root": data_root, "jobs": jobs,
                         "executor": executor, "scheduler": scheduler})


def _record_fields(request: RunRequest, run_id: str, started: datetime,
                   runtimes: tuple[str, ...]) -> dict[str, Any]:
    return _fixed_fields(run_id, started, suite=recorded_suite(request),
                         command_line=request.command_line, seed=request.seed,
                         jobs=request.jobs, threads=request.threads,
                         tolerances=request.tolerances,
                         models=[str(Path(m).resolve()) for m in request.models],
                         runtimes=runtimes)


def _fixed_fields(run_id: str, started: datetime, *, suite: str, command_line: str, seed: int,
                  jobs: int, threads: int, tolerances: Tolerances,
                  models: list[str], runtimes: tuple[str, ...]) -> dict[str, Any]:
    return dict(
        run_id=run_id, started_at=started.isoformat(), suite=suite, command_line=command_line,
        seed=seed, jobs=jobs, threads=threads, cpu_model=cpu_model(),
        python_version=sys.version.split()[0], numpy_version=_version("numpy"),
        onnx_version=_version("onnx"), onnxruntime_version=_version("onnxruntime"),
        tolerances=tolerances.as_dict(), models=models, gero_version=_version("gero"),
        backends={name: backends.get(name).version()
                  for name in (*runtimes, backends.REFERENCE)})


def execute(request: RunRequest,
            progress: Callable[[int, int], None] | None = None,
            warn: Callable[[str], None] | None = None,
            resume: str | None = None,
            activity: Callable[[Activity], None] | None = None) -> RunRecord:
    """Run the request into its data root, saving finished cases as it goes; its record.

    Ctrl-C stops the run but keeps what finished: the record then has status
    ``interrupted`` (and is returned like any other). With ``resume`` (a run id), finish
    that interrupted run instead: its stored request is collected again and the cases it
    finished are not run twice. A full disk raises ``DiskFull`` after keeping what it can.
    With ``request.executor == "dask"`` the cases run on that Dask cluster (connected to
    before anything is written). ``activity`` is told about once a second what runs
    (local runs).
    """
    if request.executor != "dask":
        return _execute(request, progress, warn, resume, None, activity)
    from gero_runner.execution.cluster import DaskCluster

    with DaskCluster(request.scheduler) as dask:
        return _execute(request, progress, warn, resume, dask)


def _execute(request: RunRequest, progress: Callable[[int, int], None] | None,
             warn: Callable[[str], None] | None, resume: str | None,
             dask: DaskCluster | None,
             activity: Callable[[Activity], None] | None = None) -> RunRecord:
    started = datetime.now(UTC)
    root = DataRoot(request.data_root)
    if resume is not None:
        resume = resumable_run(root, resume)
        writer, stored = RunWriter.resume(root, resume, warn)
        try:
            request = replace(request_from_json(stored, request.data_root, jobs=request.jobs,
                                                executor=request.executor,
                                                scheduler=request.scheduler),
                              reuse=request.reuse)  # how this invocation runs
        except (TypeError, ValueError, IndexError, GeroError) as e:
            writer.close()
            raise GeroError(f"run {resume}: its stored request is unusable ({e})") from e
    else:
        run_id = allocate_run_id(root, request.run_id, started)
    try:
        runtimes = backends.select(request.backends)
        if resume is not None:
            _check_versions(resume, writer.fields, runtimes, warn)
        if request.skip_paths:  # the runtimes' settings, asked in a child
            check_skip_paths(tuple(request.skip_paths), path_table_here(RunSettings(
                data_root="", backends=runtimes, threads=request.threads)).every)
    except BaseException:
        if resume is not None:
            writer.close()
        raise
    if dask is not None:
        try:
            dask.check_workers(runtimes)
        except GeroError:
            if resume is not None:
                writer.close()
            raise
    cases = collect_cases(request)
    if not cases and resume is None:
        raise GeroError("no cases selected: check --suite, --ops, --dtypes and --model")
    if warn is not None:
        for case in cases:
            for message in case.warnings:
                warn(message)
    if resume is None:
        writer = RunWriter.create(root, run_id, _record_fields(request, run_id, started,
                                                                   runtimes),
                                  request_to_json(request), warn)
    todo = _unfinished(cases, writer.case_ids)
    settings = RunSettings(
        data_root=str(request.data_root), threads=request.threads, repeats=request.repeats,
        tolerances=request.tolerances,
        checks=model_checks(request), backends=runtimes,
        max_tensor_bytes=int(request.max_tensor_mb * 2**20),
        max_evidence_bytes=int(request.max_evidence_mb * 2**20),
        skip_paths=tuple(request.skip_paths),
        # A Dask worker may not see this data root: it computes every path.
        reuse_root=str(request.data_root) if request.reuse and dask is None else "",
    )
    # Each path of a model case under the path budget, the settings --paths asks for: given
    # to the case's plan, once.
    task = case_task(request.path_budget_s, request.paths)
    status = "complete"
    recorded: set[int] = set()
    try:
        for outcome in (
                run_cases([cases[i] for i in todo], settings, jobs=request.jobs,
                          timeout_s=request.timeout_s, tick=writer.save_if_due,
                          task=task, watch=activity)
                if dask is None else
                dask.run_cases([cases[i] for i in todo], settings, request.timeout_s,
                               tick=writer.save_if_due, warn=warn, task=task)):
            result = outcome.result
            position = todo[outcome.index]
            recorded.add(position)
            batch = _batch(result)
            writer.add(position, cases[position].case_id, batch,
                       result.backend_seconds, result.evidence_seconds, result.total_seconds)
            if warn is not None:
                for note in build_notes(batch):
                    warn(f"{cases[position].op_type}: {note}")
            if progress is not None:
                progress(writer.case_count, len(cases))
            writer.save_if_due()
    except KeyboardInterrupt:
        status = "interrupted"
    except OSError as e:
        if e.errno != errno.ENOSPC:
            writer.close()
            raise
        raise _disk_full(writer, e) from None
    except GeroError as e:  # the executor stopped (a Dask cluster gone): keep what finished
        raise _stopped(writer, e) from None
    except BaseException:
        writer.close()
        raise
    # The executor's end is checked against the cases asked for: a case with no outcome
    # (a plan that never assembled its result) was once a silent "complete" run.
    lost = [i for i in todo if i not in recorded] if status == "complete" else []
    if lost:  # kept as interrupted: --resume runs the cases not recorded
        status = "interrupted"
    try:
        record = writer.finish(status)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise _disk_full(writer, e) from None
    if lost:
        raise _lost(writer, [cases[i].case_id for i in lost])
    return record


def _lost(writer: RunWriter, case_ids: list[str]) -> LostCases:
    """One sentence naming the cases the run asked for and never recorded."""
    shown = ", ".join(case_ids[:5]) + (f" and {len(case_ids) - 5} more" if len(case_ids) > 5
                                       else "")
    return LostCases(
        f"gero lost {_plural(len(case_ids), 'case')} ({shown}): no outcome was recorded "
        f"(the executor ended without one, a bug of gero's); run {writer.run_id} keeps the "
        f"{_plural(writer.saved_cases, 'case')} it finished: run the lost ones with "
        f"`gero run --resume {writer.run_id}`")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _batch(result: CaseResult) -> pa.RecordBatch:
    return rows_to_batch(result.rows) if result.batch is None else batch_from_bytes(result.batch)


BUILD_NOTE = ":build-note"
"""The check suffix of a variant builder's warning (``checks.model``: a note, no verdict)."""


def build_notes(batch: pa.RecordBatch) -> list[str]:
    """The variant builders' warnings among a case's rows, printed as the run goes (a
    tensor quantised over a near-FLT_MAX range)."""
    checks = batch.column("check").to_pylist()
    notes = batch.column("note").to_pylist()
    return [n for c, n in zip(checks, notes, strict=True) if c.endswith(BUILD_NOTE) and n]


def _unfinished(cases: list[CaseInstance], finished: list[str]) -> list[int]:
    """Positions of the cases not yet finished (a case id finished twice skips two cases)."""
    left = Counter(finished)
    todo = []
    for i, case in enumerate(cases):
        if left[case.case_id] > 0:
            left[case.case_id] -= 1
        else:
            todo.append(i)
    return todo


def _disk_full(writer: RunWriter, error: OSError) -> DiskFull:
    """Keep what can be kept on a full disk, and say what that is."""
    try:
        writer.finish("interrupted")
    except OSError:
        writer.close()  # the record on disk still says running: readers show it interrupted
    where = f" ({error.filename})" if error.filename else ""
    return DiskFull(
        f"the disk is full{where}: run {writer.run_id} keeps the {writer.saved_cases} cases it "
        f"saved before; free some space and finish it with `gero run --resume {writer.run_id}`")


def _stopped(writer: RunWriter, error: GeroError) -> GeroError:
    """A last save of what finished before ``error`` stopped the run, and one sentence."""
    try:
        writer.finish("interrupted")
    except (OSError, GeroError):
        writer.close()
    return GeroError(f"{error}; run {writer.run_id} keeps the {writer.saved_cases} cases it "
                     f"finished: finish it with `gero run --resume {writer.run_id}`")


def store_results(root: DataRoot, run_id: str, *, suite: str, command_line: str, seed: int,
                  jobs: int, threads: int, started: datetime, status: str,
                  results: dict[int, Outcome], tolerances: Tolerances,
                  warn: Callable[[str], None] | None,
                  models: list[str] | None = None,
                  runtimes: tuple[str, ...] = ("onnxruntime",)) -> RunRecord:
    """Store finished outcomes as a new run in one go (``gero parity``'s path).

    Rows are taken in case order, so the stored tables do not depend on the worker count.
    """
    writer = RunWriter.create(
        root, run_id, _fixed_fields(run_id, started, suite=suite, command_line=command_line,
                                    seed=seed, jobs=jobs, threads=threads,
                                    tolerances=tolerances, models=models or [],
                                    runtimes=runtimes),
        None, warn)
    try:
        for index in sorted(results):
            result = results[index].result
            batch = _batch(result)
            case_id = str(batch.column("case_id")[0]) if batch.num_rows else f"case {index}"
            writer.add(index, case_id, batch, result.backend_seconds,
                       result.evidence_seconds, result.total_seconds)
    except BaseException:
        writer.close()
        raise
    return writer.finish(status)
