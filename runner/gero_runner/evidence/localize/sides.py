"""What each side of an observation computes, run again: which two paths it compared (the
runtime setting under test, the ReferenceEvaluator, the float64 shadow; the model or its
int8/float16 variant), their values of any tensors of a graph (a runtime through its
backend's ``intermediates``; the shadow through the corrected evaluator in float64), which
tensors each keeps after its own rewrites, and the narrowest float type it computes in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from gero_runner import backends
from gero_runner.checks.model import FP16_EXACT, FP16_SHADOW, INT8_EXACT
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.evidence.localization import Side
from gero_runner.evidence.localize.bounds import (
    DEQUANTIZED,
    REFERENCE,
    ROUNDED,
    ROUNDINGS,
    RUNTIME,
    SHADOW,
    SHADOW_KIND,
)
from gero_runner.evidence.rebuild import load_model_bytes
from gero_runner.models import variants as var
from gero_runner.storage.artifacts import has_member, row_json, safe_member


def load_graph(directory: Path, relative: str) -> onnx.ModelProto:
    """The graph at ``relative`` in the evidence directory (``model.onnx``: the model the
    case ran, checked for external data as rebuild reads it)."""
    if relative == "model.onnx":
        return onnx.load_from_string(load_model_bytes(directory))
    path = safe_member(directory, relative)
    if not path.is_file():
        raise ArtifactError(f"{relative}: the graph this observation ran is missing from "
                            f"{directory}")
    return onnx.load_from_string(path.read_bytes())


def _actual_graph(directory: Path, row: dict[str, Any], settings: dict[str, Any]) -> str:
    variant = settings.get("variant")
    if isinstance(variant, str) and variant and has_member(directory,
                                                           f"variants/{variant}.onnx"):
        return f"variants/{variant}.onnx"
    model = row_json(row, "details").get("variant_model")
    if isinstance(model, str) and model and has_member(directory, model):
        return model
    return "model.onnx"


def sides(directory: Path, row: dict[str, Any], record: dict[str, Any]) -> tuple[Side, Side]:
    """The observation's path under test and its reference, as sides to run again; a
    sentence (GeroError) when the reference is not a path (a contract's law, stored
    expected outputs)."""
    paths: dict[str, dict[str, Any]] = record.get("paths", {})
    settings = row_json(row, "session_settings")
    backend = str(row.get("backend") or "")
    a_graph = _actual_graph(directory, row, settings)
    if backends.is_reference(backend):
        a_kind = REFERENCE
    elif backends.is_backend(backend):
        a_kind = RUNTIME
    else:
        raise GeroError(f"observation {str(row.get('observation_id'))[:12]}: its path "
                        f"{backend!r} is not one gero can run again")
    _traceable(backend)
    optimization = str(row.get("optimization") or "-")
    a_label = backend if a_kind == REFERENCE else f"{backend}:{optimization}"
    variant = settings.get("variant")
    if isinstance(variant, str) and variant:
        a_label = f"{variant}:{a_label}"
    a = Side(a_label, a_kind, backend, settings, a_graph, str(row.get("actual_file") or ""))
    ref = str(row.get("reference") or "")
    output = str(row.get("output_name") or "")
    outputs = list(record.get("outputs") or [])
    j = outputs.index(output) if output in outputs else 0
    if ref == SHADOW or (paths.get(ref, {}).get("backend") == SHADOW):
        files = paths.get(ref, {}).get("files") or []
        exact = f"outputs/{ref}-exact/output_{j}.npy"
        stored = exact if has_member(directory, exact) else (files[j] if j < len(files) else "")
        return a, Side(ref, SHADOW_KIND, SHADOW, {}, a_graph, stored)
    if backends.is_reference(ref):
        return a, Side(ref, REFERENCE, ref, {}, a_graph, str(row.get("reference_file") or ""))
    if ref in (FP16_SHADOW, FP16_EXACT, INT8_EXACT):
        # The variant file computed exactly (float64), or rounded to float16 at each node
        # as a correct float16 engine would: the shadow of the path's own graph.
        return a, Side(ref, SHADOW_KIND, ROUNDED if ref == FP16_SHADOW else SHADOW, {},
                       a_graph, str(row.get("reference_file") or ""))
    parts = ref.split(":")
    graph = a_graph
    if len(parts) in (2, 3) and parts[0] in (*var.VARIANTS, "fp32"):
        graph = "model.onnx" if parts[0] == "fp32" else f"variants/{parts[0]}.onnx"
        if len(parts) == 2 and backends.is_reference(parts[1]):
            # The same engine on another file of the model ('fp32:onnx-reference').
            if not has_member(directory, graph):
                raise ArtifactError(f"{graph}: the reference's graph is missing from "
                                    f"{directory}")
            return a, Side(ref, REFERENCE, parts[1], {}, graph,
                           str(row.get("reference_file") or ""))
        parts = parts[1:] if len(parts) == 3 else parts
    if len(parts) == 2 and backends.is_backend(parts[0]) and (
            parts[0] in backends.RUNTIMES or backends.release_of(parts[0])):  # a release's
        name, level = parts
        found = next((p for p in paths.values() if p.get("backend") == name
                      and p.get("optimization") == level), None)
        # The runtime's own table only where the record lacks the path: asking OpenVINO for
        # its settings loads it, and a process that did must not fork (start_method).
        spec = None if found is not None else next(
            (s for s in backends.get(name).paths(max(1, int(row.get("threads") or 1)))
             if s.optimization == level), None)
        if found is not None or spec is not None:
            b_settings = dict(found.get("settings") or {}) if found is not None else \
                dict(spec.settings if spec is not None else {})
            if not has_member(directory, graph):
                raise ArtifactError(f"{graph}: the reference's graph is missing from "
                                    f"{directory}")
            _traceable(name)
            return a, Side(ref, RUNTIME, name, b_settings, graph,
                           str(row.get("reference_file") or ""))
    raise GeroError(f"observation {str(row.get('observation_id'))[:12]} compares "
                    f"{a.label} with {ref!r}, which is not a path gero can run again (a "
                    "contract's law, a noise floor or stored expected outputs): there is "
                    "no second graph to localize in")


def _traceable(backend: str) -> None:
    """A sentence (GeroError) when the backend cannot give back a graph's inner tensors."""
    runtime = backends.get(backend)
    if not runtime.keeps_intermediates:
        raise GeroError(f"{runtime.label()} cannot be localized: it does not give back the "
                        "tensors inside a graph (Backend.keeps_intermediates), so there is "
                        "nothing between the inputs and the output to compare")


