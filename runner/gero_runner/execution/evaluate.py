"""Evaluate one case: run every path, compare, classify, and keep the evidence.

This runs inside a worker process. It returns typed observation rows (``schema.Observation``,
less run_id and created_at) so the parent only stores them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from gero_runner import backends
from gero_runner.backends import ort, reference
from gero_runner.backends.base import Backend, PathSpec
from gero_runner.cases.base import CaseInstance
from gero_runner.classify import arbiter, classify
from gero_runner.metrics.compare import Comparison, compare
from gero_runner.schema import COLUMN_NAMES, EXECUTION, IDENTITY_COLUMNS, PASSED, Observation
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import row_hash, sha256, tensor_hash, tensors_hash
from gero_runner.tolerances import ToleranceTable

NOT_APPLICABLE = "-"
T = TypeVar("T")
# Built once: json.dumps with options constructs an encoder per call, and rows ask twice each.
_SETTINGS_JSON = json.JSONEncoder(sort_keys=True)
_DETAILS_JSON = json.JSONEncoder(sort_keys=True, default=repr)
METRIC_COLUMNS = tuple(f.name for f in fields(Comparison) if f.name in COLUMN_NAMES)
"""The comparison's figures that rows store as they are (every other field decides the class)."""


@dataclass(frozen=True)
class RunSettings:
    """Everything a worker needs to evaluate cases; identical for every worker of a run."""

    data_root: str
    levels: tuple[str, ...] = ort.LEVEL_NAMES
    """Settings to run, by optimisation label; a runtime none of whose labels is listed here
    runs all its settings (so ONNX Runtime's levels select its paths, OpenVINO's run all)."""
    backends: tuple[str, ...] = (ort.BACKEND,)
    """Runtimes under test; the ReferenceEvaluator runs whatever is listed."""
    threads: int = 1
    repeats: int = 5
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    checks: tuple[str, ...] = ("contracts", "variants")
    """Extra check families to run (see execution.checks); empty for the bare comparison."""


