"""The judgement, once the search has found where the sides part: each diverging tensor's
region run alone from the reference's values is an origin when its own output differs over
its threshold (the error enters there), an amplifier when it only carries or magnifies
what it received; an origin's share of the final error (its alone-output fed into the
reference side, run to the output); where none is an origin, the error builds up from many
small ones. And the result in a sentence or two (``summary``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.errors import ArtifactError
from gero_runner.evidence.localization import NodeFinding
from gero_runner.evidence.localize.bounds import (
    ACCOUNTED,
    MAX_CANDIDATES,
    MAX_SHARES,
    RUNTIME,
    SUBGRAPH_OPS,
)
from gero_runner.evidence.localize.figures import bit_exact, figure
from gero_runner.evidence.localize.refine import inside_note, keep, refine, repro_model
from gero_runner.evidence.localize.search import Search
from gero_runner.evidence.localize.words import entered_before, span
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
    candidates = diverging[:MAX_CANDIDATES]
    if len(diverging) > MAX_CANDIDATES:
        sharp = _sharp(s, diverging[MAX_CANDIDATES:])
        candidates = sorted([*candidates, *sharp], key=lambda t: s.position.get(t, -1))
        also = (f", and {len(sharp)} sharp one(s) after them ({', '.join(sharp)}: non-finite "
                "where the reference is finite, or a sudden jump over what they read)"
                if sharp else "")
        s.notes.append(f"{len(diverging)} tensors diverge in the stretch traced; the first "
                       f"{MAX_CANDIDATES} were run alone{also}")
    st = _Alone()
    started = time.perf_counter()
    _run_alone(s, candidates, st)
    rest = [t for t in diverging if t not in candidates]
    if rest and math.isfinite(final) and final > 0:
        # Origins that explain too little of the final error are not the whole story: the
        # diverging tensors where the error jumps most are run alone too.
        so_far = _explained(s, st.origins, st.alone_values, final)
        if so_far is not None and so_far < ACCOUNTED:
            more = _largest_jumps(s, rest)[:MAX_CANDIDATES]
            s.notes.append(f"the {len(candidates)} diverging tensors run alone first explain "
                           f"{so_far:.0%} of the final {final:.2g}: {len(more)} more, where "
                           f"the error jumps most over what they read, were run alone too "
                           f"({', '.join(more[:4])}{'…' if len(more) > 4 else ''})")
            _run_alone(s, more, st)
    origins, amplifiers, kept = st.origins, st.amplifiers, st.kept
    alone_values, feeds_of, unaccounted = st.alone_values, st.feeds_of, st.unaccounted
    if not origins:
        flip = _step_flip(s, amplifiers)
        if flip is not None:
            # No node differs on its own, but a quantiser moved values to another step
            # from inputs within the roundings: that step is where the error enters.
            origins = [flip]
            amplifiers = [a for a in amplifiers if a.tensor != flip.tensor]
            alone_values[flip.tensor] = s.a_values[flip.tensor]
            # Not measured: the arbiter fed the path's integers was seen to give its own
            # output unchanged (smart_turn's float16 file: 387 values a step off, 0 %),
            # which would read as "explains nothing".
            s.shares[flip.tensor] = None
    # A non-finite origin first: it is refined (and its share measured) whatever its place.
    origins = sorted(origins, key=lambda o: not math.isinf(o.local_scaled_error))
    origins = [refine(s, o, feeds_of.get(o.tensor, {})) for o in origins[:MAX_SHARES]] + \
        origins[MAX_SHARES:]
    origins = sorted(origins, key=lambda o: s.position.get(o.tensor, -1))
    s.phases["alone_s"] = time.perf_counter() - started
    origins = _sharp_first(_measured_origins(s, origins, alone_values, final))
    origins = _with_causes(s, origins)
    if origins and math.isfinite(final) and final > 0:
        # What the named origins explain: a partial explanation says its share.
        s.explained = _explained(s, origins, alone_values, final)
    if not origins and unaccounted:
        s.notes.append(f"{', '.join(unaccounted[:4])}: no node run alone makes a difference "
                       "over its floor, and what each receives, through its own run, does not "
                       "account for what it shows (even run together with up to four steps "
                       "of nodes before it): not localized")
    s.unaccounted.extend(unaccounted)
    # The repro is the origin the summary names first (a sharp one may come before an
    # earlier one in the graph).
    repro = repro_model(s, origins[0].tensor, *st.repro_args[origins[0].tensor], kept) \
        if origins and origins[0].tensor in st.repro_args else None
    return origins, amplifiers, kept, repro


@dataclass
class _Alone:
    """What running diverging tensors alone has found so far."""

    origins: list[NodeFinding] = field(default_factory=list)
    amplifiers: list[NodeFinding] = field(default_factory=list)
    kept: dict[str, np.ndarray] = field(default_factory=dict)
    repro_args: dict[str, tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]] = field(
        default_factory=dict)
    """Per origin: its region's inputs and both sides' alone-outputs (for its repro)."""
    alone_values: dict[str, np.ndarray] = field(default_factory=dict)
    feeds_of: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    unaccounted: list[str] = field(default_factory=list)


def _run_alone(s: Search, candidates: list[str], st: _Alone) -> None:
    """Each of ``candidates`` run alone on both sides: an origin, or an amplifier or
    carrier (``st`` gathers them)."""
    origins, amplifiers, kept = st.origins, st.amplifiers, st.kept
    alone_values, feeds_of, unaccounted = st.alone_values, st.feeds_of, st.unaccounted
    if not origins:
        flip = _step_flip(s, amplifiers)
        if flip is not None:
            # No node differs on its own, but a quantiser moved values to another step
            # from inputs within the roundings: that step is where the error enters.
            origins = [flip]
            amplifiers = [a for a in amplifiers if a.tensor != flip.tensor]
            alone_values[flip.tensor] = s.a_values[flip.tensor]
            # Not measured: the arbiter fed the path's integers was seen to give its own
            # output unchanged (smart_turn's float16 file: 387 values a step off, 0 %),
            # which would read as "explains nothing".
            s.shares[flip.tensor] = None
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
            # A node whose own run does not account for what it shows magnifies nothing
            # that was measured: never an amplifier.
            role = ("carrier" if t in unaccounted else
                    carrying_role(op, propagated, in_err))
        finding = NodeFinding(
            name, op, t, [node_label(graph.node[i]) for i in ra], ins,
            in_err, fig.scaled_error, local, fig.threshold, gain, None, fused, "", role,
            propagated, sorted(s.widened.get(t, set())))
        if not math.isfinite(cast):
            # The reference's inputs do not fit the path's own type (a float16 overflow
            # already happened upstream): the node only carries what it was given.
            amplifiers.append(finding)
            keep(kept, t, x, y, feeds, s)
            continue
        if local > fig.threshold:
            if finding.widened:
                s.notes.append(_widened_note(s, finding))
            if node is not None and len(ra) == 1 and node.op_type in SUBGRAPH_OPS:
                s.notes.append(inside_note(node, feeds))
            origins.append(finding)
            feeds_of[t] = {n: s.b_values.get(n, v) for n, v in feeds.items()}
            alone_values[t] = x
            st.repro_args[t] = (feeds, x, y)
        else:
            amplifiers.append(finding)
        keep(kept, t, x, y, feeds, s)


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


def _explained(s: Search, origins: list[NodeFinding], alone_values: dict[str, np.ndarray],
               final: float) -> float | None:
    """The final error ``origins`` explain: the shares of the ``MAX_SHARES`` largest (by
    their own difference) added, each its alone-output fed to the reference side and run
    to the output (fed at once, a later origin's alone-output would cut off what an
    earlier one makes); 0 without origins, None where none could be measured."""
    if not origins:
        return 0.0
    largest = sorted(origins, key=lambda o: -o.local_scaled_error)[:MAX_SHARES]
    shares = [s.share(o.tensor, alone_values[o.tensor], final) for o in largest]
    known = [x for x in shares if x is not None]
    return sum(known) if known else None


def _largest_jumps(s: Search, later: list[str]) -> list[str]:
    """``later`` (diverging tensors not yet run alone), the largest jump over what each
    region reads first."""
    def jump(t: str) -> float:
        read = [s.figures[n].scaled_error for n in s.region_inputs(t) if n in s.figures]
        before = max(read, default=0.0)
        err = s.figures[t].scaled_error
        return err / before if before > 0 else math.inf
    return sorted(later, key=lambda t: (-jump(t), s.position.get(t, -1)))


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
    # One whose inputs are already further off than its own difference is not where the
    # error enters: one with cleaner inputs is named first.
    return sorted(origins, key=lambda o: (entered_before(o), rank(o)))


def _widened_note(s: Search, o: NodeFinding) -> str:
    across = ", ".join(o.widened[:4])
    return (f"{o.tensor}: run alone from {across} (which read back the same on both sides "
            f"when marked as outputs), its nodes agree; run as one with the nodes that make "
            f"{across} ({len(o.nodes)} nodes: {span(o.nodes)}), they differ by "
            f"{o.local_scaled_error:.2g}: {s.a.label} does not compute with {across} as it "
            "reads back (it rewrites those nodes together)")


QUANTIZERS = ("QuantizeLinear", "DynamicQuantizeLinear")


def _step_flip(s: Search, amplifiers: list[NodeFinding]) -> NodeFinding | None:
    """The first quantiser among ``amplifiers`` whose own run agrees, whose inputs stay
    within their thresholds (the path's roundings), and whose integer output differs: a
    last-bit difference upstream moved values to another step (smart_turn's float16 file on
    ONNX Runtime: input 0.00029 scaled off, one int8 step at the input QuantizeLinear). As an
    origin whose cause says so, with the path's precision rewrite where it has one."""
    for a in amplifiers:
        fig = s.figures.get(a.tensor)
        x, y = s.a_values.get(a.tensor), s.b_values.get(a.tensor)
        if (a.op_type not in QUANTIZERS or fig is None or not fig.diverges or x is None
                or y is None or x.dtype.kind not in "iu" or y.dtype.kind not in "iu"):
            continue
        if any(s.figures[n].diverges for n in a.inputs if n in s.figures):
            continue
        steps = int(np.max(np.abs(x.astype(np.int64) - y.astype(np.int64)), initial=0))
        moved = int(np.count_nonzero(x != y))
        cause = (f"a rounding step: its input differs by {a.inputs_scaled_error:.2g} scaled, "
                 f"within {s.a.label}'s roundings, which moves {moved} of its "
                 f"{x.size} values to another integer step (at most {steps} step(s)); its own "
                 "run from the reference's input agrees")
        rewrite = _path_rewrite(s)
        if rewrite:
            cause += f"; the last-bit difference comes with {rewrite}"
        return NodeFinding(**{**a.__dict__, "local_scaled_error": fig.scaled_error,
                              "role": "", "cause": cause})
    return None


def _path_rewrite(s: Search) -> str:
    """The path's precision rewrite in a sentence ('' where it has none, or is no runtime
    whose optimised graph can be read)."""
    if s.a.kind != RUNTIME:
        return ""
    try:
        found = side_precision_rewrite(s.a.backend, s.a.settings, s.model_a)
    except Exception:  # a runtime that cannot write its graph again: nothing to read
        return ""
    return found.sentence(s.a.label) if found is not None and found.nodes else ""


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
            if name == "actual" and s.traced_limit is not None:
                out["actual_traced_limit"] = s.traced_limit
    if out.get("actual_bit_exact") is False or out.get("reference_bit_exact") is False:
        s.notes.append("a traced run does not give its path's stored output bit for bit "
                       "(tensors marked as outputs changed what the runtime computes, or "
                       "the runtime is not deterministic): see instrumented")
    return out
