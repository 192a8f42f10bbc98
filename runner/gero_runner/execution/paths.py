"""Running a case's paths (each runtime setting, the ReferenceEvaluator, the expected
outputs) and comparing one path with another, row by row."""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.backends import reference
from gero_runner.backends.base import Backend, PathSpec
from gero_runner.case import MODEL_SUITES, CaseInstance
from gero_runner.classify import arbiter, classify, failure_kind
from gero_runner.errors import error_text
from gero_runner.execution.context import NOT_APPLICABLE, CaseContext, PathResult, RunSettings
from gero_runner.facts import failure_cause
from gero_runner.metrics.compare import compare
from gero_runner.metrics.model_level import MODEL_REL_FLOOR
from gero_runner.result_classes import ARBITRATED_CHECKS, LEVELS
from gero_runner.schema import EXECUTION, PASSED, Observation
from gero_runner.storage.budget import oversized_output
from gero_runner.storage.path_outputs import PathOutputs, Stored, path_key
from gero_runner.tolerances import Tolerances


def runtime_specs(settings: RunSettings) -> list[tuple[Backend, PathSpec]]:
    """Every path of the selected runtimes, in display order."""
    return [(backends.get(name), s) for name in settings.backends
            for s in selected_paths(backends.get(name), settings)]


def selected_paths(backend: Backend, settings: RunSettings) -> list[PathSpec]:
    """The runtime's settings that run: those ``settings.levels`` names (all of them when
    it names none), less those ``settings.skip_paths`` drops."""
    every = backend.paths(settings.threads)
    chosen = [s for s in every if s.optimization in settings.levels] or every
    return [s for s in chosen if f"{backend.name}:{s.optimization}" not in settings.skip_paths]


@dataclass(frozen=True)
class PathTable:
    """The selected runtimes' settings: every one (by label), those that run (in display
    order), and each runtime's baseline and first setting (``Backend.model_baseline``)."""

    every: dict[str, tuple[str, ...]]
    specs: tuple[PathSpec, ...]
    baselines: dict[str, tuple[str, str]]


def path_table(settings: RunSettings) -> PathTable:
    every = {name: tuple(s.optimization for s in backends.get(name).paths(settings.threads))
             for name in settings.backends}
    bases = {}
    for name in settings.backends:
        chosen = selected_paths(backends.get(name), settings)
        if chosen:
            bases[name] = (backends.get(name).model_baseline(chosen).name, chosen[0].name)
    return PathTable(every, tuple(s for _, s in runtime_specs(settings)), bases)


@functools.cache
def _table_in_child(backends_: tuple[str, ...], threads: int, levels: tuple[str, ...],
                    skip_paths: tuple[str, ...]) -> PathTable:
    from gero_runner.process.isolate import call_isolated

    settings = RunSettings(data_root="", backends=backends_, threads=threads, levels=levels,
                           skip_paths=skip_paths)
    table: PathTable = call_isolated(path_table, settings, timeout_s=300)
    return table


def path_table_here(settings: RunSettings) -> PathTable:
    """``path_table`` for the process that starts the workers, asked once in a child: a
    runtime's settings may load it (OpenVINO asks its plugin for its default precision),
    and a process that loaded it must not fork workers."""
    return _table_in_child(tuple(settings.backends), settings.threads, tuple(settings.levels),
                           tuple(settings.skip_paths))


def check_skip_paths(skips: tuple[str, ...], every: dict[str, tuple[str, ...]]) -> None:
    """Each ``--skip-path RUNTIME:SETTING`` names a setting of a runtime under test
    (``every``: each one's settings), and leaves that runtime at least one setting (one
    sentence otherwise)."""
    from gero_runner.errors import GeroError

    runtimes = list(every)
    for skip in skips:
        name, _, setting = skip.partition(":")
        if not setting or name not in every:
            raise GeroError(f"--skip-path {skip}: give RUNTIME:SETTING with a runtime under "
                            f"test ({', '.join(runtimes)}), e.g. tract:unoptimized")
        if setting not in every[name]:
            raise GeroError(f"--skip-path {skip}: {name} has no setting {setting!r}; its "
                            f"settings: {', '.join(every[name])}")
    for name, known in every.items():
        if all(f"{name}:{k}" in skips for k in known):
            raise GeroError(f"--skip-path drops every setting of {name}; leave the runtime "
                            f"out with --backends instead")


