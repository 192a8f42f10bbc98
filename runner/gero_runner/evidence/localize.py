"""Localize: from an observation whose two paths disagree, the node where the error enters.

The two sides of an observation (a runtime setting, the ReferenceEvaluator, the float64
shadow; the model or its int8/float16 variant) are run again on the observation's inputs
with intermediate tensors as outputs, and compared tensor by tensor in topological order,
matched by name (a variant keeps its model's tensor names; the tensors it adds, such as
QuantizeLinear outputs and Casts, are not compared). A runtime that fuses nodes keeps only
some tensors (ONNX Runtime's optimised graph, OpenVINO's executed graph): only the tensors
that survive on both sides are compared, since marking a fused-away tensor as an output
would undo the fusion being localized.

Each tensor's figures are its scaled error ``max|a−r| / max|r|`` and its floor (see
docs/explanation/observations.md, localize): the
reference side's own sensitivity at that tensor (a run with 1e-7 relative noise on the float
inputs), against which a tensor diverges when its error is over ``FLOOR_FACTOR`` × the
floor and over ``ROUNDINGS`` roundings of the path's own dtype.

Where the error enters, not where it shows: each diverging tensor's node (the nodes a
runtime fused into it, where its middle did not survive) runs alone on both sides from the
reference side's values of its inputs. A node whose own output then differs is an origin;
one that only carries or magnifies the error it received is an amplifier. An origin's
share of the final error is measured by feeding its alone-output into the reference side
and running to the output.

Bounded: at most ``TRACE_BYTES`` of intermediates per side at once. A model whose compared
tensors are larger is traced at checkpoints spread over the graph first; the stretch between
the last agreeing and the first diverging checkpoint is traced next (a prefix of the graph,
so a stretch near the input costs little), until a stretch fits.

The result is stored beside the evidence (``localize/OBSERVATION_ID.json``), with the
tensors of its origins and amplifiers (``localize/OBSERVATION_ID.npz``) for the explorer.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from gero_runner import backends
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.evidence import subgraphs as sg
from gero_runner.evidence.localization import Localization, NodeFinding, Side, TensorFigure
from gero_runner.evidence.rebuild import load_model_bytes, read_case_record
from gero_runner.models import variants as var
from gero_runner.storage.artifacts import (
    LOCALIZE_DIR,
    evidence_directory,
    has_member,
    load_array,
    read_json_object,
    row_json,
    safe_member,
    verify_manifest,
)
from gero_runner.storage.outputs import (
    check_writable,
    output_error,
    refuse_unusable_directory,
    store_beside_evidence,
)

SHADOW = "float64-shadow"
RUNTIME, REFERENCE, SHADOW_KIND = "runtime", "reference", "shadow"
TRACE_BYTES = 192 << 20
"""Intermediates held per side at once."""
FLOOR_FACTOR = 10.0
ROUNDINGS = 8
NOISE_RELATIVE = 1e-7
MAX_CANDIDATES = 8
"""Diverging nodes run alone, first in topological order (each costs a session per side)."""
MAX_SHARES = 3
"""Origins whose share of the final error is measured (one run of the reference each)."""
KEEP_TENSOR_BYTES = 4 << 20
"""Tensors of origins and amplifiers kept for the explorer, up to this size each."""
DEFAULT_TIMEOUT_S = 1800.0


# ----------------------------------------------------------------------------- sides
def _load_graph(directory: Path, relative: str) -> onnx.ModelProto:
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
    parts = ref.split(":")
    graph = a_graph
    if len(parts) == 3 and parts[0] in (*var.VARIANTS, "fp32"):
        graph = "model.onnx" if parts[0] == "fp32" else f"variants/{parts[0]}.onnx"
        parts = parts[1:]
    if len(parts) == 2 and backends.is_backend(parts[0]) and parts[0] in backends.RUNTIMES:
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


# ----------------------------------------------------------------------------- running
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
        from gero_runner.models.shadow import widen, widen_inputs

        evaluator: Any = corrected_evaluator(widen(model))
        out = []
        for feeds in (widen_inputs(f) for f in all_feeds):
            with np.errstate(all="ignore"):
                values = run_releasing(evaluator, feeds, wanted=wanted)
            missing = [n for n in wanted if n not in values]
            if missing:
                raise RuntimeError(f"the evaluator computed no value for {', '.join(missing)}")
            out.append({n: np.asarray(values[n]) for n in wanted})
        return out
    return backends.get(side.backend).intermediates(model, side.settings, wanted, all_feeds)


def survivors(side: Side, model: onnx.ModelProto) -> dict[str, str] | None:
    """The tensors ``side`` keeps after its own rewrites, each with the node of its graph
    that makes it (``Backend.surviving_tensors``: ONNX Runtime's optimised graph,
    OpenVINO's executed graph); None: every tensor."""
    if side.kind == SHADOW_KIND:
        return None
    return backends.get(side.backend).surviving_tensors(model, side.settings)


# ----------------------------------------------------------------------------- figures
def _rounding(dtype: np.dtype[Any]) -> float:
    try:
        eps = float(np.finfo(dtype).eps)
    except (TypeError, ValueError):
        eps = 2.0 ** -23
    return ROUNDINGS * eps / 2


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


def figure(a: np.ndarray, r: np.ndarray) -> tuple[float, int]:
    """(scaled error, non-finite mismatches); a shape or non-finite mismatch is inf."""
    a, r = np.asarray(a), np.asarray(r)
    if a.shape != r.shape:
        return math.inf, 0
    if a.size == 0:
        return 0.0, 0
    if a.dtype.kind not in "fiub" or r.dtype.kind not in "fiub":
        return (0.0 if np.array_equal(a, r) else math.inf), 0
    if a.dtype == r.dtype and a.dtype in (np.float32, np.float64):
        # Most tensors: finite on both sides. Their difference in their own dtype (rounded
        # to 2^-24 of itself at worst) is finite exactly when no element is NaN or inf on
        # either side: two passes and one temporary instead of a dozen float64 ones.
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.subtract(a, r)
            np.abs(d, out=d)
            diff = float(d.max())
        if math.isfinite(diff):
            scale = max(float(r.max()), -float(r.min()))
            if scale == 0:
                return (0.0 if diff == 0 else math.inf), 0
            return diff / scale, 0
    x, y = a.astype(np.float64), r.astype(np.float64)
    fx, fy = np.isfinite(x), np.isfinite(y)
    both = fx & fy
    same = (np.isnan(x) & np.isnan(y)) | (np.isinf(x) & (x == y))
    bad = int(np.sum(~both & ~same))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = float(np.max(np.abs(x - y), where=both, initial=0.0))
        scale = float(np.max(np.abs(y), where=fy, initial=0.0))
    if bad:
        return math.inf, bad
    if scale == 0:
        return (0.0 if diff == 0 else math.inf), 0
    return diff / scale, 0


# ----------------------------------------------------------------------------- the search
class _Search:
    def __init__(self, directory: Path, row: dict[str, Any], a: Side, b: Side,
                 inputs: dict[str, np.ndarray]) -> None:
        self.directory, self.row, self.a, self.b = directory, row, a, b
        self.inputs = inputs
        self.model_a = _load_graph(directory, a.graph)
        self.model_b = self.model_a if b.graph == a.graph else _load_graph(directory, b.graph)
        self.output = str(row.get("output_name") or self.model_a.graph.output[0].name)
        self.types_a = sg.elem_types(self.model_a, inputs)
        self.types_b = (self.types_a if self.model_b is self.model_a
                        else sg.elem_types(self.model_b, inputs))
        self.rounding = side_rounding(a, self.model_a)
        self.notes: list[str] = []
        self.passes: list[dict[str, Any]] = []
        self.figures: dict[str, TensorFigure] = {}
        self.b_values: dict[str, np.ndarray] = {}
        self.a_values: dict[str, np.ndarray] = {}
        self.a_final: np.ndarray | None = None
        self.b_final: np.ndarray | None = None
        self.ops_a = {o: n for n in self.model_a.graph.node for o in n.output}
        made_b = {o for n in self.model_b.graph.node for o in n.output}
        started = time.perf_counter()
        surv_a = survivors(a, self.model_a)
        surv_b = survivors(b, self.model_b)
        # Each side's node (of its own rewritten graph) that makes a tensor.
        self.made_by = (surv_a or {}, surv_b or {})
        self.phases: dict[str, float] = {"survivors_s": time.perf_counter() - started}
        shared_inputs = ({i.name for i in self.model_a.graph.input}
                         & {i.name for i in self.model_b.graph.input})
        self.available: set[str] = set(shared_inputs)
        self.order: list[str] = []
        for node in self.model_a.graph.node:
            for t in node.output:
                if not t or t not in made_b:
                    continue
                if (surv_a is not None and t not in surv_a) or (surv_b is not None
                                                                  and t not in surv_b):
                    continue
                self.available.add(t)
                ta, tb = self.types_a.get(t), self.types_b.get(t)
                kinds = {x[0] for x in (ta, tb) if x is not None}
                known_float = kinds <= sg.FLOAT_TYPES
                quantized = bool(kinds) and kinds <= sg.QUANTIZED_TYPES
                constant = node.op_type == "Constant"  # a weight, not a computed value
                if (known_float or quantized or t == self.output) and not constant:
                    self.order.append(t)
        if self.output not in self.order:
            self.order.append(self.output)
            self.available.add(self.output)
        self.position = {t: i for i, t in enumerate(self.order)}
        if surv_a is not None or surv_b is not None:
            fused = [s.label for s, v in ((a, surv_a), (b, surv_b)) if v is not None]
            self.notes.append(f"only the tensors that survive {' and '.join(fused)}'s own "
                              "rewrites are compared (marking a fused-away tensor as an "
                              "output would undo the fusion)")

    # sizes ------------------------------------------------------------------------
    def size(self, t: str) -> int:
        known = [s for s in (self.types_a.get(t, (0, None))[1],
                             self.types_b.get(t, (0, None))[1]) if s is not None]
        if known:
            return max(known)
        sizes = [s for _, s in self.types_a.values() if s is not None]
        return max(sizes) if sizes else 1 << 20

    def checkpoints(self, window: list[str]) -> list[str]:
        total = sum(self.size(t) for t in window)
        if total <= TRACE_BYTES:
            return list(window)
        picked: list[str] = []
        last = window[-1]  # always: the stretch's end (the output, on the first pass)
        used = self.size(last)
        stride = max(1, math.ceil(total / TRACE_BYTES))
        for i, t in enumerate(window[:-1]):
            if i % stride == stride - 1 and used + self.size(t) <= TRACE_BYTES:
                picked.append(t)
                used += self.size(t)
        return [*picked, last]

    # one pass ---------------------------------------------------------------------
    def trace(self, names: list[str], extra: list[str], keep: bool) -> None:
        """Trace ``names`` (compared) and ``extra`` (region inputs, kept for the runs
        alone) on both sides; figures for ``names``; the reference's values kept when
        ``keep``."""
        start = time.perf_counter()
        given = {t: self.inputs[t] for t in [*names, *extra] if t in self.inputs}
        wanted = [t for t in dict.fromkeys([*names, *extra]) if t not in given]
        names = [t for t in names if t not in given]
        model_b = sg.prefix(self.model_b, wanted)
        model_a = model_b if self.model_a is self.model_b else sg.prefix(self.model_a, wanted)
        b, noisy = run_side_each(self.b, model_b, [self.inputs, _noisy(self.inputs)],
                                 wanted) if wanted else ({}, {})
        b = {**b, **given}
        floors = {t: figure(noisy[t], b[t])[0] for t in names}
        del noisy
        a = {**run_side(self.a, model_a, self.inputs, wanted), **given} if wanted else given
        for t in wanted:
            if t not in a or t not in b:
                continue
            x, y = a[t], b[t]
            exact = x.dtype.kind in "iu" and y.dtype.kind in "iu"
            if x.dtype.kind != "f" and y.dtype.kind != "f" and not exact and t != self.output:
                continue
            err, bad = figure(x, y)
            floor = floors.get(t, 0.0)
            if not math.isfinite(floor):
                floor = 0.0
            own = x.dtype if x.dtype.kind == "f" else np.dtype("float32")
            # Quantized integers are exact: any difference is one (a rounding that flips).
            threshold = 0.0 if exact else max(FLOOR_FACTOR * floor, _rounding(own),
                                               self.rounding)
            node = self.ops_a.get(t)
            self.figures[t] = TensorFigure(
                t, self.position.get(t, -1), node.name if node is not None else "",
                node.op_type if node is not None else "", err, floor, threshold,
                bool(err > threshold), bad, str(x.dtype), [int(d) for d in x.shape])
        if self.output in a and self.a_final is None:
            self.a_final, self.b_final = a[self.output], b[self.output]
        if keep:
            self.b_values = b
            self.a_values = a
        self.passes.append({"tensors": len(names), "extra": len(extra),
                            "nodes_a": len(model_a.graph.node),
                            "nodes_b": len(model_b.graph.node),
                            "seconds": round(time.perf_counter() - start, 3)})

    def window(self) -> list[str]:
        """Trace checkpoints until a stretch holding the first divergence fits."""
        window = list(self.order)
        while True:
            picked = self.checkpoints(window)
            if len(picked) == len(window):
                return window
            self.trace(picked, [], keep=False)
            first = next((t for t in picked if self.figures[t].diverges), None)
            if first is None:
                return []
            before = [t for t in picked if self.position[t] < self.position[first]]
            lo = self.position[before[-1]] + 1 if before else self.position[window[0]]
            narrowed = [t for t in window if lo <= self.position[t] <= self.position[first]]
            if len(narrowed) >= len(window):
                return narrowed
            window = narrowed

    def regions(self, t: str) -> tuple[list[int], list[int]]:
        ra = sg.region(self.model_a.graph, t, self.available - {t})
        rb = (ra if self.model_b is self.model_a
              else sg.region(self.model_b.graph, t, self.available - {t}))
        return ra, rb

    def region_inputs(self, t: str) -> list[str]:
        ra, rb = self.regions(t)
        names = sg.region_inputs(self.model_a.graph, ra)
        if self.model_b is not self.model_a:
            names += sg.region_inputs(self.model_b.graph, rb)
        return list(dict.fromkeys(names))

    def _alone_feeds(self, t: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray],
                                            float] | None:
        """The reference's values of ``t``'s region inputs cast to each side's own types
        (a, b), and how far that cast moved them (inf: they overflowed it); None where one
        was not traced."""
        feeds: dict[str, np.ndarray] = {}
        for n in self.region_inputs(t):
            if n in self.b_values:
                feeds[n] = self.b_values[n]
            elif n in self.inputs:
                feeds[n] = self.inputs[n]
            else:
                return None
        feeds_b = {n: self._as_type(v, self.types_b.get(n)) if self.b.kind != SHADOW_KIND
                   else v for n, v in feeds.items()}
        with np.errstate(over="ignore", invalid="ignore"):
            feeds_a = {n: self._as_type(v, self.types_a.get(n)) for n, v in feeds.items()}
        cast = max((figure(feeds_a[n], v)[0] for n, v in feeds.items()
                    if v.dtype.kind == "f"), default=0.0)
        return feeds_a, feeds_b, cast

    def alone(self, t: str
              ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], float] | None:
        """``t`` made by its region alone on both sides from the reference's values (cast
        to the path's own types), and how far that cast moved them (inf: they overflowed
        it)."""
        got = self._alone_feeds(t)
        if got is None:
            return None
        feeds_a, feeds_b, cast = got
        ra, rb = self.regions(t)
        model_a = sg.region_model(self.model_a, ra, [t], feeds_a)
        model_b = sg.region_model(self.model_b, rb, [t], feeds_b)
        x = run_side(self.a, model_a, feeds_a, [t])[t]
        y = run_side(self.b, model_b, feeds_b, [t])[t]
        return x, y, feeds_a, cast

    def alone_together(self, ts: list[str]
                       ) -> dict[str, tuple[np.ndarray, np.ndarray, dict[str, np.ndarray],
                                            float]]:
        """``alone`` for each of ``ts`` from one model per side holding every region side
        by side: one compile and one run per side instead of one per tensor. Empty where
        that cannot be built or run (the caller then runs each alone and names what
        fails)."""
        prepared = {t: self._alone_feeds(t) for t in ts}
        ready = [t for t in ts if prepared[t] is not None]
        if len(ready) < 2:
            return {}
        feeds_a: dict[str, np.ndarray] = {}
        feeds_b: dict[str, np.ndarray] = {}
        for t in ready:
            got = prepared[t]
            assert got is not None
            feeds_a.update(got[0])
            feeds_b.update(got[1])
        regions = {t: self.regions(t) for t in ready}
        built_a = sg.regions_model(self.model_a, [(regions[t][0], t) for t in ready], feeds_a)
        built_b = sg.regions_model(self.model_b, [(regions[t][1], t) for t in ready], feeds_b)
        if built_a is None or built_b is None:
            return {}
        (model_a, names_a), (model_b, names_b) = built_a, built_b
        try:
            xs = run_side(self.a, model_a, feeds_a, list(names_a.values()))
            ys = run_side(self.b, model_b, feeds_b, list(names_b.values()))
        except Exception:  # a runtime refuses the combined graph: each is run alone
            return {}
        out = {}
        for t in ready:
            got = prepared[t]
            assert got is not None
            out[t] = (xs[names_a[t]], ys[names_b[t]], got[0], got[2])
        return out

    @staticmethod
    def _as_type(value: np.ndarray, typed: tuple[int, int | None] | None) -> np.ndarray:
        if typed is None or value.dtype.kind != "f":
            return value
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(typed[0]))
        return value.astype(dtype) if dtype.kind == "f" and dtype != value.dtype else value

    def share(self, t: str, value: np.ndarray, final: float) -> float | None:
        """The final error ``t``'s own error explains: its alone-value fed to the reference
        side, run to the output."""
        if self.b_final is None or final == 0 or not math.isfinite(final):
            return None
        typed = self.types_b.get(t)
        fed = self._as_type(value, typed) if self.b.kind != SHADOW_KIND else \
            value.astype(np.float64) if value.dtype.kind == "f" else value
        model = sg.fed_from_outside(sg.prefix(self.model_b, [self.output]), t, fed)
        if t == self.output:
            out = fed
        else:
            try:
                out = run_side(self.b, model, {**self.inputs, t: fed}, [self.output])[
                    self.output]
            except Exception as e:  # a runtime may refuse the cut graph: say so, go on
                self.notes.append(f"the share of {t} could not be measured: "
                                  f"{type(e).__name__}: {str(e)[:160]}")
                return None
        err, _ = figure(out, self.b_final)
        return err / final if math.isfinite(err) else None


