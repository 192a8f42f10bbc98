"""An origin made precise: where inside a region a path first parts from the other
element by element, where a NaN first appears, which tensors the trace keeps and the
one-node repro of an origin (the judge picks origins; this looks inside them)."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from gero_runner.evidence import subgraphs as sg
from gero_runner.evidence.localization import NodeFinding
from gero_runner.evidence.localize.bounds import BODY, KEEP_TENSOR_BYTES, SHADOW_KIND, TRACE_BYTES
from gero_runner.evidence.localize.figures import bit_exact, figure, rounding
from gero_runner.evidence.localize.search import Search
from gero_runner.evidence.localize.sides import run_side
from gero_runner.evidence.rewrites import node_label


def inside_note(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> str:
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


def refine(s: Search, o: NodeFinding, feeds: dict[str, np.ndarray]) -> NodeFinding:
    """Inside an origin of several nodes (a runtime fused them, so their inner tensors were
    not compared end to end): the region runs alone again with its inner tensors marked;
    when that gives the region's output bit for bit on both paths (marking changed
    nothing), the first inner node whose own output differs from the reference's inputs
    is named (``within``)."""
    ra, rb = s.regions(o.tensor)
    if len(ra) < 2 or not feeds:
        return o
    tail = _quantized_tail(s, o, feeds)
    if tail is not None:
        return tail
    if math.isinf(o.local_scaled_error):
        return _first_nan(s, o, feeds)
    graph = s.model_a.graph
    other = {r.tensor for r in s.renamed}  # one name, another quantity: not compared
    inner = [t for i in ra for t in graph.node[i].output if t and t != o.tensor
             and t not in other and t in s.types_b
             and any(t in n.output for n in s.model_b.graph.node)]
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
        plain_a = run_side(s.a, s.cut_a(ra, [o.tensor], feeds_a), feeds_a,
                           [o.tensor])[o.tensor]
        plain_b = run_side(s.b, s.cut_b(rb, [o.tensor], feeds_b), feeds_b,
                           [o.tensor])[o.tensor]
        got_a = run_side(s.a, s.cut_a(ra, wanted, feeds_a), feeds_a, wanted)
        got_b = run_side(s.b, s.cut_b(rb, wanted, feeds_b), feeds_b, wanted)
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


def _quantized_tail(s: Search, o: NodeFinding, feeds: dict[str, np.ndarray]
                    ) -> NodeFinding | None:
    """Inside an origin of several nodes of one graph (both sides run the same file): a
    QuantizeLinear -> DequantizeLinear pair feeding the region's last node, run as one with
    it from the reference's values of what the three read, differing over the origin's
    threshold, is named ``within`` (OpenVINO folds MiniLM's mask pair at scale 1.3e36 into
    the Add after it: the pair's output reads back right when marked, the Add alone agrees,
    only the three together show it). None where no such pair shows the difference."""
    if s.model_a is not s.model_b:
        return None
    ra, rb = s.regions(o.tensor)
    graph = s.model_a.graph
    produced = {t: i for i in ra for t in graph.node[i].output}
    last = graph.node[ra[-1]]
    pairs = []
    for read in last.input:
        dq = produced.get(read)
        if dq is None or graph.node[dq].op_type != "DequantizeLinear":
            continue
        q = produced.get(graph.node[dq].input[0])
        if q is not None and graph.node[q].op_type == "QuantizeLinear":
            pairs.append((q, dq))
    # The pair of the largest scale first (a mask quantised at 1.3e36 beside scores at 0.05).
    inits = {t.name: t for t in graph.initializer}

    def scale(q: int) -> float:
        name = graph.node[q].input[1] if len(graph.node[q].input) > 1 else ""
        return float(np.max(np.abs(numpy_helper.to_array(inits[name])))) if name in inits \
            else 0.0
    for q, dq in sorted(pairs, key=lambda p: -scale(p[0])):
        chain = sorted({q, dq, ra[-1]})
        outer = sg.region_inputs(graph, chain)
        fb = {n: s.as_type(v, s.types_b.get(n)) if s.b.kind != SHADOW_KIND else v
              for n, v in feeds.items()}
        inner = [n for n in outer if n not in fb]
        try:
            values = {**fb, **(run_side(s.b, s.cut_b(rb, inner, fb), fb, inner) if inner
                               else {})}
            fed = {n: values[n] for n in outer}
            fa = {n: s.as_type(v, s.types_a.get(n)) for n, v in fed.items()}
            with np.errstate(over="ignore", invalid="ignore"):
                x = run_side(s.a, s.cut_a(chain, [o.tensor], fa), fa, [o.tensor])[o.tensor]
                y = run_side(s.b, s.cut_b(chain, [o.tensor], fed), fed, [o.tensor])[o.tensor]
        except Exception:  # a runtime that cannot take the three alone: not narrowed
            continue
        err, _ = figure(x, y)
        if not err > o.threshold:
            continue
        word = (f"{node_label(graph.node[q])} -> {node_label(graph.node[dq])} -> "
                f"{node_label(last)}, run as one")
        s.notes.append(f"inside {o.node}: the difference is made by {word} from the "
                       f"reference's values of what they read (scaled error {err:.2g}); "
                       f"{s.a.label} computes the pair together with the node after it")
        return NodeFinding(**{**o.__dict__, "within": word})
    return None


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


def keep(kept: dict[str, np.ndarray], t: str, x: np.ndarray, y: np.ndarray,
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


def repro_model(s: Search, t: str, feeds: dict[str, np.ndarray], output: np.ndarray,
                expected: np.ndarray, kept: dict[str, np.ndarray]) -> bytes:
    ra, _ = s.regions(t)
    model = sg.region_model(s.model_a, ra, [t], feeds, name=f"gero-localize-{t}",
                            typed={t: output})
    for n, v in feeds.items():
        kept[f"repro/in/{n}"] = v
    kept[f"repro/out/{t}"] = expected
    return bytes(model.SerializeToString())