def path_result(backend: Backend, spec: PathSpec) -> PathResult:
    return PathResult(spec.name, spec.backend, backend.version(), spec.optimization,
                      spec.threads, dict(spec.settings))


@functools.cache
def _code_of(cls: type) -> str:
    try:
        return hashlib.sha256(Path(inspect.getfile(cls)).read_bytes()).hexdigest()
    except (OSError, TypeError):
        return ""


def kept_version(backend: Backend) -> str:
    """What a kept entry of ``backend`` is keyed on besides its settings: the runtime's
    version and the code of its adapter class (one registered from outside gero's tree
    too: a change to it, or to how it reads its settings, computes its paths again)."""
    return f"{backend.version()}/{_code_of(type(backend))}"


def path_outputs(settings: RunSettings) -> PathOutputs | None:
    """Where the run's paths reuse and keep their outputs (None: ``--no-reuse``)."""
    return PathOutputs(settings.reuse_root) if settings.reuse_root else None


def run_path(backend: Backend, spec: PathSpec, case: CaseInstance, repeats: int,
             max_tensor_bytes: int | None = None,
             reuse: PathOutputs | None = None) -> PathResult:
    """Build the session, run it ``repeats`` times and release it, all timed as backend.

    Any failure of the runtime (it does not support the case, raises) is an observation,
    not a crash of the run; so is an output over ``max_tensor_bytes`` (it is not compared).
    Only the first run's outputs are kept: each later run is compared with them at once.

    With ``reuse``, outputs an earlier run kept for the same model, inputs, settings,
    repeats, runtime version and gero code are taken instead of running (the path says
    so), and outputs computed here are kept; a failure is never kept (it may be the
    machine's: a budget, memory)."""
    path = path_result(backend, spec)
    unsupported = backend.supports(case)
    if unsupported is not None:
        path.error = f"not supported: {unsupported}"
        return path
    key = ""
    if reuse is not None:
        start = time.perf_counter()
        key = path_key(case.model, case.inputs, spec.backend, kept_version(backend),
                       spec.optimization, spec.threads, spec.settings, max(1, repeats))
        stored, problem = reuse.load(key)
        path.backend_seconds = time.perf_counter() - start
        if stored is not None:
            path = _reused(path, stored, reuse.relative(key), case, max_tensor_bytes)
            path.kept = (str(reuse.root), key) if path.ok else None
            return path
        path.reuse_problem = problem or ""
    _compute(path, backend, spec, case, repeats, max_tensor_bytes)
    if reuse is not None and path.ok and path.outputs is not None and reuse.store(
            key, Stored(path.outputs, path.median_ms, path.build_ms, path.repeats,
                        path.deterministic)):
        path.kept = (str(reuse.root), key)  # sent on without its arrays (PathResult.kept)
    return path


def kept_runs(reuse: PathOutputs | None, spec: PathSpec, version: str, model: bytes,
              inputs: dict[str, np.ndarray], how: dict[str, Any],
              compute: Callable[[], list[list[np.ndarray]]]) -> list[list[np.ndarray]]:
    """Several runs of a path on inputs ``how`` derives from ``inputs`` (a noise floor's:
    its seed, count, scale and code), reused where a run kept them, else computed (and
    kept). An entry that cannot be used is computed again, as a path's is; nothing of it
    reaches a row but the floor made from the runs, which is the same."""
    if reuse is None:
        return compute()
    key = path_key(model, inputs, spec.backend, version, spec.optimization, spec.threads,
                   {"path": dict(spec.settings), "runs": how}, 1)
    stored, _ = reuse.load(key)
    if (stored is not None and stored.outputs and stored.repeats > 0
            and len(stored.outputs) % stored.repeats == 0):
        size = len(stored.outputs) // stored.repeats
        return [stored.outputs[i:i + size] for i in range(0, len(stored.outputs), size)]
    runs = compute()
    if runs and all(len(r) == len(runs[0]) for r in runs):
        reuse.store(key, Stored([x for r in runs for x in r], math.nan, math.nan, len(runs),
                                True))
    return runs