def _noisy(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20260)
    out = {}
    for k, x in inputs.items():
        if x.dtype.kind == "f":
            x = (x.astype(np.float64) * (1.0 + NOISE_RELATIVE * rng.standard_normal(x.shape))
                 ).astype(x.dtype)
        out[k] = x
    return out


def _same(a: np.ndarray | None, stored: np.ndarray | None) -> bool | None:
    if a is None or stored is None:
        return None
    return bool(a.shape == stored.shape and a.tobytes() == stored.astype(a.dtype).tobytes())


def localize_case(directory: Path, row: dict[str, Any]) -> tuple[Localization,
                                                                   dict[str, np.ndarray],
                                                                   bytes | None]:
    """Localize one observation (see the module docstring): the result, the tensors kept
    for the explorer, and the first origin's region as a model (its inputs among the
    tensors, ``repro/NAME``) for a repro."""
    start = time.perf_counter()
    verify_manifest(directory)
    record = read_case_record(directory)
    try:
        inputs = {name: load_array(directory, rel) for name, rel in record["inputs"].items()}
    except (KeyError, AttributeError) as e:
        raise ArtifactError(f"{directory / 'case.json'}: no inputs recorded ({e})") from e
    a, b = sides(directory, row, record)
    s = _Search(directory, row, a, b, inputs)
    window = s.window()
    if window:
        extra = [n for t in window for n in s.region_inputs(t) if n not in window]
        s.trace(window, list(dict.fromkeys(extra)), keep=True)
    started = time.perf_counter()
    origins, amplifiers, kept, repro = _judge(s, window)
    s.phases["alone_and_shares_s"] = time.perf_counter() - started
    s.passes.append({k: round(v, 3) for k, v in s.phases.items()})
    fig = s.figures.get(s.output)
    final = fig.scaled_error if fig is not None else math.nan
    instrumented = _instrumented(directory, s)
    loc = Localization(
        str(row.get("observation_id", "")), str(row.get("case_id", "")),
        str(row.get("check", "")), s.output, a.label, b.label, a.graph, b.graph,
        final, fig.threshold if fig is not None else math.nan, len(s.order),
        len(s.figures), s.passes,
        sorted(s.figures.values(), key=lambda f: f.position), origins, amplifiers,
        instrumented, "", time.perf_counter() - start, s.notes)
    loc = Localization(**{**loc.__dict__, "summary": summary(loc)})
    return loc, kept, repro


