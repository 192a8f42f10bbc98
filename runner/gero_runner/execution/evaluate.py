"""Evaluate one case: run every path, compare, classify, and keep the evidence.

This runs inside a worker process. It returns typed observation rows (``schema.Observation``,
less run_id and created_at) so the parent only stores them. The check families come from
the layer above (``family_rows``, ``checks.families``): this layer names none of them, nor
the plan of a case split into parts (``execution.plan``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gero_runner import backends
from gero_runner.backends import reference
from gero_runner.case import MODEL_SUITES, CaseInstance
from gero_runner.execution.case_record import add_case_record, start_evidence, store_outputs
from gero_runner.execution.context import (
    NOT_APPLICABLE,
    CaseContext,
    CaseResult,
    PathResult,
    RunSettings,
    finish_row,
    note_summaries,
)
from gero_runner.execution.paths import (
    compare_paths,
    expected_path,
    level_rows,
    path_outputs,
    run_corrected_reference,
    run_path,
    run_reference,
    runtime_specs,
)
from gero_runner.schema import EXECUTION, Observation
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import sha256, tensors_hash

# The evaluation's parts, re-exported for the layer above that assembles a case's checks.
__all__ = ["CaseResult", "FamilyRows", "RunSettings", "case_context", "evaluate_whole",
           "execution_rows", "judge_case"]

FamilyRows = Callable[[str, CaseContext], list[Observation]]
"""A check family's rows on a case, by the family's name (``RunSettings.checks``)."""
Explain = Callable[[CaseContext, list[Observation]], list[Observation]]
"""The path comparisons' rows again, each with the cause the layer above finds for it
(``checks.precision``: a precision rewrite), before the check families run."""


def _as_they_are(ctx: CaseContext, rows: list[Observation]) -> list[Observation]:
    return rows


def evaluate_whole(case: CaseInstance, settings: RunSettings,
                   family_rows: FamilyRows, explain: Explain = _as_they_are) -> CaseResult:
    """Every path of one case, every comparison, every check family (``family_rows``) and
    the evidence, in this process, one after another (a case not split into parts)."""
    start = time.perf_counter()
    if case.unsupported:  # a case source found that gero cannot feed or compare this case
        return CaseResult(execution_rows(case, case.unsupported, unattributed=NOT_APPLICABLE),
                          0.0,
                          time.perf_counter() - start)
    # A model's paths reuse the outputs a run kept (a replay re-runs a model case whole).
    reuse = path_outputs(settings) if case.suite in MODEL_SUITES else None
    runtime_paths = [run_path(backend, spec, case, settings.repeats, settings.max_tensor_bytes,
                              reuse) for backend, spec in runtime_specs(settings)]
    # Model cases may ask for fewer reference runs: the evaluator takes seconds on a CNN.
    ref = run_reference(case, case.reference_repeats or settings.repeats,
                        settings.max_tensor_bytes, reuse)
    corrected = run_corrected_reference(case, ref, runtime_paths, settings.tolerances)
    return judge_case(case, settings, runtime_paths, ref, corrected, start=start,
                      family_rows=family_rows, explain=explain)


def case_context(case: CaseInstance, settings: RunSettings, runtime_paths: list[PathResult],
                 ref: PathResult, corrected: PathResult | None
                 ) -> tuple[CaseContext, dict[str, str], PathResult | None]:
    """The context the checks of a case share (its paths' outputs already in the evidence),
    each input's evidence file, and the case's expected path; built the same way wherever
    a part of the case is judged, so that every part finds the same evidence."""
    import onnx

    model = onnx.load_from_string(case.model)
    output_names = [o.name for o in model.graph.output]
    writer, input_files = start_evidence(case.model, case.inputs, settings.max_evidence_bytes)
    paths: dict[str, PathResult] = {p.name: p for p in runtime_paths}
    paths[ref.name] = ref
    if corrected is not None:
        paths[corrected.name] = corrected
    backend_seconds = sum(p.backend_seconds for p in paths.values())
    expected = expected_path(case)
    if expected is not None:
        paths[expected.name] = expected
    # The case's expected outputs are kept whatever the budget, like its inputs (a replay
    # compares with them and cannot compute them again): first, so the budget bounds the rest.
    for path in sorted(paths.values(), key=lambda p: p is not expected):
        store_outputs(writer, path, keep=path is expected)
    if case.expected_exact:
        for j, x in enumerate(case.expected_exact.values()):
            writer.add_array(f"outputs/{case.expected_label}-exact/output_{j}.npy", x)
    ctx = CaseContext(case, settings, writer, paths, output_names, sha256(case.model),
                      tensors_hash(case.inputs.values()), backend_seconds)
    return ctx, input_files, expected


def judge_case(case: CaseInstance, settings: RunSettings, runtime_paths: list[PathResult],
               ref: PathResult, corrected: PathResult | None, *, start: float,
               family_rows: FamilyRows, model_runs: Any = None,
               explain: Explain = _as_they_are) -> CaseResult:
    """A case whose paths ran: every comparison, every check family in
    ``settings.checks`` (``family_rows``: each family's rows, run here or taken from what a
    split case's parts computed) and the evidence. ``model_runs`` gives the model family
    the runs a split case's parts made; ``explain`` names the causes the layer above finds
    for the comparisons' rows."""
    ctx, input_files, expected = case_context(case, settings, runtime_paths, ref, corrected)
    ctx.model_runs = model_runs
    paths = ctx.paths
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
    rows = explain(ctx, rows)
    for family in settings.checks:
        rows += family_rows(family, ctx)

    evidence_start = time.perf_counter()
    reference_outputs = expected or ref
    writer = ctx.writer
    writer.add_test_data_set(
        list(case.inputs.items()),
        list(zip(ctx.output_names, reference_outputs.outputs or [], strict=False)),
    )
    add_case_record(writer, case, input_files, ctx.output_names, paths)
    evidence = None
    rows = note_summaries(rows, writer)
    if settings.evidence_inline:
        artifact, files = writer.directory()
        evidence = {artifact: files}
    else:
        artifact = writer.write(Path(settings.data_root))
    rows = [finish_row(r, artifact, case.random) for r in rows]
    end = time.perf_counter()
    return CaseResult(rows, ctx.backend_seconds, end - start, end - evidence_start,
                      evidence=evidence)


def execution_rows(case: CaseInstance, message: str, running: str = "",
                   unattributed: str = "worker") -> list[Observation]:
    """The observation for a case whose worker crashed or hung (nothing else is known but
    the path that was running, ``backend\toptimization`` from the running hook, if any), or
    that no path can be fed (``unattributed`` names the row's backend then)."""
    backend, _, optimization = running.partition("\t")
    optimization = optimization.partition("\t")[0]  # a third field names the graph
    if backends.is_backend(backend):
        version = backends.get(backend).version()
        message = f"{backend} {optimization}: {message}"
    else:
        backend, version, optimization = unattributed, "", NOT_APPLICABLE
    path = PathResult("worker", backend, version, optimization or NOT_APPLICABLE, 0, {})
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(), {},
                      [], sha256(case.model), tensors_hash(case.inputs.values()))
    row = ctx.row(check="agreement", output_name="", actual=path,
                  reference_name=reference.BACKEND, reference_version=reference.version(),
                  dtype=case.dtype, cmp=None, rtol=math.nan, atol=math.nan,
                  result=EXECUTION, reason=message)
    return [finish_row(row, "")]