def _reused(path: PathResult, stored: Stored, relative: str, case: CaseInstance,
            max_tensor_bytes: int | None) -> PathResult:
    if max_tensor_bytes is not None:  # the bound is this run's, not the earlier run's
        path.error = oversized_output(stored.outputs, list(case.expected or {}),
                                      max_tensor_bytes)
        if path.error is not None:
            return path
    path.outputs, path.repeats = stored.outputs, stored.repeats
    path.median_ms, path.build_ms = stored.median_ms, stored.build_ms
    path.deterministic, path.reused = stored.deterministic, relative
    return path


def _compute(path: PathResult, backend: Backend, spec: PathSpec, case: CaseInstance,
             repeats: int, max_tensor_bytes: int | None) -> None:
    note_running(spec.backend, spec.optimization)
    first: list[np.ndarray] | None = None
    times: list[float] = []
    start = time.perf_counter()
    try:
        session = backend.build(case.model, spec.settings)
        path.build_ms = (time.perf_counter() - start) * 1e3
        for _ in range(max(1, repeats)):
            run_start = time.perf_counter()
            outputs = backend.run(session, case.inputs)
            times.append((time.perf_counter() - run_start) * 1e3)
            if first is None:
                first = outputs
                if max_tensor_bytes is not None:
                    path.error = oversized_output(outputs, list(case.expected or {}),
                                                  max_tensor_bytes)
                    if path.error is not None:
                        break
            elif path.deterministic:
                path.deterministic = _identical([first, outputs])
            del outputs
        backend.release(session)
        del session  # released here, so that its teardown is timed with the backend
    except Exception as e:
        path.error = error_text(e)
        return
    finally:
        path.backend_seconds += time.perf_counter() - start
        note_running("")
    if path.error is not None:
        return
    path.median_ms = float(np.median(times))
    path.outputs, path.repeats = first, len(times)


def run_reference(case: CaseInstance, repeats: int,
                  max_tensor_bytes: int | None = None,
                  reuse: PathOutputs | None = None) -> PathResult:
    return run_path(reference.RUNTIME, reference.PATH, case, repeats, max_tensor_bytes, reuse)


def run_corrected_reference(case: CaseInstance, ref: PathResult,
                            runtime_paths: list[PathResult],
                            tolerances: Tolerances,
                            reuse: PathOutputs | None = None) -> PathResult | None:
    """The ReferenceEvaluator with gero's corrections of its known defects, when the graph
    holds an affected operator and the stock evaluator disagrees with a runtime's base
    setting at the run's tolerances (or none ran): then the runtimes are compared with it,
    and if its outputs differ from the stock ones the stock path carries the defects' keys
    (its rows are labelled with them). Where the stock evaluator failed and the corrected
    one runs, the stock path carries the keys too (its failure is the defect's).

    Where every runtime agrees with the stock evaluator, nobody is blamed for a defect and
    the second evaluator run (a minute on a CNN) is skipped."""
    import onnx

    from gero_runner.backends import reference_defects

    if not reference_defects.applicable(onnx.load_from_string(case.model)):
        return None
    if not ref.ok:
        if ref.ran_out or ref.skipped:  # no failure of the graph's to explain
            return None
        explain_reference_failure(case, ref)
        return None
    assert ref.outputs is not None
    # Each runtime's base setting (ORT disable_all, OpenVINO f32, ...): a lower-precision
    # setting disagrees with any reference, defective or not.
    bases: dict[str, PathResult] = {}
    for p in runtime_paths:
        bases.setdefault(p.backend, p)
    ran = [p for p in bases.values() if p.ok and p.outputs is not None]

    def agrees(p: PathResult) -> bool:
        assert p.outputs is not None and ref.outputs is not None
        if len(p.outputs) != len(ref.outputs):
            return False
        for a, r in zip(p.outputs, ref.outputs, strict=True):
            model = case.suite in MODEL_SUITES
            rtol, atol = tolerances.for_case(case.tolerance, str(r.dtype), model=model)
            floor = MODEL_REL_FLOOR if model else 0.0
            if not compare(a, r, rtol, atol, rel_floor=floor).within_tolerance:
                return False
        return True

    if ran and all(agrees(p) for p in ran):
        return None
    return _corrected_differs(case, ref, reuse)