def _judge(s: _Search, window: list[str]
           ) -> tuple[list[NodeFinding], list[NodeFinding], dict[str, np.ndarray],
                      bytes | None]:
    diverging = [t for t in window if s.figures.get(t) is not None and s.figures[t].diverges]
    final_fig = s.figures.get(s.output)
    final = final_fig.scaled_error if final_fig is not None else math.nan
    origins: list[NodeFinding] = []
    amplifiers: list[NodeFinding] = []
    kept: dict[str, np.ndarray] = {}
    repro: bytes | None = None
    if len(diverging) > MAX_CANDIDATES:
        s.notes.append(f"{len(diverging)} tensors diverge in the stretch traced; the first "
                       f"{MAX_CANDIDATES} were run alone")
    alone_values: dict[str, np.ndarray] = {}
    feeds_of: dict[str, dict[str, np.ndarray]] = {}
    started = time.perf_counter()
    together = s.alone_together(diverging[:MAX_CANDIDATES])
    for t in diverging[:MAX_CANDIDATES]:
        try:
            got = together[t] if t in together else s.alone(t)
        except Exception as e:  # a runtime that cannot take the cut node: named, not fatal
            s.notes.append(f"{t} could not run alone: {type(e).__name__}: {str(e)[:160]}")
            continue
        if got is None:
            s.notes.append(f"{t}: an input of its node was not traced; not run alone")
            continue
        x, y, feeds, cast = got
        local, _ = figure(x, y)
        ra, _ = s.regions(t)
        graph = s.model_a.graph
        node = graph.node[ra[-1]] if ra else None
        fig = s.figures[t]
        ins = {n: s.figures[n].scaled_error for n in feeds if n in s.figures}
        in_err = max(ins.values(), default=0.0)
        gain = (fig.scaled_error / in_err if 0 < in_err < math.inf
                else 1.0 if in_err == fig.scaled_error else math.inf)
        name, op = (node.name or t, node.op_type) if node is not None else (t, "")
        fused = ""
        if len(ra) > 1:
            fused = s.made_by[0].get(t, "") or s.made_by[1].get(t, "")
            if fused:
                op, _, quoted = fused.partition(" ")
                name = quoted.strip("'") or name
        finding = NodeFinding(
            name, op, t, [f"{graph.node[i].op_type} {graph.node[i].name!r}" for i in ra], ins,
            in_err, fig.scaled_error, local, fig.threshold, gain, None, fused)
        if not math.isfinite(cast):
            # The reference's inputs do not fit the path's own type (a float16 overflow
            # already happened upstream): the node only carries what it was given.
            amplifiers.append(finding)
            _keep(kept, t, x, y, feeds, s)
            continue
        if local > fig.threshold:
            if node is not None and len(ra) == 1 and node.op_type in SUBGRAPH_OPS:
                s.notes.append(_inside_note(node, feeds))
            origins.append(finding)
            feeds_of[t] = {n: s.b_values.get(n, v) for n, v in feeds.items()}
            alone_values[t] = x
            if repro is None:
                repro = _repro_model(s, t, feeds, kept, x, y)
        else:
            amplifiers.append(finding)
        _keep(kept, t, x, y, feeds, s)
    origins = [_refine(s, o, feeds_of.get(o.tensor, {})) for o in origins[:MAX_SHARES]] + \
        origins[MAX_SHARES:]
    s.phases["alone_s"] = time.perf_counter() - started
    measured = []
    for o in sorted(origins, key=lambda o: -o.local_scaled_error)[:MAX_SHARES]:
        share = s.share(o.tensor, alone_values[o.tensor], final)
        measured.append(NodeFinding(**{**o.__dict__, "share": share}))
    by_tensor = {o.tensor: o for o in measured}
    origins = [by_tensor.get(o.tensor, o) for o in origins]
    return origins, amplifiers, kept, repro


