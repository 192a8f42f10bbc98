"""The judgement, once the search has found where the sides part: each diverging tensor's
region run alone from the reference's values is an origin when its own output differs over
its threshold (the error enters there), an amplifier when it only carries or magnifies
what it received; an origin's share of the final error (its alone-output fed into the
reference side, run to the output); where none is an origin, the error builds up from many
small ones. And the result in a sentence or two (``summary``)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner.errors import ArtifactError
from gero_runner.evidence import subgraphs as sg
from gero_runner.evidence.localization import Localization, NodeFinding
from gero_runner.evidence.localize.bounds import (
    ACCOUNTED,
    BODY,
    KEEP_TENSOR_BYTES,
    MAX_CANDIDATES,
    MAX_SHARES,
    RUNTIME,
    SHADOW_KIND,
    SUBGRAPH_OPS,
    TRACE_BYTES,
)
from gero_runner.evidence.localize.figures import bit_exact, figure, rounding
from gero_runner.evidence.localize.search import Search
from gero_runner.evidence.localize.sides import run_side
from gero_runner.evidence.rewrites import PrecisionRewrite, node_label, side_precision_rewrite
from gero_runner.storage.artifacts import has_member, load_array


def judge(s: Search, window: list[str]
          ) -> tuple[list[NodeFinding], list[NodeFinding], dict[str, np.ndarray],
                     bytes | None]:
    """The origins and amplifiers among the diverging tensors of ``window`` (traced), the
    tensors kept for the explorer, and the first origin's region as a model for a repro."""
    diverging = [t for t in window if s.figures.get(t) is not None and s.figures[t].diverges]
    final_fig = s.figures.get(s.output)
    final = final_fig.scaled_error if final_fig is not None else math.nan
    origins: list[NodeFinding] = []
    amplifiers: list[NodeFinding] = []
    kept: dict[str, np.ndarray] = {}
    repro: bytes | None = None
    candidates = diverging[:MAX_CANDIDATES]
    if len(diverging) > MAX_CANDIDATES:
        sharp = _sharp(s, diverging[MAX_CANDIDATES:])
        candidates = sorted([*candidates, *sharp], key=lambda t: s.position.get(t, -1))
        also = (f", and {len(sharp)} sharp one(s) after them ({', '.join(sharp)}: non-finite "
                "where the reference is finite, or a sudden jump over what they read)"
                if sharp else "")
        s.notes.append(f"{len(diverging)} tensors diverge in the stretch traced; the first "
                       f"{MAX_CANDIDATES} were run alone{also}")
    alone_values: dict[str, np.ndarray] = {}
    unaccounted: list[str] = []
    feeds_of: dict[str, dict[str, np.ndarray]] = {}
    started = time.perf_counter()
    together = s.alone_together(candidates)
    for t in candidates:
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
        fig = s.figures[t]
        propagated = None
        if math.isfinite(cast) and local <= fig.threshold:
            # No difference of its own: the difference it receives, through its own run,
            # must account for what it shows end to end; where it does not, the path
            # computes the region together with nodes before it (a rewrite across a
            # tensor that reads back the same): the region is widened across them.
            propagated = s.propagated(t, y)
            if propagated is None or propagated + local < ACCOUNTED * fig.scaled_error:
                widened = s.widen(t, fig.threshold)
                if widened is not None:
                    x, y, feeds, cast = widened
                    local, propagated = figure(x, y)[0], None
                elif propagated is not None:
                    unaccounted.append(t)
        ra, _ = s.regions(t)
        graph = s.model_a.graph
        node = graph.node[ra[-1]] if ra else None
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
        role = ""
        if local <= fig.threshold or not math.isfinite(cast):
            role = carrying_role(op, propagated, in_err)
        finding = NodeFinding(
            name, op, t, [node_label(graph.node[i]) for i in ra], ins,
            in_err, fig.scaled_error, local, fig.threshold, gain, None, fused, "", role,
            propagated, sorted(s.widened.get(t, set())))
        if not math.isfinite(cast):
            # The reference's inputs do not fit the path's own type (a float16 overflow
            # already happened upstream): the node only carries what it was given.
            amplifiers.append(finding)
            _keep(kept, t, x, y, feeds, s)
            continue
        if local > fig.threshold:
            if finding.widened:
                s.notes.append(_widened_note(s, finding))
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
    # A non-finite origin first: it is refined (and its share measured) whatever its place.
    origins = sorted(origins, key=lambda o: not math.isinf(o.local_scaled_error))
    origins = [_refine(s, o, feeds_of.get(o.tensor, {})) for o in origins[:MAX_SHARES]] + \
        origins[MAX_SHARES:]
    origins = sorted(origins, key=lambda o: s.position.get(o.tensor, -1))
    s.phases["alone_s"] = time.perf_counter() - started
    origins = _sharp_first(_measured_origins(s, origins, alone_values, final))
    origins = _with_causes(s, origins)
    if not origins and unaccounted:
        s.notes.append(f"{', '.join(unaccounted[:4])}: no node run alone makes a difference "
                       "over its floor, and what each receives, through its own run, does not "
                       "account for what it shows (even run together with up to four steps "
                       "of nodes before it): not localized")
    s.unaccounted.extend(unaccounted)
    return origins, amplifiers, kept, repro