def explain_reference_failure(case: CaseInstance, ref: PathResult) -> None:
    """Where the stock evaluator failed on a graph that holds a defective operator
    (GlobalMaxPool's wrong axes at rank 3 become an AxisError further on) and the corrected
    one runs, the failure is the defect's: the stock path carries the keys of the entries
    that show, and its rows say so. On the model and on each variant file alike."""
    import onnx

    from gero_runner.backends import reference_defects

    if ref.ok or ref.ran_out or ref.skipped:  # no failure of the graph's to explain
        return
    model = onnx.load_from_string(case.model)
    if not reference_defects.applicable(model):
        return
    try:
        ref.known_defects = reference_defects.shown(model, case.inputs)
    except Exception:  # the corrected evaluator fails too: not the defect's failure
        return


def explain_reference_on_variant(case: CaseInstance, ref: PathResult,
                                 reuse: PathOutputs | None = None) -> None:
    """The stock evaluator on a variant file (``case.model``) that holds a defective
    operator: a failure is explained as on the model (``explain_reference_failure``); where
    it ran, the corrected evaluator runs the file too, and if its outputs differ the stock
    path carries the entries that show, so its rows on the file name the defect (PicoDet's
    fp16 and int8-dynamic files keep the BatchNormalization momentum defect: 'the
    ReferenceEvaluator is off' on them was the defect's, unnamed)."""
    import onnx

    from gero_runner.backends import reference_defects

    if not ref.ok:
        explain_reference_failure(case, ref)
        return
    model = onnx.load_from_string(case.model)
    entries = reference_defects.applicable(model)
    if not entries or ref.outputs is None:
        return
    _corrected_differs(case, ref, reuse)


def _corrected_differs(case: CaseInstance, ref: PathResult,
                       reuse: PathOutputs | None = None) -> PathResult | None:
    """The corrected evaluator on the case's graph; where its outputs differ from the stock
    ones (``ref``), the stock path carries the entries that show, and the corrected path
    is returned (None: nothing to correct on these inputs, or the correction failed)."""
    import onnx

    from gero_runner.backends import reference_defects

    path = run_path(reference.CORRECTED_RUNTIME, reference.CORRECTED_PATH, case, 1,
                    reuse=reuse)
    if not path.ok or _identical([ref.outputs or [], path.outputs or []]):
        return None
    model = onnx.load_from_string(case.model)
    entries = reference_defects.applicable(model)
    # Several entries: only those whose defect shows on these inputs are named (a Softmax
    # over its last axis is right at any opset beside a BatchNormalization that is not).
    ref.known_defects = ((entries[0].key,) if len(entries) == 1
                         else _defects_shown(model, case.inputs, entries))
    return path


def _defects_shown(model: Any, feeds: dict[str, np.ndarray], entries: list[Any]
                   ) -> tuple[str, ...]:
    from gero_runner.backends import reference_defects

    try:
        return reference_defects.shown(model, feeds)
    except Exception:
        return tuple(d.key for d in entries)


_running: Callable[[str], None] | None = None
"""Told which path starts (``backend\toptimization``) and when it ends; the worker pool
sets it so that a crash is attributed to the runtime that was running."""


def set_running_hook(hook: Callable[[str], None] | None) -> None:
    global _running
    _running = hook


def note_running(backend: str, optimization: str = "", graph: str = "") -> None:
    """Tell the hook which path starts (``backend`` empty: none runs now) and, on a graph
    other than the case's own, which (``graph``: a crash's row names it)."""
    if _running is not None:
        _running(("\t".join((backend, optimization, graph)) if graph
                  else f"{backend}\t{optimization}") if backend else "")


def running_graph(running: str) -> str:
    """The graph of a running hook's value, '' when the path ran on the case's own."""
    return running.split("\t")[2] if running.count("\t") >= 2 else ""