@dataclass
class PathResult:
    """One path's outputs (or its error) for a case."""

    name: str
    backend: str
    version: str
    optimization: str
    threads: int
    settings: dict[str, Any]
    outputs: list[np.ndarray] | None = None
    error: str | None = None
    median_ms: float = math.nan
    build_ms: float = math.nan
    """Building the session (not part of the inference time; recorded as context)."""
    repeats: int = 0
    deterministic: bool = True
    """Every repeated run gave bit-identical outputs."""
    backend_seconds: float = 0.0
    """Time inside the backend: building the session, the timed runs, releasing it."""
    files: list[str] = field(default_factory=list)
    known_defects: tuple[str, ...] = ()
    """Registry keys (backends.reference_defects) of defects this path showed on the case:
    its non-passed rows are labelled with them."""
    _settings_cache: tuple[dict[str, Any], str] | None = field(
        default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.outputs is not None

    @property
    def settings_json(self) -> str:
        """The settings as recorded on rows, encoded once per settings object."""
        cache = self._settings_cache
        if cache is None or cache[0] is not self.settings:
            cache = self._settings_cache = (self.settings, _SETTINGS_JSON.encode(self.settings))
        return cache[1]


@dataclass
class CaseResult:
    rows: list[Observation]
    backend_seconds: float
    total_seconds: float
    evidence_seconds: float = 0.0
    """Writing the evidence directory and hashing the rows' ids (a part of the overhead)."""
    batch: bytes | None = None
    """The rows as an Arrow IPC record batch of the observation schema, when a worker made
    it (``rows`` is then empty): the parent stores them without touching a dict."""


@dataclass
class CaseContext:
    """What check families get: the case, its paths, the evidence writer and row helpers."""

    case: CaseInstance
    settings: RunSettings
    table: ToleranceTable
    writer: EvidenceWriter
    paths: dict[str, PathResult]
    output_names: list[str]
    graph_hash: str
    input_hash: str
    backend_seconds: float = 0.0
    _digests: dict[int, tuple[np.ndarray, str]] = field(default_factory=dict, repr=False)
    _comparisons: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)

    @contextlib.contextmanager
    def backend_time(self) -> Iterator[None]:
        """Time spent inside the block is backend time (building, running, releasing)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.backend_seconds += time.perf_counter() - start

    def digest(self, x: np.ndarray) -> str:
        """``tensor_hash`` of an array of this case, computed once per array (a case's
        outputs and law sides are never modified once made)."""
        hit = self._digests.get(id(x))
        if hit is None:  # the array is kept with its hash, so its id is not reused
            hit = self._digests[id(x)] = (x, tensor_hash(x))
        return hit[1]

    def compare(self, a: np.ndarray, r: np.ndarray, rtol: float, atol: float) -> Comparison:
        """``compare``, once per distinct pair of tensors and tolerance: the ORT levels
        usually agree bit for bit, so most comparisons of a case repeat an earlier one."""
        return self.once(("compare", self.digest(a), self.digest(r), rtol, atol),
                         lambda: compare(a, r, rtol, atol))

    def once(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked for in this case; keys name every
        input by content, so a repeat gives what a fresh computation would."""
        if key not in self._comparisons:
            self._comparisons[key] = compute()
        result: T = self._comparisons[key]
        return result

    @functools.cached_property
    def input_shapes(self) -> str:
        """The case's input shapes as rows record them, e.g. '[2,3];[3]'."""
        return ";".join("[" + ",".join(str(d) for d in x.shape) + "]"
                        for x in self.case.inputs.values())

    def tolerance(self, dtype: str) -> tuple[float, float]:
        if self.case.tolerance is not None and dtype.startswith("float"):
            return self.case.tolerance
        tol = self.table.for_dtype(dtype)
        return tol.rtol, tol.atol

    def row(self, *, check: str, output_name: str, actual: PathResult, reference_name: str,
            reference_version: str, dtype: str, cmp: Comparison | None, rtol: float,
            atol: float, result: str, reason: str, arbiter: str = NOT_APPLICABLE,
            actual_hash: str = "", reference_hash: str = "", actual_file: str = "",
            reference_file: str = "", reference_ms: float = math.nan,
            details: dict[str, Any] | None = None) -> Observation:
        """An observation row of this case (ids added by ``finish_row``); without a
        comparison (a path failed) its metric columns keep the row type's defaults.

        A non-passed row of a path that showed a known ReferenceEvaluator defect on this
        case names the registry entry, in the reason and in the details."""
        if actual.known_defects and result not in (PASSED, EXECUTION):
            from gero_runner.backends.reference_defects import BY_KEY

            entries = [BY_KEY[k] for k in actual.known_defects]
            reason = "; ".join(d.label() for d in entries) + " — " + reason
            details = {**(details or {}), "known_defect": [d.as_dict() for d in entries]}
        c = self.case
        if c.inputs_text:  # what a user model was fed, and why (models.inputs)
            details = {**(details or {}), "inputs": c.inputs_text}
        metrics = {} if cmp is None else {name: getattr(cmp, name) for name in METRIC_COLUMNS}
        return Observation(
            suite=c.suite, case_id=c.case_id, op_type=c.op_type, case_name=c.case_name,
            check=check, dtype=dtype, input_shapes=self.input_shapes, output_name=output_name,
            backend=actual.backend, backend_version=actual.version,
            optimization=actual.optimization, threads=actual.threads,
            reference=reference_name, reference_version=reference_version, rtol=rtol,
            atol=atol, result=result, reason=reason, arbiter=arbiter,
            actual_hash=actual_hash, reference_hash=reference_hash,
            graph_hash=self.graph_hash, input_hash=self.input_hash, seed=c.seed,
            actual_file=actual_file, reference_file=reference_file,
            actual_median_ms=actual.median_ms, reference_median_ms=reference_ms,
            repeats=actual.repeats, session_settings=actual.settings_json,
            details=_DETAILS_JSON.encode(details) if details else "{}", **metrics)


def finish_row(row: Observation, artifact_path: str) -> Observation:
    """The row with its evidence directory and its id (the hash of its identity columns)."""
    return replace(row, artifact_path=artifact_path,
                   observation_id=row_hash(row, IDENTITY_COLUMNS))


def _error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= 2000 else text[:2000] + " …"


def runtime_specs(settings: RunSettings) -> list[tuple[Backend, PathSpec]]:
    """Every path of the selected runtimes, in display order."""
    specs = []
    for name in settings.backends:
        backend = backends.get(name)
        every = backend.paths(settings.threads)
        chosen = [s for s in every if s.optimization in settings.levels]
        specs += [(backend, s) for s in chosen or every]
    return specs


def path_result(backend: Backend, spec: PathSpec) -> PathResult:
    return PathResult(spec.name, spec.backend, backend.version(), spec.optimization,
                      spec.threads, dict(spec.settings))


