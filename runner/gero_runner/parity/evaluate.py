"""One parity sample: PyTorch and ONNX Runtime on identical seeded inputs, compared by kind.

The rows are ordinary observations (``suite`` parity, ``reference`` pytorch with its version,
``backend`` onnxruntime with its optimisation level), made with the runner's CaseContext
helpers, and the evidence directory has the runner's layout (``model.onnx``,
``inputs/``, ``outputs/pytorch/``, ``outputs/ort-LEVEL/``, ``case.json``, ``manifest.json``)
with PyTorch as the case's expected outputs. That is what lets ``gero replay`` re-run the
ONNX side against the stored PyTorch outputs unchanged.

Classes: within the kind's tolerances -> passed; outside -> divergence; NaN on either side
-> contract_issue; an export or ONNX Runtime failure -> execution. An output whose shape
differs between the runtimes is a divergence (the runtimes disagree; the runner's
``classify`` says the same), except for keypoints, whose counts may vary by design.

Element-wise kinds use check ``expected`` with the tolerance their verdict applies (rtol/atol,
or rtol 0 / atol conf_tol for confidences), so a replay recomputes the same class; keypoints,
matched order-free within coord_tol, use check ``parity:keypoints``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.backends import ort
from gero_runner.case import CaseInstance
from gero_runner.errors import GeroError
from gero_runner.execution.case_record import add_case_record, start_evidence, store_outputs
from gero_runner.execution.context import (
    NOT_APPLICABLE,
    CaseContext,
    CaseResult,
    PathResult,
    RunSettings,
    finish_row,
)
from gero_runner.execution.paths import note_running, run_path
from gero_runner.metrics.compare import Comparison, compare
from gero_runner.metrics.parity import (
    CONFIDENCE,
    DENSE,
    KEYPOINTS,
    ROTATION,
    TRANSLATION,
    OutputVerdict,
    ParityTolerances,
    evaluate_output,
)
from gero_runner.parity.export import DEFAULT_OPSET, ExportError, export_onnx
from gero_runner.parity.module import InputSpec, flatten_outputs, make_inputs
from gero_runner.parity.torch_support import require_torch
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, EXECUTION, PASSED, Observation
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import sha256, tensor_hash, tensors_hash

SUITE = "parity"
PYTORCH = "pytorch"
EXPORTER = "torch.onnx.export"
ELEMENTWISE_CHECK = "expected"
KEYPOINT_CHECK = "parity:keypoints"


@dataclass(frozen=True)
class ParitySettings:
    """How every sample of a parity run is evaluated."""

    data_root: str
    tolerances: ParityTolerances = field(default_factory=ParityTolerances)
    output_kinds: dict[str, str] = field(default_factory=dict)
    """Kind by output name; unnamed outputs are dense."""
    levels: tuple[str, ...] = ort.LEVEL_NAMES
    threads: int = 1
    repeats: int = 3
    opset: int = DEFAULT_OPSET


def run_pytorch(module: Any, inputs: dict[str, np.ndarray], repeats: int,
                threads: int) -> tuple[PathResult, list[str]]:
    """The module under ``torch.no_grad()`` on the inputs, ``repeats`` times; raises GeroError
    if it fails (nothing can be compared without the reference)."""
    torch = require_torch()
    settings = {"framework": "torch", "device": "cpu", "mode": "eval", "no_grad": True,
                "intra_op_num_threads": threads}
    path = PathResult(PYTORCH, PYTORCH, str(torch.__version__), NOT_APPLICABLE, threads,
                      settings)
    args = tuple(torch.from_numpy(np.array(x, copy=True)) for x in inputs.values())
    times: list[float] = []
    flat: list[tuple[str, Any]] = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        try:
            with torch.no_grad():
                value = module(*args)
        except Exception as e:  # the user's forward failed on these inputs
            shapes = ", ".join(f"{n}{list(x.shape)}:{x.dtype}" for n, x in inputs.items())
            raise GeroError(f"the PyTorch module failed on the inputs ({shapes}): "
                            f"{type(e).__name__}: {e}") from e
        times.append((time.perf_counter() - start) * 1e3)
        flat = flatten_outputs(value)
    path.outputs = [t.detach().cpu().numpy().copy() for _, t in flat]
    path.median_ms, path.repeats = float(np.median(times)), len(times)
    return path, [name for name, _ in flat]


def check_kinds(kinds: dict[str, str], names: list[str], outputs: list[np.ndarray]) -> None:
    """Every ``--output-kind`` names an output, and its shape fits the kind."""
    unknown = sorted(set(kinds) - set(names))
    if unknown:
        raise GeroError(f"--output-kind names unknown output(s) {', '.join(unknown)}; the "
                        f"module's outputs are {', '.join(names)}")
    for name, x in zip(names, outputs, strict=True):
        kind, shape = kinds.get(name, DENSE), list(x.shape)
        bad = ((kind == ROTATION and (x.ndim < 2 or tuple(x.shape[-2:]) not in
                                      ((3, 3), (3, 4), (4, 4))))
               or (kind == TRANSLATION and (x.ndim < 1 or x.shape[-1] != 3))
               or (kind == KEYPOINTS and x.ndim not in (2, 3)))
        if bad:
            need = {ROTATION: "(..., 3, 3), (..., 3, 4) or (..., 4, 4)",
                    TRANSLATION: "(..., 3)", KEYPOINTS: "(N, D) or (B, N, D)"}[kind]
            raise GeroError(f"output {name!r} has shape {shape}, which does not fit kind "
                            f"{kind!r}: expected {need}")


def evaluate_sample(module: Any, module_spec: str, specs: list[InputSpec], sample: int,
                    seed: int, onnx_model: bytes | None, settings: ParitySettings
                    ) -> CaseResult:
    """Rows and evidence of one seeded sample (``onnx_model`` None: export the module)."""
    import onnx

    start = time.perf_counter()
    inputs = make_inputs(specs, seed)
    note_running(PYTORCH, NOT_APPLICABLE)  # a crash or hang in here is PyTorch's
    pt, pt_names = run_pytorch(module, inputs, settings.repeats, settings.threads)
    note_running("")
    assert pt.outputs is not None
    check_kinds(settings.output_kinds, pt_names, pt.outputs)

    exporter = PathResult(EXPORTER, EXPORTER, pt.version, NOT_APPLICABLE, 0,
                          {"opset": settings.opset, "dynamo": False})
    model = onnx_model
    if model is None:
        torch = require_torch()
        args = tuple(torch.from_numpy(np.array(x, copy=True)) for x in inputs.values())
        note_running(EXPORTER, NOT_APPLICABLE)
        try:
            model = export_onnx(module, args, list(inputs), pt_names,
                                [x.ndim for x in pt.outputs], settings.opset)
        except ExportError as e:
            exporter.error = str(e)
        finally:
            note_running("")
    names = list(pt_names)
    if model is not None:
        graph = onnx.load_from_string(model).graph
        _check_graph_inputs([i.name for i in graph.input
                             if i.name not in {t.name for t in graph.initializer}], specs)
        onnx_names = [o.name for o in graph.output]
        names = [onnx_names[j] if j < len(onnx_names) else n for j, n in enumerate(pt_names)]
        if onnx_model is not None:
            check_kinds(settings.output_kinds, names, pt.outputs)

    case = _sample_case(module_spec, specs, sample, seed, model or b"", inputs,
                        dtype=str(pt.outputs[0].dtype) if pt.outputs else "float32",
                        expected=dict(zip(names, pt.outputs, strict=True)),
                        version=pt.version)
    writer, input_files = start_evidence(model, inputs)
    paths: dict[str, PathResult] = {PYTORCH: pt}
    backend_start = time.perf_counter()
    if model is not None:
        for level in settings.levels:
            paths[f"ort-{level}"] = run_path(ort.RUNTIME,
                                             ort.RUNTIME.level(level, settings.threads),
                                             case, settings.repeats)
    backend_seconds = time.perf_counter() - backend_start
    for path in paths.values():
        store_outputs(writer, path)

    ctx = CaseContext(case, RunSettings(data_root=settings.data_root, levels=settings.levels,
                                        threads=settings.threads, repeats=settings.repeats),
                      writer, paths, names, sha256(case.model),
                      tensors_hash(inputs.values()), backend_seconds)
    rows: list[Observation] = []
    if model is None:
        rows += _export_failed_rows(ctx, exporter, pt, names, settings)
    else:
        for level in settings.levels:
            rows += _level_rows(ctx, paths[f"ort-{level}"], pt, names, settings)
        writer.add_test_data_set(list(inputs.items()), list(zip(names, pt.outputs,
                                                                strict=True)))
    add_case_record(writer, case, input_files, names, paths, parity={
        "module": module_spec, "sample": sample, "opset": settings.opset,
        "exported": onnx_model is None, "export_error": exporter.error,
        "output_kinds": {n: settings.output_kinds.get(n, DENSE) for n in names},
        "tolerances": settings.tolerances.__dict__, "inputs": [s.label for s in specs]})
    artifact = writer.write(Path(settings.data_root))
    rows = [finish_row(r, artifact) for r in rows]
    return CaseResult(rows, backend_seconds, time.perf_counter() - start)


def _sample_case(module_spec: str, specs: list[InputSpec], sample: int, seed: int,
                 model: bytes, inputs: dict[str, np.ndarray], dtype: str,
                 expected: dict[str, np.ndarray] | None, version: str) -> CaseInstance:
    return CaseInstance(
        suite=SUITE, case_id=f"{SUITE}/{module_spec}/{'/'.join(s.label for s in specs)}/"
                             f"sample{sample}",
        op_type=module_spec, case_name=f"sample {sample}: " + " ".join(s.label for s in specs),
        dtype=dtype, seed=seed, model=model, inputs=inputs, expected=expected,
        expected_label=PYTORCH, expected_version=version)


STAGES = {PYTORCH: "PyTorch", EXPORTER: EXPORTER}
"""How a failed sample's reason names the stage its worker was in (a runtime's level: by the
runtime's title)."""


