"""The search: the two sides traced tensor by tensor in topological order, matched by name,
to the first tensors where they part, and each such tensor's region (the node that makes
it, or the nodes a runtime fused into it) run alone on both sides from the reference's
values.

Only the tensors that survive both sides' own rewrites are compared (marking a fused-away
tensor as an output would undo the fusion being localized). Bounded: at most
``TRACE_BYTES`` of intermediates per side at once; a model whose compared tensors are larger
is traced at checkpoints spread over the graph first, then the stretch between the last
agreeing and the first diverging checkpoint, until a stretch fits."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner.evidence import subgraphs as sg
from gero_runner.evidence.localization import Side, TensorFigure
from gero_runner.evidence.localize.bounds import (
    DEQUANTIZED,
    FLOOR_FACTOR,
    ROUNDED,
    SHADOW_KIND,
    TRACE_BYTES,
)
from gero_runner.evidence.localize.figures import figure, rounding, with_noise
from gero_runner.evidence.localize.producers import Renamed, renamed, sentence
from gero_runner.evidence.localize.sides import (
    load_graph,
    run_side,
    run_side_each,
    side_rounding,
    survivors,
)
from gero_runner.models.shadow import needs_dequantizing

INTEGER_MADE = ("MatMulInteger", "ConvInteger")
"""Operators whose output is an integer accumulator (the shadow's is in real units)."""


def dequantized_meanings(graph: onnx.GraphProto) -> set[str]:
    """The tensors of ``graph`` the dequantized float64 shadow computes with another
    meaning: DynamicQuantizeLinear's outputs (the identity, scale 1, zero point 0 there),
    the integer accumulators of ``INTEGER_MADE``, and what is made only from those and
    weights (a Cast of the accumulator, the product of two scales). A node that reads both
    an accumulator and a scale (the Mul that dequantizes) is back in real units on both
    sides."""
    weights = {t.name for t in graph.initializer}
    weights |= {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    counts, scales = set(), set()  # integer-domain tensors; scale / zero-point tensors
    for node in graph.node:
        if node.op_type == "DynamicQuantizeLinear" and node.domain in ("", "ai.onnx"):
            counts.update(node.output[:1])
            scales.update(node.output[1:])
            continue
        if node.op_type in INTEGER_MADE and node.domain in ("", "ai.onnx"):
            counts.update(node.output)
            continue
        reads = [r for r in node.input if r and r not in weights]
        if not reads:
            continue
        if all(r in counts for r in reads):
            counts.update(node.output)
        elif all(r in scales for r in reads):
            scales.update(node.output)
    return (counts | scales) - {""}


def declared_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Each tensor's type as ONNX shape inference gives it in the whole ``model``, symbolic
    dimensions kept (empty where inference fails: a region is then typed by its feeds)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an operator inference does not know, a model over 2 GiB
        return {}
    graph = inferred.graph
    return {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]
            if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")}


def as_declared(cut: onnx.ModelProto, declared: dict[str, onnx.TypeProto]) -> onnx.ModelProto:
    """``cut`` (a region as a model) with each input's dimensions as the whole model declares
    them: a dimension the whole model leaves symbolic is symbolic again. A runtime may
    compute a region of static shape otherwise: OpenVINO fuses a QuantizeLinear →
    DequantizeLinear → Add of dynamic shape (at scale 1.3e36 it makes −4e28 where 0 is
    right) but computes the same nodes of static shape exactly, so a region fed fixed shapes
    would not show what the traced run did."""
    for vi in cut.graph.input:
        want = declared.get(vi.name)
        if want is None or want.tensor_type.elem_type != vi.type.tensor_type.elem_type:
            continue
        dims, wanted = vi.type.tensor_type.shape.dim, want.tensor_type.shape.dim
        if len(dims) != len(wanted):
            continue
        for dim, w in zip(dims, wanted, strict=True):
            if w.HasField("dim_value"):
                continue  # fixed in the whole model too
            dim.Clear()
            if w.HasField("dim_param"):
                dim.dim_param = w.dim_param
    return cut


class Search:
    """One observation's two sides, what was traced of them and the figures so far."""

    def __init__(self, directory: Path, row: dict[str, Any], a: Side, b: Side,
                 inputs: dict[str, np.ndarray]) -> None:
        self.directory, self.row, self.a, self.b = directory, row, a, b
        self.inputs = inputs
        self.model_a = load_graph(directory, a.graph)
        self.model_b = self.model_a if b.graph == a.graph else load_graph(directory, b.graph)
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
        self.declared_a = declared_types(self.model_a)
        self.declared_b = (self.declared_a if self.model_b is self.model_a
                           else declared_types(self.model_b))
        self.explained: float | None = None
        """The final error the named origins explain, their measured shares added."""
        self.traced_limit: float | None = None
        """How far the traced output may be from the stored one and still be the row's run
        (the output's threshold with the path's own precision; ``retrace``)."""
        self.shares: dict[str, float | None] = {}
        """Each origin's measured share (``share``), by tensor."""
        self.unaccounted: list[str] = []
        """Diverging tensors no node's own run, nor what it receives, accounts for."""
        self.widened: dict[str, set[str]] = {}
        """Per diverging tensor, the compared tensors its region is run across (``widen``)."""
        made_b = {o for n in self.model_b.graph.node for o in n.output}
        self.unlike: set[str] = set()
        """Tensors one side computes with another meaning (the dequantized shadow's scale 1
        and float accumulators): neither compared nor a region's edge."""
        if b.kind == SHADOW_KIND and b.backend != ROUNDED and needs_dequantizing(self.model_b):
            self.unlike = dequantized_meanings(self.model_b.graph)
            # A region cut from the model lacks the com.microsoft operators that make the
            # shadow dequantize: it is told to, so a region alone computes as the trace did.
            self.b = b = replace(b, settings={**b.settings, DEQUANTIZED: True})
        if self.unlike:
            self.notes.append(f"{len(self.unlike)} quantisation tensors (integers, scales, "
                              "zero points, and what is made only from them) are not "
                              "compared: the float64 arbiter computes DynamicQuantizeLinear "
                              "as the identity (scale 1), so they differ by construction")
        self.renamed: list[Renamed] = []
        """Tensors of one name the two graphs make with different operators (a builder
        folded a node away): neither compared nor a region's edge."""
        if self.model_b is not self.model_a:
            both = [t for n in self.model_a.graph.node for t in n.output
                    if t and t in made_b and t not in self.unlike]
            self.renamed = renamed(self.model_a, self.model_b, both)
            if self.renamed:
                self.notes.append(sentence(self.renamed, a.graph, b.graph))
        skipped = self.unlike | {r.tensor for r in self.renamed}
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
                if not t or t not in made_b or t in skipped:
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
        b, noisy = run_side_each(self.b, model_b, [self.inputs, with_noise(self.inputs)],
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
            threshold = 0.0 if exact else max(FLOOR_FACTOR * floor, rounding(own),
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
        stop = self.available - {t} - self.widened.get(t, set())
        ra = sg.region(self.model_a.graph, t, stop)
        rb = (ra if self.model_b is self.model_a
              else sg.region(self.model_b.graph, t, stop))
        return ra, rb

    def trace_more(self, names: list[str]) -> None:
        """Both sides' values of ``names`` (region inputs a widened region reads), kept
        beside the traced ones."""
        wanted = [n for n in dict.fromkeys(names)
                  if n not in self.inputs and (n not in self.b_values or n not in self.a_values)]
        if not wanted:
            return
        model_b = sg.prefix(self.model_b, wanted)
        self.b_values.update(run_side(self.b, model_b, self.inputs, wanted))
        model_a = model_b if self.model_a is self.model_b else sg.prefix(self.model_a, wanted)
        self.a_values.update(run_side(self.a, model_a, self.inputs, wanted))

    def propagated(self, t: str, y: np.ndarray) -> float | None:
        """What ``t``'s own region makes of the difference it receives: the reference side's
        region fed the path's own values of its inputs, against ``y`` (the same region fed
        the reference's). None where an input's path value was not traced or the run
        fails."""
        _, rb = self.regions(t)
        feeds: dict[str, np.ndarray] = {}
        for n in self.region_inputs(t):
            value = self.a_values.get(n, self.inputs.get(n))
            if value is None:
                return None
            feeds[n] = (self.as_type(value, self.types_b.get(n)) if self.b.kind != SHADOW_KIND
                        else value)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                got = run_side(self.b, self.cut_b(rb, [t], feeds), feeds, [t])[t]
        except Exception:  # a runtime that refuses the path's values: not measured
            return None
        return figure(got, y)[0]

    def widen(self, t: str, threshold: float, steps: int = 4, most: int = 64
              ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], float] | None:
        """``t``'s region run alone again across the compared tensors it reads, one step
        back at a time (at most ``steps``, ``most`` nodes), until its own output differs
        over ``threshold``: where a side rewrites nodes together (a QuantizeLinear →
        DequantizeLinear pair folded into the Add after it), a tensor between them reads
        back the same when marked as an output, but is not what the side computes with.
        The region found stays in ``widened``; None (and ``widened`` unchanged) where no
        step shows the difference."""
        made = sg.producers(self.model_a.graph)
        crossed = set(self.widened.get(t, set()))
        for _ in range(steps):
            ra, _ = self.regions(t)
            across = {n for n in sg.region_inputs(self.model_a.graph, ra)
                      if n in made and n in self.available}
            if not across:
                break
            crossed |= across
            self.widened[t] = crossed
            ra, _ = self.regions(t)
            if len(ra) > most:
                break
            try:
                self.trace_more(self.region_inputs(t))
                got = self.alone(t)
            except Exception:  # a runtime that cannot take the widened region: stop here
                break
            if got is not None and figure(got[0], got[1])[0] > threshold:
                return got
        self.widened.pop(t, None)
        return None

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
        feeds_b = {n: self.as_type(v, self.types_b.get(n)) if self.b.kind != SHADOW_KIND
                   else v for n, v in feeds.items()}
        with np.errstate(over="ignore", invalid="ignore"):
            feeds_a = {n: self.as_type(v, self.types_a.get(n)) for n, v in feeds.items()}
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
        model_a = self.cut_a(ra, [t], feeds_a)
        model_b = self.cut_b(rb, [t], feeds_b)
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
        model_a, model_b = as_declared(model_a, self.declared_a), as_declared(model_b,
                                                                              self.declared_b)
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

    def cut_a(self, nodes: list[int], outputs: list[str], feeds: dict[str, np.ndarray]
              ) -> onnx.ModelProto:
        """The path's region ``nodes`` as a model, its inputs typed as the whole model
        declares them (``as_declared``)."""
        return as_declared(sg.region_model(self.model_a, nodes, outputs, feeds), self.declared_a)

    def cut_b(self, nodes: list[int], outputs: list[str], feeds: dict[str, np.ndarray]
              ) -> onnx.ModelProto:
        """The reference's region ``nodes`` as a model (as ``cut_a``)."""
        return as_declared(sg.region_model(self.model_b, nodes, outputs, feeds), self.declared_b)

    @staticmethod
    def as_type(value: np.ndarray, typed: tuple[int, int | None] | None) -> np.ndarray:
        if typed is None or value.dtype.kind != "f":
            return value
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(typed[0]))
        return value.astype(dtype) if dtype.kind == "f" and dtype != value.dtype else value

    def share(self, t: str, value: np.ndarray, final: float) -> float | None:
        """The final error ``t``'s own error explains: its alone-value fed to the reference
        side, run to the output (measured once per tensor)."""
        if t not in self.shares:
            self.shares[t] = self._share(t, value, final)
        return self.shares[t]

    def _share(self, t: str, value: np.ndarray, final: float) -> float | None:
        if self.b_final is None or final == 0 or not math.isfinite(final):
            return None
        typed = self.types_b.get(t)
        fed = self.as_type(value, typed) if self.b.kind != SHADOW_KIND else \
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