def run_path(backend: Backend, spec: PathSpec, case: CaseInstance, repeats: int) -> PathResult:
    """Build the session, run it ``repeats`` times and release it, all timed as backend.

    Any failure of the runtime (it does not support the case, raises) is an observation,
    not a crash of the run."""
    path = path_result(backend, spec)
    unsupported = backend.supports(case)
    if unsupported is not None:
        path.error = f"not supported: {unsupported}"
        return path
    if _running is not None:
        _running(f"{spec.backend}\t{spec.optimization}")
    runs, times = [], []
    start = time.perf_counter()
    try:
        session = backend.build(case.model, spec.settings)
        path.build_ms = (time.perf_counter() - start) * 1e3
        for _ in range(max(1, repeats)):
            run_start = time.perf_counter()
            runs.append(backend.run(session, case.inputs))
            times.append((time.perf_counter() - run_start) * 1e3)
        backend.release(session)
        del session  # released here, so that its teardown is timed with the backend
    except Exception as e:
        path.error = _error_text(e)
        return path
    finally:
        path.backend_seconds = time.perf_counter() - start
        if _running is not None:
            _running("")
    path.median_ms = float(np.median(times))
    path.outputs, path.repeats = runs[0], len(runs)
    path.deterministic = _identical(runs)
    return path


def run_reference(case: CaseInstance, repeats: int) -> PathResult:
    return run_path(reference.RUNTIME, reference.PATH, case, repeats)


def run_corrected_reference(case: CaseInstance, ref: PathResult,
                            runtime_paths: list[PathResult]) -> PathResult | None:
    """The ReferenceEvaluator with gero's corrections of its known defects, when the graph
    holds an affected operator and the stock evaluator disagrees with a runtime (or none
    ran): then ORT is compared with it, and if its outputs differ from the stock ones the
    stock path carries the defects' keys (its rows are labelled with them).

    Where every runtime agrees with the stock evaluator, nobody is blamed for a defect and
    the second evaluator run (a minute on a CNN) is skipped."""
    import onnx

    from gero_runner.backends import reference_defects
    from gero_runner.tolerances import ToleranceTable

    if not ref.ok or not reference_defects.applicable(onnx.load_from_string(case.model)):
        return None
    assert ref.outputs is not None
    ran = [p for p in runtime_paths if p.ok and p.outputs is not None]
    table = ToleranceTable()

    def agrees(p: PathResult) -> bool:
        assert p.outputs is not None and ref.outputs is not None
        if len(p.outputs) != len(ref.outputs):
            return False
        for a, r in zip(p.outputs, ref.outputs, strict=True):
            tol = table.for_dtype(str(r.dtype))
            if not compare(a, r, tol.rtol, tol.atol).within_tolerance:
                return False
        return True

    if ran and all(agrees(p) for p in ran):
        return None
    path = run_path(reference.CORRECTED_RUNTIME, reference.CORRECTED_PATH, case, 1)
    if not path.ok or _identical([ref.outputs, path.outputs or []]):
        return None  # nothing to correct on these inputs (or the correction itself failed)
    model = onnx.load_from_string(case.model)
    ref.known_defects = tuple(d.key for d in reference_defects.applicable(model))
    return path


_running: Callable[[str], None] | None = None
"""Told which path starts (``backend\toptimization``) and when it ends; the worker pool
sets it so that a crash is attributed to the runtime that was running."""


def set_running_hook(hook: Callable[[str], None] | None) -> None:
    global _running
    _running = hook


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


ARBITRATED = ("agreement", "levels")
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
            rows.append(row(cmp=None, result=EXECUTION,
                            reason=f"{failed.name} failed: {failed.error}"))
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
            rows += compare_paths(ctx, "levels", p, base, f"{base.backend}:{base.optimization}")
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


def _store_outputs(writer: EvidenceWriter, path: PathResult) -> None:
    if path.outputs is None:
        return
    path.files = [writer.add_array(f"outputs/{path.name}/output_{j}.npy", x)
                  for j, x in enumerate(path.outputs)]