def _runtime_feeds(model: onnx.ModelProto, feeds: dict[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    names = [i.name for i in model.graph.input
             if i.name not in {t.name for t in model.graph.initializer}]
    return {n: feeds[n] for n in names if n in feeds}


def run_side(side: Side, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
             names: list[str]) -> dict[str, np.ndarray]:
    """``names`` (tensors of ``model``) as ``side`` computes them from ``feeds``."""
    return run_side_each(side, model, [feeds], names)[0]


def run_side_each(side: Side, model: onnx.ModelProto, feeds_list: list[dict[str, np.ndarray]],
                  names: list[str]) -> list[dict[str, np.ndarray]]:
    """``run_side`` for each of ``feeds_list``, from one session (an OpenVINO compile costs
    more than a run, and its memory is not all given back)."""
    wanted = list(dict.fromkeys(names))
    all_feeds = [_runtime_feeds(model, f) for f in feeds_list]
    if side.kind == SHADOW_KIND:
        from gero_runner.backends.reference_defects import corrected_evaluator
        from gero_runner.backends.reference_evaluator import run_releasing
        from gero_runner.models.shadow import needs_dequantizing, widen, widen_inputs

        if side.backend == ROUNDED:
            from gero_runner.models.fp16_reference import rounding_model

            evaluator: Any = corrected_evaluator(rounding_model(model))
        else:
            # As the run computed it: quantised com.microsoft operators dequantized.
            evaluator = corrected_evaluator(widen(model, bool(
                side.settings.get(DEQUANTIZED) or needs_dequantizing(model))))
        out = []
        for feeds in (widen_inputs(f) for f in all_feeds):
            with np.errstate(all="ignore"):
                values = run_releasing(evaluator, feeds, wanted=wanted)
            missing = [n for n in wanted if n not in values]
            if missing:
                raise RuntimeError(f"the evaluator computed no value for {', '.join(missing)}")
            out.append({n: np.asarray(values[n]) for n in wanted})
        return out
    runtime = backends.get(side.backend)
    try:
        return runtime.intermediates(model, side.settings, wanted, all_feeds)
    except Exception as e:
        if "TDim" not in str(e):
            raise
        # tract computes shape arithmetic as symbolic dimensions (TDim), which it cannot
        # hand back as an output: the int64, int32 and bool tensors are left to the other
        # side (a caller skips a tensor one side lacks; a region alone reads the
        # reference's).
        from gero_runner.evidence.subgraphs import FLOAT_TYPES, QUANTIZED_TYPES, elem_types, prefix

        types = elem_types(model, feeds_list[0] if feeds_list else {})
        kept = (FLOAT_TYPES | QUANTIZED_TYPES) - {TensorProto.INT32}
        floats = [n for n in wanted if n in types and types[n][0] in kept]
        if not floats or len(floats) == len(wanted):
            raise
        return runtime.intermediates(prefix(model, floats), side.settings, floats, all_feeds)



def survivors(side: Side, model: onnx.ModelProto) -> dict[str, str] | None:
    """The tensors ``side`` keeps after its own rewrites, each with the node of its graph
    that makes it (``Backend.surviving_tensors``: ONNX Runtime's optimised graph,
    OpenVINO's executed graph); None: every tensor."""
    if side.kind == SHADOW_KIND:
        return None
    return backends.get(side.backend).surviving_tensors(model, side.settings)


_EPS = {TensorProto.FLOAT16: 2.0 ** -10, TensorProto.BFLOAT16: 2.0 ** -7}
_PRECISIONS = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def side_rounding(side: Side, model: onnx.ModelProto) -> float:
    """``ROUNDINGS`` roundings of the narrowest float type the side computes in: a float16
    graph's (its tensors may be cast back to float32 at the end), its settings' precision
    (``Backend.float_precision``: OpenVINO's); 0 when that is the tensors' own type."""
    eps = [_EPS[t.data_type] for t in model.graph.initializer if t.data_type in _EPS]
    eps += [_EPS[v.type.tensor_type.elem_type] for v in
            [*model.graph.value_info, *model.graph.input, *model.graph.output]
            if v.type.tensor_type.elem_type in _EPS]
    eps += [_EPS[a.i] for n in model.graph.node for a in n.attribute
            if n.op_type == "Cast" and a.name == "to" and a.i in _EPS]
    precision = (backends.get(side.backend).float_precision(side.settings) or ""
                 if side.kind == RUNTIME else "")
    if precision in _PRECISIONS:
        eps.append(_PRECISIONS[precision])
    return ROUNDINGS * max(eps) / 2 if eps else 0.0


