"""Localize's result in words: the sentence or two ``gero localize``, the explorer and the
report show (a module of its own: the judge decides, this says what it decided)."""

from __future__ import annotations

import math

import numpy as np

from gero_runner.evidence.localization import Localization, NodeFinding
from gero_runner.evidence.localize.bounds import ACCOUNTED, BODY, SUBGRAPH_OPS
from gero_runner.evidence.localize.figures import rounding


def summary(loc: Localization, gate: str = "", stored: float | None = None) -> str:
    """The result in a sentence or two (``gate``: the row's own verdict; ``stored``: the
    row's own scaled error, which a failed row's traced run may not give again)."""
    text = _summary(loc, gate, stored)
    other = traced_elsewhere(loc, stored)
    if other:
        text = f"{other}; {text}"
    if loc.renamed and not loc.within_gate:
        names = ", ".join(repr(t) for t in loc.renamed[:3])
        more = f" and {len(loc.renamed) - 3} more" if len(loc.renamed) > 3 else ""
        text += (f"; not compared: {names}{more}, which the two graphs make with different "
                 "operators (a node folded away, its tensor name kept: see notes)")
    return text


def traced_elsewhere(loc: Localization, stored: float | None) -> str:
    """'' where the traced runs gave the observation's stored outputs again (within the
    final tensor's own threshold, and under half the row's own error); else which side
    computes differently when its inner tensors are read, with the traced and the row's
    figures: the origins found are those of the traced run, not necessarily the row's."""
    base = loc.final_threshold if math.isfinite(loc.final_threshold) else 0.0
    if stored is not None and stored > 0:
        base = min(base, stored / 2)
    base = max(base, rounding(np.dtype("float32")))
    for key, label in (("actual", loc.actual), ("reference", loc.reference)):
        off = loc.instrumented.get(f"{key}_scaled_error_vs_stored")
        own = loc.instrumented.get(f"{key}_traced_limit")  # the limit retrace judged by
        limit = float(own) if isinstance(own, float | int) else base
        if not isinstance(off, float | int) or not off > limit:
            continue
        row = f", row {stored:.2g}" if stored is not None else ""
        return (f"{label} computes differently when its intermediate tensors are read: "
                f"traced {loc.final_scaled_error:.2g}{row} (its traced output is {off:.2g} "
                "scaled from its stored one), so what follows is the traced run's, not "
                "necessarily the row's")
    return ""


def _summary(loc: Localization, gate: str, stored: float | None) -> str:
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
        what = (f"{o.fused_as}, which fuses {len(o.nodes)} nodes ({span(o.nodes)})")
    elif len(o.nodes) > 1:
        what = f"the {len(o.nodes)} nodes {span(o.nodes)}, run as one"
        its = "their"
    if o.within:
        what += f", first inside it at {o.within}"
    differs = (f"differs by {o.local_scaled_error:.2g}" if math.isfinite(o.local_scaled_error)
               else "is NaN or inf where the reference's is finite")
    if entered_before(o):
        # Its inputs are already further off than its own run makes its output: the error
        # entered before it, where no tensor was compared; it only adds to it.
        text = (f"the error enters before the tensors compared: the first node with a "
                f"difference of its own, {what}, reads inputs already {o.inputs_scaled_error:.2g}"
                f" scaled off, more than {its} own run makes of {its} output "
                f"({o.local_scaled_error:.2g})")
    else:
        text = (f"the error enters at {what}: {its} inputs agree to "
                f"{o.inputs_scaled_error:.2g} scaled, {its} output {differs}")
    if o.share is not None:
        text += f" ({_share_text(o.share)} of the final {f:.2g})"
    if o.cause:
        text += f"; the cause is {o.cause}"
    elif o.widened:
        text += (f"; {loc.actual} computes them together, not from "
                 f"{', '.join(o.widened[:3])} as it reads back")
    after = [m for m in loc.amplifiers if loc_position(loc, m.tensor)
             > loc_position(loc, o.tensor)]
    lost = [m for m in after if m.tensor in loc.unaccounted]
    growing = [m for m in after if m.role == "amplifier"]
    if lost:
        # Neither carried nor magnified: what they show, their own runs do not make.
        shown = ", ".join(f"{m.node} ({m.op_type})" for m in lost[:3])
        text += (f"; after it, {shown} show(s) more than their own run makes of what they "
                 "receive (not located)")
    elif after and f < o.local_scaled_error:
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
    shares = [x.share for x in loc.origins if x.share is not None]
    if len(shares) > 1 and sum(shares) > 1:
        # Each share is measured alone: shares of one error overlap, they do not add.
        text += (f"; each share is that node's own difference alone, fed to {loc.reference} "
                 f"and run to the output, so the shares overlap (added, "
                 f"{_share_text(sum(shares))}) and none is a part of a whole")
    if loc.explained is not None and loc.explained < ACCOUNTED:
        # Never a partial explanation presented as the whole one.
        who = ("this origin explains" if len(loc.origins) == 1 else
               f"the {len(loc.origins)} origins named explain")
        together = " (their shares added)" if len(loc.origins) > 1 else ""
        text += (f"; {who} {_share_text(loc.explained)} of the final {f:.2g}{together}: "
                 "the rest is not located")
    return text



def entered_before(o: NodeFinding) -> bool:
    """Whether ``o``'s inputs are already further off than its own run makes its output
    (frspell on OpenVINO bf16: inputs 0.0091, its own 0.0026): the error entered before it."""
    return math.isfinite(o.local_scaled_error) and o.inputs_scaled_error > o.local_scaled_error


def span(nodes: list[str]) -> str:
    return nodes[0] if len(nodes) == 1 else f"{nodes[0]} … {nodes[-1]}"


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share < 10 else f"{share:.3g}×"


def loc_position(loc: Localization, tensor: str) -> int:
    return next((t.position for t in loc.tensors if t.name == tensor), -1)