def _identical(runs: list[list[np.ndarray]]) -> bool:
    """Every run's outputs are bit-identical to the first run's."""
    first = runs[0]
    return all(len(r) == len(first) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for a, b in zip(r, first, strict=True)) for r in runs[1:])


def expected_path(case: CaseInstance) -> PathResult | None:
    if case.expected is None:
        return None
    return PathResult(case.expected_label, case.expected_label, case.expected_version,
                      NOT_APPLICABLE, 0, {}, outputs=list(case.expected.values()), repeats=0)


ARBITRATED = ARBITRATED_CHECKS
"""Checks whose disagreements the case's float64 result arbitrates."""


def compare_paths(ctx: CaseContext, check: str, actual: PathResult, ref: PathResult,
                  reference_name: str | None = None) -> list[Observation]:
    """One row per output: ``actual`` against ``ref``, classified."""
    rows = []
    for j, name in enumerate(ctx.output_names):
        ref_dtype = _dtype_of(ref, j) or _dtype_of(actual, j) or ctx.case.dtype
        rtol, atol = ctx.tolerance(ref_dtype)
        timing = ({"build_ms": round(actual.build_ms, 4)}
                  if math.isfinite(actual.build_ms) else None)
        row = functools.partial(ctx.row, check=check, output_name=name, actual=actual,
                                reference_name=reference_name or ref.backend,
                                reference_version=ref.version,
                                dtype=ref_dtype, rtol=rtol, atol=atol,
                                reference_ms=ref.median_ms, details=timing)
        failed = actual if not actual.ok else ref if not ref.ok else None
        if failed is not None:
            failed_path, cause = failure_cause(failed.name, failed.error or "")
            rows.append(row(cmp=None, result=EXECUTION,
                            reason=f"{failed.name} failed: {failed.error}",
                            failed_path=failed_path, cause=cause, error=failed.error or ""))
            continue
        assert actual.outputs is not None and ref.outputs is not None
        if j >= len(actual.outputs) or j >= len(ref.outputs):
            rows.append(row(cmp=None, result=EXECUTION, reason=f"missing output {name!r}"))
            continue
        a, r = actual.outputs[j], ref.outputs[j]
        cmp = ctx.compare(a, r, rtol, atol)
        result, reason = classify(cmp, rtol, atol)
        side = NOT_APPLICABLE
        if result != PASSED and check in ARBITRATED:
            side = truth_arbiter(ctx, j, a, r, rtol, atol)
        rows.append(row(cmp=cmp, result=result, reason=reason, arbiter=side,
                        failure_kind=failure_kind(cmp),
                        actual_hash=ctx.digest(a), reference_hash=ctx.digest(r),
                        actual_file=actual.files[j], reference_file=ref.files[j]))
    return rows


def level_rows(ctx: CaseContext, runtime_paths: list[PathResult]) -> list[Observation]:
    """``levels``: each setting of a runtime against its base setting (its first path: ONNX
    Runtime's ``disable_all``) on the same inputs, so that a difference made by a graph
    rewrite is its own observation, classified as agreement is. A path that failed already
    has its execution row under ``agreement``."""
    rows = []
    bases: dict[str, PathResult] = {}
    for p in runtime_paths:
        base = bases.setdefault(p.backend, p)
        if p is not base and p.ok and base.ok:
            rows += compare_paths(ctx, LEVELS, p, base, f"{base.backend}:{base.optimization}")
    return rows


def truth_arbiter(ctx: CaseContext, j: int, a: np.ndarray, r: np.ndarray, rtol: float,
                  atol: float) -> str:
    """The side of output ``j``'s disagreement that the case's float64 result sides with,
    at the out-of-tolerance elements; '-' without a float64 result of that shape."""
    exact = ctx.case.expected_exact
    if not exact or j >= len(exact):
        return NOT_APPLICABLE
    return arbiter(a, r, list(exact.values())[j], rtol, atol)


def _dtype_of(path: PathResult, j: int) -> str | None:
    if path.outputs is None or j >= len(path.outputs):
        return None
    return str(path.outputs[j].dtype)