def _inside_note(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> str:
    """Where inside an If, Loop or Scan origin its difference arises (which If branch ran,
    from the reference's condition)."""
    where = f"its {_BODY[node.op_type]}"
    if node.op_type == "If" and node.input and node.input[0] in feeds:
        cond = np.asarray(feeds[node.input[0]])
        if cond.size == 1:
            where = "its then_branch" if bool(cond.reshape(())) else "its else_branch"
    return (f"{node.name or node.output[0]} ({node.op_type}): the difference arises inside "
            f"{where}, a subgraph whose tensors are not traced; the {node.op_type} is "
            "localized as a unit (its repro is the whole node)")


def _refine(s: _Search, o: NodeFinding, feeds: dict[str, np.ndarray]) -> NodeFinding:
    """Inside an origin of several nodes (a runtime fused them, so their inner tensors were
    not compared end to end): the region runs alone again with its inner tensors marked;
    when that gives the region's output bit for bit on both paths (marking changed
    nothing), the first inner node whose own output differs from the reference's inputs
    is named (``within``)."""
    ra, rb = s.regions(o.tensor)
    if len(ra) < 2 or not feeds:
        return o
    graph = s.model_a.graph
    inner = [t for i in ra for t in graph.node[i].output if t and t != o.tensor
             and t in s.types_b and any(t in n.output for n in s.model_b.graph.node)]
    if not inner:
        return o
    if sum(s.size(t) for t in inner) > TRACE_BYTES:
        s.notes.append(f"inside {o.node}: its {len(inner)} inner tensors are more than "
                       f"{TRACE_BYTES >> 20} MiB, so they were not traced")
        return o
    try:
        feeds_a = {n: s._as_type(v, s.types_a.get(n)) for n, v in feeds.items()}
        feeds_b = {n: s._as_type(v, s.types_b.get(n)) if s.b.kind != SHADOW_KIND else v
                   for n, v in feeds.items()}
        wanted = [*inner, o.tensor]
        plain_a = run_side(s.a, sg.region_model(s.model_a, ra, [o.tensor], feeds_a), feeds_a,
                           [o.tensor])[o.tensor]
        plain_b = run_side(s.b, sg.region_model(s.model_b, rb, [o.tensor], feeds_b), feeds_b,
                           [o.tensor])[o.tensor]
        got_a = run_side(s.a, sg.region_model(s.model_a, ra, wanted, feeds_a), feeds_a, wanted)
        got_b = run_side(s.b, sg.region_model(s.model_b, rb, wanted, feeds_b), feeds_b, wanted)
    except Exception as e:  # a runtime that cannot take the marked region: keep the region
        s.notes.append(f"inside {o.node}: the marked region did not run ({type(e).__name__})")
        return o
    if not (_same(got_a[o.tensor], plain_a) and _same(got_b[o.tensor], plain_b)):
        s.notes.append(f"inside {o.node}: marking its inner tensors changes what the "
                       "runtime computes (the fusion is the difference): kept as one origin")
        return o
    produced = {t: i for i in ra for t in graph.node[i].output}
    values = {**feeds_b, **got_b}
    for t in inner:
        x, y = got_a[t], got_b[t]
        exact = x.dtype.kind in "iu" and y.dtype.kind in "iu"
        err, _ = figure(x, y)
        limit = 0.0 if exact else max(_rounding(x.dtype if x.dtype.kind == "f"
                                                else np.dtype("float32")), s.rounding)
        if err <= limit:
            continue
        node = graph.node[produced[t]]
        try:  # the inner node alone, from the reference's inner values
            reads = [r for r in sg.node_reads(node) if r in values]
            fa = {r: s._as_type(values[r], s.types_a.get(r)) for r in reads}
            alone_a = run_side(s.a, sg.region_model(s.model_a, [produced[t]], [t], fa), fa,
                               [t])[t]
            own, _ = figure(alone_a, y)
        except Exception:  # the inner node cannot run alone: name it from the marked run
            own = err
        if own > limit:
            word = f"{node.op_type} {node.name!r}"
            share = (f" ({int(np.sum(np.asarray(x) != np.asarray(y)))} of {np.asarray(x).size} "
                     "elements differ)" if exact else f" (scaled error {own:.2g})")
            s.notes.append(f"inside {o.node}: the difference first appears at {word}"
                           f"{share}, from the same inputs on both paths")
            return NodeFinding(**{**o.__dict__, "within": word})
    return o


def _keep(kept: dict[str, np.ndarray], t: str, x: np.ndarray, y: np.ndarray,
          feeds: dict[str, np.ndarray], s: _Search) -> None:
    """The tensors the explorer shows for a node: its inputs (the reference's values, and
    the path's own end to end) and its output alone and end to end, on both sides."""
    items = {f"{t}/alone/actual": x, f"{t}/alone/reference": y}
    if t in s.a_values:
        items[f"{t}/traced/actual"] = s.a_values[t]
    if t in s.b_values:
        items[f"{t}/traced/reference"] = s.b_values[t]
    for n, v in feeds.items():
        items[f"{t}/input/{n}"] = s.b_values.get(n, v)
        if n in s.a_values:
            items[f"{t}/input-traced/{n}"] = s.a_values[n]
    for k, v in items.items():
        if v.nbytes <= KEEP_TENSOR_BYTES and v.dtype.kind in "fiub":
            kept[k] = v


def _repro_model(s: _Search, t: str, feeds: dict[str, np.ndarray],
                 kept: dict[str, np.ndarray], output: np.ndarray,
                 expected: np.ndarray) -> bytes:
    ra, _ = s.regions(t)
    model = sg.region_model(s.model_a, ra, [t], feeds, name=f"gero-localize-{t}",
                            typed={t: output})
    for n, v in feeds.items():
        kept[f"repro/in/{n}"] = v
    kept[f"repro/out/{t}"] = expected
    return bytes(model.SerializeToString())


def _instrumented(directory: Path, s: _Search) -> dict[str, Any]:
    """Whether the traced runs give the observation's stored outputs again (marking
    tensors as outputs can change what a runtime fuses)."""
    out: dict[str, Any] = {}
    for name, side, got in (("actual", s.a, s.a_final), ("reference", s.b, s.b_final)):
        stored = None
        if side.stored and has_member(directory, side.stored):
            try:
                stored = load_array(directory, side.stored)
            except ArtifactError:
                stored = None
        same = _same(got, stored)
        out[f"{name}_bit_exact"] = same
        if same is False and got is not None and stored is not None:
            out[f"{name}_scaled_error_vs_stored"] = figure(got, stored)[0]
    if out.get("actual_bit_exact") is False or out.get("reference_bit_exact") is False:
        s.notes.append("a traced run does not give its path's stored output bit for bit "
                       "(tensors marked as outputs changed what the runtime computes, or "
                       "the runtime is not deterministic): see instrumented")
    return out


# ----------------------------------------------------------------------------- words
def summary(loc: Localization) -> str:
    """The result in a sentence or two."""
    f = loc.final_scaled_error
    if not loc.origins and not any(t.diverges for t in loc.tensors):
        final = next((t for t in loc.tensors if t.name == loc.output_name), None)
        tail = (f"; the output's own floor is {final.floor:.2g} (its sensitivity to 1e-7 "
                "relative input noise): a difference this size is what the reference does "
                "against itself" if final is not None and final.floor > 0 and
                f > _rounding(np.dtype("float32")) else "")
        return (f"nothing diverges: {loc.actual} and {loc.reference} agree at all "
                f"{len(loc.tensors)} tensors compared, within their noise floors "
                f"(final {loc.output_name}: scaled error {f:.2g}){tail}")
    if not loc.origins:
        return (f"{loc.output_name} differs by {f:.2g} scaled, but no node run alone makes "
                "a difference over its floor: the error builds up from many small ones "
                "(see tensors)")
    o = loc.origins[0]
    what = f"{o.node} ({o.op_type})"
    if o.op_type in SUBGRAPH_OPS and len(o.nodes) == 1:
        what = (f"the {o.op_type} node {o.node!r}, inside its {_BODY[o.op_type]} (tensors "
                f"inside a subgraph are not traced: the {o.op_type} is localized as a unit)")
    if o.fused_as:
        what = (f"{o.fused_as}, which fuses {len(o.nodes)} nodes ({_span(o.nodes)})")
    if o.within:
        what += f", first inside it at {o.within}"
    text = (f"the error enters at {what}: its inputs agree to {o.inputs_scaled_error:.2g} "
            f"scaled, its output differs by {o.local_scaled_error:.2g}")
    if o.share is not None:
        text += f" ({_share_text(o.share)} of the final {f:.2g})"
    after = [m for m in loc.amplifiers if loc_position(loc, m.tensor)
             > loc_position(loc, o.tensor)]
    growing = [m for m in after if m.gain > 1.5]
    if after and f < o.local_scaled_error:
        # Grown on the way or not, less of it reaches the output (a normalisation or a
        # softmax after it): "magnifies it to" a smaller figure would read backwards.
        text += f"; the nodes after it shrink it to {f:.2g} at the output"
    elif growing:
        names = [m.op_type or m.node for m in growing[:4]]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        verb = "magnifies" if len(names) == 1 else "magnify"
        text += f"; {listed} after it {verb} it to {f:.2g}"
    elif after:
        text += f"; the nodes after it carry it to {f:.2g}"
    if len(loc.origins) > 1:
        text += (f"; {len(loc.origins) - 1} more node(s) add error of their own: "
                 + ", ".join(f"{x.node} ({x.op_type})" for x in loc.origins[1:4]))
    return text


SUBGRAPH_OPS = ("If", "Loop", "Scan")
"""Operators whose work is done in subgraphs, which localize runs as one node."""
_BODY = {"If": "branch", "Loop": "body", "Scan": "body"}


def _span(nodes: list[str]) -> str:
    names = [n.split(" ", 1)[-1].strip("'") for n in nodes]
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share < 10 else f"{share:.3g}×"


def loc_position(loc: Localization, tensor: str) -> int:
    return next((t.position for t in loc.tensors if t.name == tensor), -1)


# ----------------------------------------------------------------------------- storage
def localize_path(directory: Path, observation_id: str) -> Path:
    return directory / LOCALIZE_DIR / f"{observation_id}.json"


def store_localization(directory: Path, loc: Localization, kept: dict[str, np.ndarray],
                       data_root: Path) -> Path:
    """Keep the result (and its nodes' tensors) beside the evidence, outside the manifest,
    each file whole or not at all (a full disk or a read-only root is one sentence)."""
    path = localize_path(directory, loc.observation_id)
    tensors = path.with_suffix(".npz")

    def save_tensors(name: str) -> None:
        with open(name, "wb") as f:
            save: Any = np.savez  # numpy's stubs type its keyword arrays as flags
            save(f, **{k.replace("/", "|"): v for k, v in kept.items()})

    if kept:
        store_beside_evidence(tensors, save_tensors, data_root)
    try:
        store_beside_evidence(path, json.dumps(loc.as_dict(), indent=2,
                                               default=_json_default).encode(), data_root)
    except GeroError:
        if kept and not path.exists():  # no result to go with the tensors just written
            tensors.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                path.parent.rmdir()
        raise
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def read_localization(directory: Path, observation_id: str) -> dict[str, Any] | None:
    """A stored localization, or None (an unreadable one counts as none)."""
    return read_json_object(localize_path(directory, observation_id))


def read_kept_tensors(directory: Path, observation_id: str) -> dict[str, np.ndarray]:
    """The tensors a localization kept for its nodes (empty when none were)."""
    path = localize_path(directory, observation_id).with_suffix(".npz")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k.replace("|", "/"): np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError):
        return {}