def _measured_origins(s: Search, origins: list[NodeFinding],
                      alone_values: dict[str, np.ndarray], final: float) -> list[NodeFinding]:
    """The origins with their shares measured (the ``MAX_SHARES`` largest), less those whose
    share is over ``MAX_SHARE`` (named in a note instead)."""
    measured = []
    for o in sorted(origins, key=lambda o: -o.local_scaled_error)[:MAX_SHARES]:
        share = s.share(o.tensor, alone_values[o.tensor], final)
        measured.append(NodeFinding(**{**o.__dict__, "share": share}))
    by_tensor = {o.tensor: o for o in measured}
    out = []
    for o in (by_tensor.get(o.tensor, o) for o in origins):
        if o.share is not None and o.share > MAX_SHARE:
            s.notes.append(f"{o.tensor} ({o.op_type}) differs by {o.local_scaled_error:.2g} "
                           f"run alone, but fed to {s.b.label} it makes {o.share:.3g}× the "
                           "final error: the two sides do not compute it with the same "
                           "meaning, so it is not named as an origin")
            continue
        out.append(o)
    return out


def carrying_role(op: str, propagated: float | None, in_err: float) -> str:
    """'amplifier' only where the node's own run shows the gain (the difference it makes of
    the one it receives is larger than that one) and the node computes: one that only moves
    data (``DATA_MOVEMENT``) raises its scaled error only by keeping a part with a smaller
    max|r| (a Gather of one row), so it is a 'carrier'."""
    own_gain = (propagated / in_err if propagated is not None
                and 0 < in_err < math.inf and math.isfinite(propagated) else 0.0)
    return "amplifier" if own_gain > 1 and op not in DATA_MOVEMENT else "carrier"


MAX_SHARE = 1.5
"""An origin whose share of the final error is over this (its alone-difference, fed to the
reference, makes more error than the row shows) is comparing different things (a scale the
dequantized shadow computes as 1): not named. Some room over 1: the rest of the graph is
not linear, and a right origin measured 1.02 (tashkeel OV bf16 vs f32)."""
DATA_MOVEMENT = frozenset({"Squeeze", "Unsqueeze", "Reshape", "Gather", "Transpose", "Slice",
                           "Concat", "Identity", "Flatten"})
"""Operators that move values without computing: never amplifiers, only carriers."""

SHARP_JUMP = 10.0
"""A diverging tensor whose error is this many times what its region reads jumps there."""
MAX_SHARP = 2
"""Sharp tensors after the first ``MAX_CANDIDATES`` also run alone."""