def failed_sample_rows(module_spec: str, specs: list[InputSpec], sample: int, seed: int,
                       onnx_model: bytes | None, settings: ParitySettings, message: str,
                       running: str) -> list[Observation]:
    """The observation of a sample whose worker crashed or hung: what happened, in the
    stage that was running (building or running the module, exporting it, an ONNX Runtime
    level) when the worker said which."""
    torch_version = str(require_torch().__version__)
    backend, _, optimization = running.partition("\t")
    optimization = optimization.partition("\t")[0]  # a third field names the graph
    if backend in STAGES:
        version, message = torch_version, f"{STAGES[backend]}: {message}"
    elif backend in backends.RUNTIMES:
        runtime = backends.get(backend)
        version, message = runtime.version(), f"{runtime.label()} ({optimization}): {message}"
    else:
        backend, version = "worker", ""
    path = PathResult("worker", backend, version, optimization or NOT_APPLICABLE, 0, {})
    inputs = make_inputs(specs, seed)
    dtype = next((s.dtype for s in specs if s.dtype.startswith("float")), "float32")
    case = _sample_case(module_spec, specs, sample, seed, onnx_model or b"", inputs, dtype,
                        None, torch_version)
    ctx = CaseContext(case, RunSettings(data_root=""), EvidenceWriter(), {},
                      [], sha256(case.model), tensors_hash(inputs.values()))
    row = ctx.row(check=ELEMENTWISE_CHECK, output_name="", actual=path, reference_name=PYTORCH,
                  reference_version=torch_version, dtype=dtype, cmp=None,
                  rtol=settings.tolerances.rtol, atol=settings.tolerances.atol,
                  result=EXECUTION, reason=message, details={"stage": backend})
    return [finish_row(row, "")]