def _child(directory: str, row: dict[str, Any], scratch: str
           ) -> tuple[Localization, dict[str, np.ndarray], bytes | None, float]:
    import resource

    # Every temporary file of this process (its work folder, tract's copy of a graph) goes
    # into the caller's scratch directory, which the caller removes however this ends.
    tempfile.tempdir = scratch
    loc, kept, repro = localize_case(Path(directory), row)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return loc, kept, repro, peak


class LocalizeFailed(GeroError):
    """The child that runs the paths again did not finish: it crashed (a runtime aborted on
    a graph gero cut from the model), was killed, ran out of time or failed inside. Not bad
    input: exit status 1."""

    exit_code = 1


SCRATCH_PREFIX = "gero-localize-"
"""The scratch directory of a localization in $TMPDIR (``gero-localize-<pid>-…``)."""


def _localize_isolated(directory: Path, row: dict[str, Any], timeout_s: float,
                       cancelled: Callable[[], bool] | None
                       ) -> tuple[Localization, dict[str, np.ndarray], bytes | None, float]:
    """``_child`` in a child process, its temporary files in a scratch directory removed
    however it ends (a kill -9 of this process: by the next localization)."""
    from gero_runner.evidence.repro import SCRATCH_PREFIX as REPRO_SCRATCH
    from gero_runner.process import isolate, scratch

    oid = str(row.get("observation_id"))[:12]
    scratch.sweep(REPRO_SCRATCH)  # what a killed `gero localize -o` left
    try:
        work = scratch.make(SCRATCH_PREFIX)
    except OSError as e:
        raise GeroError(f"localizing {oid}: no scratch folder can be made in "
                        f"{tempfile.gettempdir()} ({e.strerror or e}); set TMPDIR to a "
                        "writable folder") from None
    try:
        got: tuple[Localization, dict[str, np.ndarray], bytes | None, float] = \
            isolate.call_isolated(_child, str(directory), row, str(work),
                                  timeout_s=timeout_s, cancelled=cancelled)
    except isolate.IsolatedFailure as e:
        if e.raised is not None and issubclass(e.raised, GeroError):  # bad evidence
            text = str(e).removeprefix(f"{e.raised.__name__}: ")
            raise GeroError(f"localizing {oid}: {text}") from None
        # crashed with SIGABRT, was killed (SIGKILL: ...), timed out after N s
        what = {isolate.RAISED: f"failed ({e})",
                isolate.CANCELLED: "was cancelled"}.get(e.kind, str(e))
        raise LocalizeFailed(f"localizing {oid}: the child process that runs the paths "
                             f"again {what}; nothing was stored") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return got