def _sharp(s: Search, later: list[str]) -> list[str]:
    """Among diverging tensors past the first ``MAX_CANDIDATES``, the ones where the error
    turns sharp: the first non-finite where the reference is finite (an inf-scale
    quantisation of a mask), then the largest jumps over what their regions read: many
    small differences before them must not hide them."""
    picked: list[str] = []
    first_bad = next((t for t in later if s.figures[t].nonfinite), None)
    if first_bad is not None:
        picked.append(first_bad)
    jumps: list[tuple[float, str]] = []
    for t in later:
        if t in picked or s.figures[t].nonfinite:
            continue
        read = [s.figures[n].scaled_error for n in s.region_inputs(t) if n in s.figures]
        before = max(read, default=0.0)
        err = s.figures[t].scaled_error
        if math.isfinite(err) and err > SHARP_JUMP * before:
            jumps.append((err / before if before > 0 else math.inf, t))
    picked += [t for _, t in sorted(jumps, key=lambda j: -j[0])[:MAX_SHARP - len(picked)]]
    return picked


def _sharp_first(origins: list[NodeFinding]) -> list[NodeFinding]:
    """Origins in topological order, except that a sharp one comes first: one whose own run
    is non-finite where the reference is finite, then one that alone explains most of the
    final error (its share at least ``ACCOUNTED``), then one whose own difference is
    ``SHARP_JUMP`` times the first's. A small finite difference earlier (a quantised
    embedding's 0.005) is not where a row's error comes from (tract's int8 MatMul after it,
    0.24 alone)."""
    first = origins[0].local_scaled_error if origins else 0.0

    def rank(o: NodeFinding) -> int:
        if math.isinf(o.local_scaled_error):
            return 0
        if o.share is not None and o.share >= ACCOUNTED:
            return 1
        return 2 if o.local_scaled_error >= SHARP_JUMP * first else 3
    return sorted(origins, key=rank)


def _widened_note(s: Search, o: NodeFinding) -> str:
    across = ", ".join(o.widened[:4])
    return (f"{o.tensor}: run alone from {across} (which read back the same on both sides "
            f"when marked as outputs), its nodes agree; run as one with the nodes that make "
            f"{across} ({len(o.nodes)} nodes: {_span(o.nodes)}), they differ by "
            f"{o.local_scaled_error:.2g}: {s.a.label} does not compute with {across} as it "
            "reads back (it rewrites those nodes together)")


def _with_causes(s: Search, origins: list[NodeFinding]) -> list[NodeFinding]:
    """Each origin with what the path's own optimised graph does to it: a precision rewrite
    (its float16 nodes computed in float32 between inserted Casts) that covers the origin's
    nodes on one side and not on the other is named as the cause."""
    if not origins:
        return origins
    rewrites = []
    for side, model in ((s.a, s.model_a), (s.b, s.model_b)):
        try:
            found = (side_precision_rewrite(side.backend, side.settings, model)
                     if side.kind == RUNTIME else None)
        except Exception:  # a runtime that cannot write its graph again: nothing to read
            found = None
        rewrites.append((side, found))
    out = []
    for o in origins:
        cause = ""
        covering = [(side, rw) for side, rw in rewrites
                    if rw is not None and set(o.nodes) & set(rw.nodes)]
        if len(covering) == 1:
            side, rw = covering[0]
            mine = [n for n in rw.nodes if n in o.nodes]
            ra, _ = s.regions(o.tensor)
            inside = {t for i in ra for t in s.model_a.graph.node[i].output}
            cause = PrecisionRewrite(mine, [t for t in rw.skipped if t in inside],
                                     rw.casts_inserted).sentence(side.label)
        if cause:
            # Named by the user's node: the node that writes the tensor in the rewritten
            # graph is a Cast the runtime inserted, not one of the user's.
            last = s.model_a.graph.node[ra[-1]] if ra else None
            o = NodeFinding(**{**o.__dict__, "cause": cause, "fused_as": "",
                               "node": (last.name or o.tensor) if last else o.node,
                               "op_type": last.op_type if last else o.op_type})
        out.append(o)
    return out


