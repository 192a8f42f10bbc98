"""Runtime defects, found by asking the runtime: probes, each a 1-node graph with a known
exact answer, run once per runtime, version and setting (cached in the data root).

A probe that a runtime computes off its exact answer is a defect of that runtime's
operator: where a model or variant file holds the probed pattern, the runtime's divergent
rows on that file carry cause_key ``defect:RUNTIME:KEY`` (one finding per runtime and defect,
whatever file or gate shows it) and say the probe's figure and how many such nodes the file
holds. A row on a file without the pattern keeps its own cause. The table is data: no
runtime is named here (tract 0.22 computes per-axis DequantizeLinear 0.88 off on the probe,
ORT and OpenVINO exactly; the per-tensor probe is the control, exact on all three).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from gero_runner import backends
from gero_runner.backends.base import Backend

PROBE_LIMIT = 1e-4
"""A probe fails when its output is further than this from the exact answer (scaled by the
answer's largest magnitude): the model gate's float32 limit; a correct kernel is exact."""
CACHE_DIR = ("cache", "runtime-probes")
"""Where in the data root each runtime, version and setting's probe results are kept."""

Built = tuple[bytes, dict[str, np.ndarray], np.ndarray]
"""A probe's model, its inputs and its exact output (float64)."""


@dataclass(frozen=True)
class Probe:
    key: str
    summary: str
    """What a runtime that fails it does, after its name ('computes ... wrong')."""
    build: Callable[[], Built]
    matches: Callable[[onnx.NodeProto, dict[str, onnx.TensorProto]], bool]
    """Whether a node of a model (its initializers by name) holds the probed pattern."""


def _dequantize(per_axis: bool) -> Built:
    q = (np.arange(24).reshape(4, 6) * 37 % 255 - 127).astype(np.int8)
    if per_axis:
        scale = np.array([0.5, 0.25, 2.0, 1.0, 0.125, 4.0], np.float32)
        zero = np.array([0, 1, -2, 3, -4, 5], np.int8)
        node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    else:
        scale, zero = np.array(0.5, np.float32), np.array(3, np.int8)
        node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])
    graph = helper.make_graph(
        [node], "probe", [helper.make_tensor_value_info("q", TensorProto.INT8, q.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, q.shape)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)],
                              ir_version=9)  # the ReferenceEvaluator implements 19 and up
    exact = (q.astype(np.float64) - zero.astype(np.float64)) * scale.astype(np.float64)
    return model.SerializeToString(), {"q": q}, exact


def _scale_size(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> int | None:
    scale = inits.get(node.input[1]) if len(node.input) > 1 else None
    return None if scale is None else int(np.prod(scale.dims, dtype=np.int64))


def _per_axis(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> bool:
    size = _scale_size(node, inits)
    return node.op_type == "DequantizeLinear" and size is not None and size > 1


def _per_tensor(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> bool:
    return node.op_type == "DequantizeLinear" and _scale_size(node, inits) == 1


PROBES: tuple[Probe, ...] = (
    Probe("dequantize-per-axis", "computes per-axis DequantizeLinear wrong",
          lambda: _dequantize(True), _per_axis),
    Probe("dequantize-per-tensor", "computes per-tensor DequantizeLinear wrong",
          lambda: _dequantize(False), _per_tensor),
)
"""The probes, by capability; the per-tensor one is the control of the per-axis one."""
BY_KEY = {p.key: p for p in PROBES}


def pattern_count(model: onnx.ModelProto, probe: Probe) -> int:
    """How many nodes of the model's main graph hold the probe's pattern."""
    inits = {t.name: t for t in model.graph.initializer}
    return sum(probe.matches(n, inits) for n in model.graph.node)


def probe_errors(runtime: str, version: str, settings: dict[str, Any],
                 data_root: str) -> dict[str, float | None]:
    """Each probe's scaled error on the runtime at these settings (None: it could not run
    the probe, which says nothing of a defect), cached in ``data_root`` by runtime, version
    and settings; {} where this process cannot run that runtime and version."""
    digest = hashlib.sha256(json.dumps([runtime, version, settings], sort_keys=True,
                                       default=repr).encode()).hexdigest()[:24]
    file = Path(data_root, *CACHE_DIR, f"{digest}.json") if data_root else None
    if file is not None and file.is_file():
        try:
            kept = json.loads(file.read_text())
            if isinstance(kept, dict) and set(kept) == set(BY_KEY):
                return {k: (float(v) if v is not None else None) for k, v in kept.items()}
        except (OSError, ValueError):
            pass  # computed again below
    backend = backends.find(runtime)
    if backend is None or backend.version() != version:
        return {}
    errors = {p.key: _run_probe(backend, settings, p) for p in PROBES}
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(errors, sort_keys=True))
        except OSError:
            pass  # an unwritable root: computed again next time
    return errors


def _run_probe(backend: Backend, settings: dict[str, Any], probe: Probe
               ) -> float | None:
    model, inputs, exact = probe.build()
    try:
        session = backend.build(model, settings)
        try:
            got = backend.run(session, inputs)[0]
        finally:
            backend.release(session)
    except Exception:  # the runtime refuses the probe: no verdict on its kernel
        return None
    if got.shape != exact.shape:
        return float("inf")
    with np.errstate(all="ignore"):
        error = float(np.max(np.abs(got.astype(np.float64) - exact)) / np.max(np.abs(exact)))
    return error if np.isfinite(error) else float("inf")


def pattern_counts(model: onnx.ModelProto) -> dict[str, int]:
    """Each probe's count of nodes holding its pattern in the model (its main graph)."""
    return {p.key: pattern_count(model, p) for p in PROBES}


def defect_of(runtime: str, version: str, settings_json: str, counts: dict[str, int],
              scope: str, data_root: str) -> tuple[str, str, dict[str, Any]] | None:
    """The defect that explains a runtime's divergence on a file (``counts``: its
    ``pattern_counts``; ``scope``: 'model' or the variant file's name): the first probe whose
    pattern the file holds and that the runtime fails at these settings, as its cause key
    (``defect:RUNTIME:KEY``), its words (the probe's figure and the file's count of such
    nodes) and its facts; None where no probe explains it."""
    if not any(counts.values()):
        return None
    try:
        settings = json.loads(settings_json)
    except ValueError:
        return None
    errors = probe_errors(runtime, version, settings, data_root)
    for probe in PROBES:
        count, error = counts.get(probe.key, 0), errors.get(probe.key)
        if not count or error is None or error <= PROBE_LIMIT:
            continue
        where = "the model" if scope in ("", "model") else f"the {scope} file"
        cause = (f"{probe.summary} (a 1-node probe is {error:.2g} off the spec) and {where} "
                 f"has {count} such node{'s' if count != 1 else ''}")
        return (f"defect:{runtime}:{probe.key}", cause,
                {"key": probe.key, "probe_error": error, "nodes": count, "limit": PROBE_LIMIT})
    return None