def localize_observation(data_root: Path, row: dict[str, Any], output: Path | None = None,
                         timeout_s: float = DEFAULT_TIMEOUT_S,
                         cancelled: Callable[[], bool] | None = None) -> tuple[Localization,
                                                                              Path]:
    """Localize the observation ``row`` (a full row) in a child process (a runtime may
    crash on a cut graph), store the result, and with ``output`` write the first origin as
    a repro directory; (localization, stored file)."""
    directory = evidence_directory(data_root, row)
    if output is not None:
        refuse_unusable_directory(output)
    verify_manifest(directory)  # here too: bad evidence is one sentence, before any child
    check_writable(data_root, directory)  # the result is stored there: refused before work
    sides(directory, row, read_case_record(directory))
    loc, kept, repro, peak = _localize_isolated(directory, row, timeout_s, cancelled)
    loc = Localization(**{**loc.__dict__, "notes": [*loc.notes]})
    loc.passes.append({"peak_rss_mb": round(peak, 1)})
    if output is not None:
        if repro is None:
            raise GeroError(f"-o {output}: no origin was found, so there is no node to "
                            f"write as a repro ({loc.summary})")
        from gero_runner.evidence.repro import write_repro

        feeds = {k.removeprefix("repro/in/"): v for k, v in kept.items()
                 if k.startswith("repro/in/")}
        expected = {k.removeprefix("repro/out/"): v for k, v in kept.items()
                    if k.startswith("repro/out/")}
        try:
            write_repro(output, repro, feeds, expected, loc, row, timeout_s)
        except OSError as e:
            raise output_error(output, e) from None
        loc = Localization(**{**loc.__dict__, "repro": str(output)})
    return loc, store_localization(directory, loc, kept, data_root)