def evaluate_case(case: CaseInstance, settings: RunSettings) -> CaseResult:
    """Every path of one case, every comparison, every extra check, and the evidence."""
    import onnx

    from gero_runner.execution import checks  # check families register themselves there

    start = time.perf_counter()
    if case.unsupported:  # a case source found that gero cannot feed or compare this case
        return CaseResult(execution_rows(case, case.unsupported, unattributed=NOT_APPLICABLE),
                          0.0,
                          time.perf_counter() - start)
    writer = EvidenceWriter()
    model = onnx.load_from_string(case.model)
    output_names = [o.name for o in model.graph.output]
    writer.add_bytes("model.onnx", case.model)
    input_files = {name: writer.add_array(f"inputs/input_{i}.npy", x)
                   for i, (name, x) in enumerate(case.inputs.items())}

    paths: dict[str, PathResult] = {}
    for backend, spec in runtime_specs(settings):
        paths[spec.name] = run_path(backend, spec, case, settings.repeats)
    runtime_paths = list(paths.values())
    # Model cases may ask for fewer reference runs: the evaluator takes seconds on a CNN.
    ref = run_reference(case, case.reference_repeats or settings.repeats)
    paths[ref.name] = ref
    corrected = run_corrected_reference(case, ref, runtime_paths)
    if corrected is not None:
        paths[corrected.name] = corrected
    backend_seconds = sum(p.backend_seconds for p in paths.values())

    expected = expected_path(case)
    if expected is not None:
        paths[expected.name] = expected
    for path in paths.values():
        _store_outputs(writer, path)
    if case.expected_exact:
        for j, x in enumerate(case.expected_exact.values()):
            writer.add_array(f"outputs/{case.expected_label}-exact/output_{j}.npy", x)

    ctx = CaseContext(case, settings, ToleranceTable(settings.tolerances), writer, paths,
                      output_names, sha256(case.model),
                      tensors_hash(case.inputs.values()), backend_seconds)
    rows: list[Observation] = []
    # Each runtime against the ReferenceEvaluator; all against the case's expected outputs.
    # Where the evaluator shows a known defect on this case, the runtimes are compared with
    # the corrected evaluator (none is blamed for the defect) and the stock evaluator's own
    # row shows the defect, labelled.
    if ref.ok:
        for p in runtime_paths:
            rows += compare_paths(ctx, "agreement", p, corrected or ref)
        if corrected is not None:
            rows += compare_paths(ctx, "agreement", ref, corrected)
    else:
        # The reference's failure is its own row under the reference (under `expected`
        # when the case has expected outputs), not one per runtime path.
        for p in runtime_paths:
            if not p.ok:
                rows += compare_paths(ctx, "agreement", p, ref)
        if expected is None and runtime_paths:
            first = [p for p in runtime_paths if p.backend == runtime_paths[0].backend]
            rows += compare_paths(ctx, "agreement", ref, first[-1])
    rows += level_rows(ctx, runtime_paths)
    if expected is not None:
        check = "analytic" if case.expected_label == "numpy-float64" else "expected"
        for p in [*runtime_paths, ref]:
            rows += compare_paths(ctx, check, p, expected)
    for family in settings.checks:
        rows += checks.run_family(family, ctx)

    evidence_start = time.perf_counter()
    reference_outputs = expected or ref
    writer.add_test_data_set(
        list(case.inputs.items()),
        list(zip(output_names, reference_outputs.outputs or [], strict=False)),
    )
    writer.add_json("case.json", {
        "suite": case.suite, "case_id": case.case_id, "op_type": case.op_type,
        "case_name": case.case_name, "dtype": case.dtype, "seed": case.seed,
        "inputs": input_files, "outputs": output_names,
        # What replay needs to rebuild the CaseInstance (gero_runner.evidence.rebuild).
        "expected_label": case.expected_label, "expected_version": case.expected_version,
        "tolerance": list(case.tolerance) if case.tolerance is not None else None,
        "batch": case.batch, "contracts": list(case.contracts),
        "variants": list(case.variants), "spec_name": case.spec_name,
        "paths": {name: {"backend": p.backend, "version": p.version,
                         "optimization": p.optimization, "threads": p.threads,
                         "settings": p.settings, "files": p.files, "error": p.error}
                  for name, p in paths.items()},
    })
    artifact = writer.write(Path(settings.data_root))
    rows = [finish_row(r, artifact) for r in rows]
    end = time.perf_counter()
    return CaseResult(rows, ctx.backend_seconds, end - start, end - evidence_start)


def execution_rows(case: CaseInstance, message: str, running: str = "",
                   unattributed: str = "worker") -> list[Observation]:
    """The observation for a case whose worker crashed or hung (nothing else is known but
    the path that was running, ``backend\toptimization`` from the running hook, if any), or
    that no path can be fed (``unattributed`` names the row's backend then)."""
    backend, _, optimization = running.partition("\t")
    if backends.is_backend(backend):
        version = backends.get(backend).version()
        message = f"{backend} {optimization}: {message}"
    else:
        backend, version, optimization = unattributed, "", NOT_APPLICABLE
    path = PathResult("worker", backend, version, optimization or NOT_APPLICABLE, 0, {})
    ctx = CaseContext(case, RunSettings(data_root=""), ToleranceTable(), EvidenceWriter(), {},
                      [], sha256(case.model), tensors_hash(case.inputs.values()))
    row = ctx.row(check="agreement", output_name="", actual=path,
                  reference_name=reference.BACKEND, reference_version=reference.version(),
                  dtype=case.dtype, cmp=None, rtol=math.nan, atol=math.nan,
                  result=EXECUTION, reason=message)
    return [finish_row(row, "")]