def _check_graph_inputs(graph_inputs: list[str], specs: list[InputSpec]) -> None:
    given = [s.name for s in specs]
    if graph_inputs != given:
        raise GeroError(f"the ONNX graph's inputs are {', '.join(graph_inputs) or 'none'}, but "
                        f"--input gave {', '.join(given)}; name the inputs as the graph does, "
                        "in its order")


def _row_tolerance(kind: str, tol: ParityTolerances) -> tuple[str, float, float]:
    """Check name and the (rtol, atol) stored on the row: the bound the verdict applies."""
    if kind == KEYPOINTS:
        return KEYPOINT_CHECK, 0.0, tol.coord_tol
    if kind == CONFIDENCE:
        return ELEMENTWISE_CHECK, 0.0, tol.conf_tol
    return ELEMENTWISE_CHECK, tol.rtol, tol.atol


def _export_failed_rows(ctx: CaseContext, exporter: PathResult, pt: PathResult,
                        names: list[str], settings: ParitySettings) -> list[Observation]:
    assert pt.outputs is not None
    rows = []
    for j, name in enumerate(names):
        kind = settings.output_kinds.get(name, DENSE)
        check, rtol, atol = _row_tolerance(kind, settings.tolerances)
        rows.append(ctx.row(
            check=check, output_name=name, actual=exporter, reference_name=PYTORCH,
            reference_version=pt.version, dtype=str(pt.outputs[j].dtype), cmp=None,
            rtol=rtol, atol=atol, result=EXECUTION,
            reason=f"no ONNX graph to run: {exporter.error}",
            reference_hash=tensor_hash(pt.outputs[j]), reference_file=pt.files[j],
            reference_ms=pt.median_ms, details={"kind": kind, "stage": "export"}))
    return rows


def _confidence_partner(j: int, names: list[str], outputs: list[np.ndarray],
                        kinds: dict[str, str]) -> int | None:
    """The one confidence output shaped like keypoint output ``j`` without its last axis."""
    want = outputs[j].shape[:-1]
    hits = [k for k, n in enumerate(names)
            if kinds.get(n) == CONFIDENCE and outputs[k].shape == want]
    return hits[0] if len(hits) == 1 else None