def _inside_note(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> str:
    """Where inside an If, Loop or Scan origin its difference arises (which If branch ran,
    from the reference's condition)."""
    where = f"its {BODY[node.op_type]}"
    if node.op_type == "If" and node.input and node.input[0] in feeds:
        cond = np.asarray(feeds[node.input[0]])
        if cond.size == 1:
            where = "its then_branch" if bool(cond.reshape(())) else "its else_branch"
    return (f"{node.name or node.output[0]} ({node.op_type}): the difference arises inside "
            f"{where}, a subgraph whose tensors are not traced; the {node.op_type} is "
            "localized as a unit (its repro is the whole node)")


def _refine(s: Search, o: NodeFinding, feeds: dict[str, np.ndarray]) -> NodeFinding:
    """Inside an origin of several nodes (a runtime fused them, so their inner tensors were
    not compared end to end): the region runs alone again with its inner tensors marked;
    when that gives the region's output bit for bit on both paths (marking changed
    nothing), the first inner node whose own output differs from the reference's inputs
    is named (``within``)."""
    ra, rb = s.regions(o.tensor)
    if len(ra) < 2 or not feeds:
        return o
    if math.isinf(o.local_scaled_error):
        return _first_nan(s, o, feeds)
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
        feeds_a = {n: s.as_type(v, s.types_a.get(n)) for n, v in feeds.items()}
        feeds_b = {n: s.as_type(v, s.types_b.get(n)) if s.b.kind != SHADOW_KIND else v
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
    if not (bit_exact(got_a[o.tensor], plain_a) and bit_exact(got_b[o.tensor], plain_b)):
        s.notes.append(f"inside {o.node}: marking its inner tensors changes what the "
                       "runtime computes (the fusion is the difference): kept as one origin")
        return o
    produced = {t: i for i in ra for t in graph.node[i].output}
    values = {**feeds_b, **got_b}
    for t in inner:
        x, y = got_a[t], got_b[t]
        exact = x.dtype.kind in "iu" and y.dtype.kind in "iu"
        err, _ = figure(x, y)
        limit = 0.0 if exact else max(rounding(x.dtype if x.dtype.kind == "f"
                                                else np.dtype("float32")), s.rounding)
        if err <= limit and not (o.widened and _elementwise(x, y) > max(limit, GROSS)):
            # Inside a widened region element by element too: a difference small against
            # the tensor's largest value (x + 0 become -4.7e30 beside a -1.7e38 mask) is
            # still where the region first parts.
            continue
        node = graph.node[produced[t]]
        try:  # the inner node alone, from the reference's inner values
            reads = [r for r in sg.node_reads(node) if r in values]
            fa = {r: s.as_type(values[r], s.types_a.get(r)) for r in reads}
            alone_a = run_side(s.a, sg.region_model(s.model_a, [produced[t]], [t], fa), fa,
                               [t])[t]
            own, _ = figure(alone_a, y)
        except Exception:  # the inner node cannot run alone: name it from the marked run
            own = err
        word = node_label(node)
        if own > limit:
            share = (f" ({int(np.sum(np.asarray(x) != np.asarray(y)))} of {np.asarray(x).size} "
                     "elements differ)" if exact else f" (scaled error {own:.2g})")
            s.notes.append(f"inside {o.node}: the difference first appears at {word}"
                           f"{share}, from the same inputs on both paths")
            return NodeFinding(**{**o.__dict__, "within": word})
        if o.widened:
            # Alone it agrees; inside the region run as one it is the first to differ: the
            # path computes it together with the nodes before it.
            s.notes.append(f"inside the region of {o.tensor}: the first tensor that differs "
                           f"is {t} of {word} (scaled error {err:.2g}; element by element "
                           f"up to {_elementwise(x, y):.2g} of its own size), which run alone from "
                           "the same inputs agrees: the path computes it together with the "
                           "nodes before it")
            return NodeFinding(**{**o.__dict__, "within": word})
    return o


def _first_nan(s: Search, o: NodeFinding, feeds: dict[str, np.ndarray]) -> NodeFinding:
    """Inside a non-finite origin of several nodes: the first node of the path's graph whose
    output holds NaN where none of its inputs does (a DequantizeLinear with an inf scale
    makes 0 × inf), named ``within``; its tensor may be one the reference's graph lacks."""
    ra, _ = s.regions(o.tensor)
    graph = s.model_a.graph
    inner = [t for i in ra for t in graph.node[i].output if t]
    try:
        fa = {n: s.as_type(v, s.types_a.get(n)) for n, v in feeds.items()}
        got = {**fa, **run_side(s.a, sg.region_model(s.model_a, ra, inner, fa), fa, inner)}
    except Exception as e:  # a runtime that cannot take the marked region: keep the region
        s.notes.append(f"inside {o.node}: the marked region did not run ({type(e).__name__})")
        return o

    def nans(name: str) -> int:
        v = np.asarray(got.get(name, np.zeros(0)))
        return int(np.isnan(v).sum()) if v.dtype.kind == "f" else 0
    for i in ra:
        node = graph.node[i]
        made = next((t for t in node.output if t and nans(t)), None)
        if made is None or any(nans(r) for r in sg.node_reads(node)):
            continue
        word = node_label(node)
        s.notes.append(f"inside {o.node}: NaN first appears at {word} ({nans(made)} of "
                       f"{np.asarray(got[made]).size} elements of {made}), whose inputs hold "
                       "none")
        return NodeFinding(**{**o.__dict__, "within": word})
    return o


GROSS = 1e-2
"""An element this far off its own size is a gross difference, not a rounding."""


def _elementwise(x: np.ndarray, y: np.ndarray) -> float:
    """The largest difference of one element against that element's own size (a floor of
    1e-3 of the tensor's 10th-percentile size for elements near zero); 0 for integers or
    shapes that differ (``figure`` judges those)."""
    a, r = np.asarray(x), np.asarray(y)
    if a.shape != r.shape or a.dtype.kind != "f" or r.dtype.kind != "f" or a.size == 0:
        return 0.0
    a, r = a.astype(np.float64), r.astype(np.float64)
    both = np.isfinite(a) & np.isfinite(r)
    if not both.any():
        return 0.0
    size = np.abs(r[both])
    floor = 1e-3 * float(np.percentile(size, 10)) + 1e-30
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.max(np.abs(a[both] - r[both]) / (size + floor)))


def _keep(kept: dict[str, np.ndarray], t: str, x: np.ndarray, y: np.ndarray,
          feeds: dict[str, np.ndarray], s: Search) -> None:
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


def _repro_model(s: Search, t: str, feeds: dict[str, np.ndarray],
                 kept: dict[str, np.ndarray], output: np.ndarray,
                 expected: np.ndarray) -> bytes:
    ra, _ = s.regions(t)
    model = sg.region_model(s.model_a, ra, [t], feeds, name=f"gero-localize-{t}",
                            typed={t: output})
    for n, v in feeds.items():
        kept[f"repro/in/{n}"] = v
    kept[f"repro/out/{t}"] = expected
    return bytes(model.SerializeToString())


def instrumented(directory: Path, s: Search) -> dict[str, Any]:
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
        same = bit_exact(got, stored)
        out[f"{name}_bit_exact"] = same
        if same is False and got is not None and stored is not None:
            out[f"{name}_scaled_error_vs_stored"] = figure(got, stored)[0]
    if out.get("actual_bit_exact") is False or out.get("reference_bit_exact") is False:
        s.notes.append("a traced run does not give its path's stored output bit for bit "
                       "(tensors marked as outputs changed what the runtime computes, or "
                       "the runtime is not deterministic): see instrumented")
    return out


# ----------------------------------------------------------------------------- words
def summary(loc: Localization, gate: str = "", stored: float | None = None) -> str:
    """The result in a sentence or two (``gate``: the row's own verdict; ``stored``: the
    row's own scaled error, which a failed row's traced run may not give again)."""
    f = loc.final_scaled_error
    if loc.within_gate:
        said = f" ({gate})" if gate else ""
        return (f"within its gate: the row passed{said}; {loc.output_name} differs by "
                f"{f:.2g} scaled, a difference its check allows, so no origin is named "
                "(the tensors are traced: see tensors)")
    if not loc.origins and not any(t.diverges for t in loc.tensors) and gate:
        # A failed row: never "nothing diverges"; why it cannot be localized, precisely.
        again = ""
        if stored is not None and not (0.5 * stored <= f <= 2 * stored):
            again = (f"; the traced run does not give the stored run again ({loc.actual}'s "
                     f"output differs by {f:.2g} scaled with its tensors marked as outputs, "
                     f"{stored:.2g} in the run: marking them changes what it computes)")
        return (f"not localized: the row failed ({gate}), but {loc.actual} and "
                f"{loc.reference} agree at all {len(loc.tensors)} tensors compared within "
                f"float32's roundings and their noise floors (final {loc.output_name}: "
                f"scaled error {f:.2g}){again}")
    if not loc.origins and not any(t.diverges for t in loc.tensors):
        final = next((t for t in loc.tensors if t.name == loc.output_name), None)
        tail = (f"; the output's own floor is {final.floor:.2g} (its sensitivity to 1e-7 "
                "relative input noise): a difference this size is what the reference does "
                "against itself" if final is not None and final.floor > 0 and
                f > rounding(np.dtype("float32")) else "")
        return (f"nothing diverges: {loc.actual} and {loc.reference} agree at all "
                f"{len(loc.tensors)} tensors compared, within their noise floors "
                f"(final {loc.output_name}: scaled error {f:.2g}){tail}")
    if not loc.origins:
        if loc.unaccounted:
            return (f"{loc.output_name} differs by {f:.2g} scaled, but no node run alone makes "
                    "a difference over its floor, and what the diverging nodes receive does "
                    f"not account for theirs ({', '.join(loc.unaccounted[:3])}): not "
                    "localized (the paths compute these nodes in a way running them alone "
                    "does not show; see notes)")
        if not loc.amplifiers:
            return (f"{loc.output_name} differs by {f:.2g} scaled, but no diverging node "
                    "could be run alone: not localized (see notes)")
        return (f"{loc.output_name} differs by {f:.2g} scaled; no node run alone makes a "
                "difference over its floor, and each diverging node's own difference with "
                "what it receives, through its own run, accounts for its output's: the "
                "error builds up from many small ones (see tensors)")
    o = loc.origins[0]
    what = f"{o.node} ({o.op_type})"
    if o.op_type in SUBGRAPH_OPS and len(o.nodes) == 1:
        what = (f"the {o.op_type} node {o.node!r}, inside its {BODY[o.op_type]} (tensors "
                f"inside a subgraph are not traced: the {o.op_type} is localized as a unit)")
    its = "its"
    if o.fused_as and not o.cause:
        what = (f"{o.fused_as}, which fuses {len(o.nodes)} nodes ({_span(o.nodes)})")
    elif len(o.nodes) > 1:
        what = f"the {len(o.nodes)} nodes {_span(o.nodes)}, run as one"
        its = "their"
    if o.within:
        what += f", first inside it at {o.within}"
    differs = (f"differs by {o.local_scaled_error:.2g}" if math.isfinite(o.local_scaled_error)
               else "is NaN or inf where the reference's is finite")
    text = (f"the error enters at {what}: {its} inputs agree to {o.inputs_scaled_error:.2g} "
            f"scaled, {its} output {differs}")
    if o.share is not None:
        text += f" ({_share_text(o.share)} of the final {f:.2g})"
    if o.cause:
        text += f"; the cause is {o.cause}"
    elif o.widened:
        text += (f"; {loc.actual} computes them together, not from "
                 f"{', '.join(o.widened[:3])} as it reads back")
    after = [m for m in loc.amplifiers if loc_position(loc, m.tensor)
             > loc_position(loc, o.tensor)]
    growing = [m for m in after if m.role == "amplifier"]
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



def _span(nodes: list[str]) -> str:
    return nodes[0] if len(nodes) == 1 else f"{nodes[0]} … {nodes[-1]}"


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share < 10 else f"{share:.3g}×"


def loc_position(loc: Localization, tensor: str) -> int:
    return next((t.position for t in loc.tensors if t.name == tensor), -1)