def _level_rows(ctx: CaseContext, path: PathResult, pt: PathResult, names: list[str],
                settings: ParitySettings) -> list[Observation]:
    assert pt.outputs is not None
    rows = []
    tol = settings.tolerances
    for j, name in enumerate(names):
        kind = settings.output_kinds.get(name, DENSE)
        check, rtol, atol = _row_tolerance(kind, tol)
        r = pt.outputs[j]
        common: dict[str, Any] = {
            "check": check, "output_name": name, "actual": path, "reference_name": PYTORCH,
            "reference_version": pt.version, "dtype": str(r.dtype), "rtol": rtol,
            "atol": atol, "reference_ms": pt.median_ms,
            "reference_hash": tensor_hash(r), "reference_file": pt.files[j]}
        if path.outputs is None:
            rows.append(ctx.row(cmp=None, result=EXECUTION, details={"kind": kind},
                                reason=f"ONNX Runtime ({path.optimization}) failed: "
                                       f"{path.error}", **common))
            continue
        if j >= len(path.outputs):
            rows.append(ctx.row(cmp=None, result=EXECUTION, details={"kind": kind},
                                reason=f"the ONNX graph has {len(path.outputs)} output(s); "
                                       f"PyTorch output {j} ({name!r}) has no counterpart",
                                **common))
            continue
        a = path.outputs[j]
        common.update(actual_hash=tensor_hash(a), actual_file=path.files[j])
        cmp = compare(a, r, rtol, atol)
        if a.shape != r.shape and kind != KEYPOINTS:
            rows.append(ctx.row(
                cmp=cmp, result=DIVERGENCE,
                reason=f"ONNX Runtime output shape {list(a.shape)} differs from PyTorch "
                       f"{list(r.shape)}",
                details={"kind": kind, "actual_shape": list(a.shape),
                         "reference_shape": list(r.shape)}, **common))
            continue
        rows.append(_verdict_row(ctx, j, kind, a, r, path, pt, names, settings, cmp, common))
    return rows


def _verdict_row(ctx: CaseContext, j: int, kind: str, a: np.ndarray, r: np.ndarray,
                 path: PathResult, pt: PathResult, names: list[str], settings: ParitySettings,
                 cmp: Comparison, common: dict[str, Any]) -> Observation:
    assert path.outputs is not None and pt.outputs is not None
    confs: tuple[Any, Any] = (None, None)
    partner = None
    if kind == KEYPOINTS:
        partner = _confidence_partner(j, names, pt.outputs, settings.output_kinds)
        if partner is not None and partner < len(path.outputs):
            confs = (pt.outputs[partner], path.outputs[partner])
    try:
        verdict = evaluate_output(kind, r, a, settings.tolerances, *confs)
    except GeroError as e:  # e.g. keypoints of different coordinate dimensions
        return ctx.row(cmp=cmp, result=DIVERGENCE, reason=str(e), details={"kind": kind},
                       **common)
    details = {**verdict.figures, "threads_pytorch": pt.threads}
    if partner is not None:
        details["confidence_output"] = names[partner]
    result, reason = classify_verdict(verdict)
    return ctx.row(cmp=cmp, result=result, reason=reason, details=details, **common)


def classify_verdict(verdict: OutputVerdict) -> tuple[str, str]:
    """Result class and reason of a kind-aware verdict."""
    if verdict.nonfinite:
        return CONTRACT_ISSUE, f"{verdict.nonfinite}: NaN never passes"
    if verdict.failures:
        return DIVERGENCE, "; ".join(verdict.failures)
    return PASSED, f"{verdict.kind} within tolerance: {figures_text(verdict.figures)}"


def _g(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, float) and math.isfinite(x) else str(x)


def figures_text(figures: dict[str, Any]) -> str:
    """The headline figures of one output, by kind, for reasons and reports."""
    kind = figures.get("kind", DENSE)
    if kind == KEYPOINTS:
        return (f"match ratio {_g(figures['match_ratio'])} ({figures['matched']}/"
                f"{max(figures['n_reference'], figures['n_actual'])}), coord MAE "
                f"{_g(figures['coord_mae'])}, coord max {_g(figures['coord_max'])}, conf max "
                f"|Δ| {_g(figures['conf_max'])}")
    text = (f"MAE {_g(figures['mae'])}, max diff {_g(figures['max_diff'])}, rel. error "
            f"{_g(figures['relative_error_pct'])}%")
    if kind == CONFIDENCE:
        text += f", conf MAE {_g(figures['conf_mae'])}"
    elif kind == ROTATION:
        text += f", rotation error max {_g(figures['rotation_error_deg_max'])}°"
    elif kind == TRANSLATION:
        text += f", translation error max {_g(figures['translation_error_max'])}"
    elif "top1_agreement" in figures:
        text += f", top-1 agreement {figures['top1_agreement']:.1%}"
    return text


def details_of(row: dict[str, Any]) -> dict[str, Any]:
    try:
        details: dict[str, Any] = json.loads(row.get("details") or "{}")
    except ValueError:
        return {}
    return details
