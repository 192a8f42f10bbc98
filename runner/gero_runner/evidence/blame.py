"""Blame for an optimisation level: which level of the observation's runtime first changes an
output, and which graph rewrites did it. ONNX Runtime's levels are the ones gero knows; a
runtime takes part by what it declares (``Backend.levels``, ``keeps_optimized_graph``,
``rewrite_names``, ``disable_option``), and one without levels or an optimised graph is one
sentence ("… cannot be blamed …").

From an observation's evidence (its graph, or its variant's, and its inputs) each level runs
keeping its optimised graph (ONNX Runtime's ``SessionOptions.optimized_model_filepath``), so
the optimised graph of every level is kept. The first level whose outputs differ from the
level before it is the one to blame; the node lists of the two optimised graphs say what
changed (ORT names a fused node after its transformer, e.g. ``/LayerNormFusion/``). Two
confirmations follow, each stated plainly:

- by running: the optimised graph of each of the two levels, run at the base level (every
  optimisation disabled), gives that level's output again (the difference is in the graph,
  not in how the session ran it);
- by disabling: the level runs again with ``disabled_optimizers=[TRANSFORMER]``; when the
  output is then the earlier level's, the rewrite is confirmed. The name a fused node
  carries is not always the name ORT registers its transformer under: 1.32 registers
  LayerNorm fusion twice, ``LayerNormFusionL1`` at basic (it fuses into the ONNX
  LayerNormalization when the model's opset is 17 or later) and ``LayerNormFusionL2`` at
  extended (older opsets), while the node is ``/LayerNormFusion/``; so the per-level names
  are tried too, and the one that removes the node is reported. When none does, the result
  says the rewrite cannot be confirmed that way, rather than guessing. The transformers
  come from what the optimised graph added: a node named after one, or an operator one
  makes (FusedGemm: GemmActivationFusion). When another transformer fuses the same nodes
  once one is off (1.32's SimplifiedLayerNormFusion with LayerNormFusionL2 off), it is
  turned off too. Only a rewrite whose disabling gives the earlier level's output again
  is named as the cause; one whose disabling leaves the output unchanged is named as not
  the cause; when none restores it (nor all that change it together), the result says
  where the change is and that no transformer that can be turned off restores it.

The result is stored beside the evidence (``blame/OBSERVATION_ID.json`` in the artifact
directory) so the explorer shows it with the observation.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.backends.base import Backend
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.evidence.rebuild import load_model_bytes, read_case_record
from gero_runner.evidence.rewrites import added_by_optimizer, precision_rewrite
from gero_runner.storage.artifacts import (
    DERIVED_DIR,
    evidence_directory,
    load_array,
    read_json_object,
    row_json,
    safe_member,
    verify_manifest,
)
from gero_runner.storage.outputs import check_writable, store_beside_evidence

BLAME_DIR = DERIVED_DIR


@dataclass(frozen=True)
class LevelOutcome:
    """One level's run: how far its outputs are from the base level's (``disable_all``
    for ONNX Runtime; the fields are named after it), and its graph."""

    level: str
    max_abs_vs_disable_all: float
    bit_exact_vs_disable_all: bool
    node_count: int
    op_counts: dict[str, int]
    error: str = ""
    added: dict[str, int] = field(default_factory=dict)
    """Operators its optimised graph has more of than the user's graph, by count."""
    removed: dict[str, int] = field(default_factory=dict)
    """Operators of the user's graph its optimised graph has fewer of."""
    precision: str = ""
    """Its precision rewrite in a sentence (the user's float16 nodes it computes in
    float32), or empty."""


@dataclass(frozen=True)
class Rewrite:
    """A transformer named by the nodes it made, and whether disabling it was honoured."""

    transformer: str
    nodes: list[str]
    """The nodes it made: ``OpType 'name'``."""
    disabled: str
    """What turning it off (ONNX Runtime's ``disabled_optimizers``) did: confirmed (the
    earlier level's output comes back), unchanged (the output stays as it is: not the
    cause), partial (the output changes, not back), ignored (its nodes stay, or the runtime
    cannot turn one off), error."""
    note: str
    registered: str = ""
    """The name turning it off knows it by (e.g. ``LayerNormFusionL1``), if found."""
    also_disabled: list[str] = field(default_factory=list)
    """Transformers that fused the same nodes once it was off, turned off with it."""


@dataclass(frozen=True)
class Blame:
    """Which level first changes the output, what it rewrote, and how sure that is."""

    observation_id: str
    case_id: str
    graph: str
    """The graph that ran, relative to the artifact directory."""
    onnxruntime_version: str
    """The blamed runtime's version (named when ONNX Runtime's were the only levels)."""
    levels: list[LevelOutcome]
    first_level: str | None
    """The first level whose outputs differ from the level before it; None when none does."""
    previous_level: str | None
    max_abs_difference: float
    removed: dict[str, int] = field(default_factory=dict)
    """Nodes by op type in the earlier level's graph and not in the first level's."""
    added: dict[str, int] = field(default_factory=dict)
    rewrites: list[Rewrite] = field(default_factory=list)
    confirmed_by_running: bool | None = None
    running_note: str = ""
    summary: str = ""
    backend: str = ""
    """The runtime whose levels ran (absent from a result stored before it: ONNX Runtime)."""
    user_nodes: int = 0
    """Nodes of the user's graph (each level's optimised graph adds or fuses some)."""
    user_ops: dict[str, int] = field(default_factory=dict)
    cause: str = ""
    """The rewrite whose disabling restores the earlier level's output, in a sentence, or
    where the change is when none does."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Levels:
    """The observation's runtime at each of its levels, on one thread count."""

    runtime: Backend
    threads: int

    def settings(self, level: str) -> dict[str, Any]:
        found = next((p for p in self.runtime.paths(self.threads) if p.optimization == level),
                     None)
        if found is None:
            raise GeroError(f"{self.runtime.label()} declares the level {level!r} but has no "
                            "path at it (Backend.levels and Backend.paths disagree)")
        return dict(found.settings)

    def run(self, model: bytes, settings: dict[str, Any], inputs: dict[str, np.ndarray],
            save_to: Path | None = None) -> list[np.ndarray]:
        session = (self.runtime.build(model, settings) if save_to is None
                   else self.runtime.build_keeping_graph(model, settings, save_to))
        try:
            return self.runtime.run(session, inputs)
        finally:
            self.runtime.release(session)


def blamed_runtime(row: dict[str, Any]) -> Backend:
    """The observation's runtime, which blame runs at each of its levels; a sentence
    (GeroError) when it has no levels or keeps no optimised graph to compare."""
    name = str(row.get("backend") or "-")
    runtime = backends.find(name)
    with_levels = " or ".join(backends.title(b) for b in backends.with_levels())
    if runtime is None:
        raise GeroError(f"{name!r} cannot be blamed: it is not a runtime gero can run here "
                        f"(blame runs a runtime's optimisation levels: {with_levels})")
    if not runtime.levels:
        raise GeroError(f"{runtime.label()} cannot be blamed: it has no optimisation levels "
                        f"to run the graph at (blame compares a runtime's levels: "
                        f"{with_levels})")
    if not runtime.keeps_optimized_graph:
        raise GeroError(f"{runtime.label()} cannot be blamed: it keeps no optimised graph to "
                        "compare between its levels (Backend.keeps_optimized_graph)")
    return runtime


def _graph_nodes(graph: Any) -> list[tuple[str, str]]:
    """A graph's nodes, its subgraphs' (an If's branches, which ORT rewrites too) with them."""
    import onnx

    found: list[tuple[str, str]] = []
    for n in graph.node:
        found.append((n.op_type, n.name))
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                found += _graph_nodes(g)
    return found


def _nodes(path: Path) -> list[tuple[str, str]]:
    import onnx

    return _graph_nodes(onnx.load(str(path), load_external_data=False).graph)


def _max_abs(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return float("inf")
        if x.size and np.issubdtype(x.dtype, np.number):
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.abs(x.astype(np.float64) - y.astype(np.float64))
            finite = d[np.isfinite(d)]
            if finite.size:
                worst = max(worst, float(finite.max()))
    return worst


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    if len(a) != len(b):
        return False
    return all(x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
               for x, y in zip(a, b, strict=True))


def _graph_of(directory: Path, row: dict[str, Any]) -> tuple[str, bytes]:
    """The graph the observation ran: its variant's, or the case's."""
    variant = row_json(row, "details").get("variant_model")
    if isinstance(variant, str) and variant:
        path = safe_member(directory, variant)
        if path.is_file():
            return variant, path.read_bytes()
    return "model.onnx", load_model_bytes(directory)


def _inputs(directory: Path) -> dict[str, np.ndarray]:
    record = read_case_record(directory)
    try:
        return {name: load_array(directory, rel) for name, rel in record["inputs"].items()}
    except (KeyError, AttributeError) as e:
        raise ArtifactError(f"{directory / 'case.json'}: no inputs recorded ({e})") from e


Node = tuple[str, str]
"""A node of a graph: (op type, name)."""


def _made(runtime: Backend, before: list[Node], after: list[Node]) -> dict[str, list[Node]]:
    """The nodes of ``after`` not in ``before``, by the transformer that made them (named
    after it, or after the operator it makes: ``Backend.rewrites_named``)."""
    made: dict[str, list[Node]] = {}
    for (op, name), _ in (Counter(after) - Counter(before)).items():
        for transformer in runtime.rewrites_named(op, name):
            made.setdefault(transformer, []).append((op, name))
    return made


def _rewrites(runtime: Backend, before: list[Node], after: list[Node]
              ) -> tuple[dict[str, int], dict[str, int], dict[str, list[Node]]]:
    """(removed op counts, added op counts, transformer -> nodes it made)."""
    old, new = Counter(before), Counter(after)
    removed = Counter(op for (op, _), n in (old - new).items() for _ in range(n))
    added = Counter(op for (op, _), n in (new - old).items() for _ in range(n))
    return dict(removed), dict(added), _made(runtime, before, after)


def _shown(nodes: list[Node]) -> list[str]:
    return [f"{op} {name!r}" for op, name in nodes]


@dataclass(frozen=True)
class _Disabling:
    """Runs the blamed level with rewrites turned off, keeping each optimised graph."""

    model: bytes
    at: _Levels
    level: str
    inputs: dict[str, np.ndarray]
    work: Path

    def run(self, names: list[str]) -> tuple[list[np.ndarray], list[Node]]:
        runtime = self.at.runtime
        saved = self.work / f"{self.level}-without-{'-'.join(names)}.onnx"
        outputs = self.at.run(self.model, runtime.without_rewrites(
            self.at.settings(self.level), names), self.inputs, saved)
        return outputs, _nodes(saved)


def _try_disabling(run: _Disabling, transformer: str, made: list[Node],
                   graphs: list[Node], wanted: list[np.ndarray], got: list[np.ndarray]
                   ) -> Rewrite:
    """Turn the transformer off (by each name it may be registered under, until its nodes
    are gone); when other transformers then fuse the same nodes (ORT's
    SimplifiedLayerNormFusion once LayerNormFusionL2 is off), turn them off too. ``graphs``:
    the nodes of the two levels' graphs, so that a stand-in is a node neither holds."""
    runtime = run.at.runtime
    who, option = f"{runtime.label()} {runtime.version()}", runtime.disable_option
    nodes = _shown(made)
    if not option:
        return Rewrite(transformer, nodes, "ignored",
                       f"{who} cannot turn a rewrite off by name, so the rewrite cannot be "
                       "confirmed by disabling it", "")
    tried: list[str] = []
    for name in runtime.rewrite_aliases(transformer):
        try:
            outputs, graph = run.run([name])
            if any(node in graph for node in made):
                tried.append(name)
                continue
            stand_ins: list[str] = []
            for _ in range(3):  # a stand-in may have a stand-in of its own; a few at most
                fresh = sorted(set(_made(runtime, graphs, graph)) - {name, *stand_ins})
                if _same(outputs, wanted) or not fresh:
                    break
                stand_ins += fresh
                outputs, graph = run.run([name, *stand_ins])
        except Exception as e:  # ORT raises its own types for unknown names and bad graphs
            return Rewrite(transformer, nodes, "error", f"{option}=[{name!r}] failed: {e}",
                           name)
        off = [name, *stand_ins]
        said = (f"{who} registers {transformer} as {name!r} at this level "
                f"({option}=[{tried[0]!r}] does not name it); " if tried else "")
        if stand_ins:
            many = len(stand_ins) > 1
            said += (f"with {name} off, {' and '.join(stand_ins)} "
                     f"{'fuse' if many else 'fuses'} the nodes it left instead, so "
                     f"{'they are' if many else 'it is'} turned off too; ")
        if _same(outputs, wanted):
            return Rewrite(transformer, nodes, "confirmed",
                           f"{said}with {option}={off!r} level {run.level} gives the earlier "
                           "level's output again: this rewrite made the difference", name,
                           stand_ins)
        if _same(outputs, got):
            return Rewrite(transformer, nodes, "unchanged",
                           f"{said}with {option}={off!r} its nodes are gone and the output "
                           f"is unchanged: {transformer} is not what changed it", name,
                           stand_ins)
        return Rewrite(transformer, nodes, "partial",
                       f"{said}with {option}={off!r} its nodes are gone and the output "
                       "changes, but not back to the earlier level's: it is one of the "
                       "rewrites that changed it", name, stand_ins)
    return Rewrite(transformer, nodes, "ignored",
                   f"{who} keeps the fused node with {option}="
                   f"{tried!r}: no name it registers the transformer under was found, so "
                   "the rewrite cannot be confirmed by disabling it", "")


def _cause(run: _Disabling, rewrites: list[Rewrite], added: list[Node],
           wanted: list[np.ndarray]) -> str:
    """The cause in a sentence: the rewrite whose disabling restores the earlier level's
    output; else those rewrites together when turning all of them off does; else where
    the change is, and that no transformer that can be turned off restores it."""
    if not rewrites:  # no node names a transformer: the summary says what changed
        return ""
    option = run.at.runtime.disable_option
    confirmed = [r for r in rewrites if r.disabled == "confirmed"]
    if confirmed:
        return "cause: " + "; ".join(
            f"{r.transformer} (with {option}={[r.registered, *r.also_disabled]!r} the "
            "earlier level's output comes back)" for r in confirmed)
    changing = [r for r in rewrites if r.disabled == "partial"]
    if len(changing) > 1:
        off = [n for r in changing for n in (r.registered, *r.also_disabled)]
        try:
            outputs, _ = run.run(off)
        except Exception:  # ORT raises its own types: then the rewrites are not confirmed
            outputs = []
        if _same(outputs, wanted):
            return (f"cause: {' and '.join(r.transformer for r in changing)} together (each "
                    f"changes the output; with {option}={off!r} the earlier level's output "
                    "comes back)")
    where = ", ".join(_shown(added)[:8]) + (", …" if len(added) > 8 else "")
    return (f"the change is at {where or 'no node the optimised graph added'} (the nodes "
            "the optimised graph added); no single transformer I can disable restores the "
            "earlier level's output")


def _confirm_by_running(work: Path, at: _Levels, previous: str, first: str,
                        inputs: dict[str, np.ndarray],
                        outputs: dict[str, list[np.ndarray]]) -> tuple[bool | None, str]:
    base = at.settings(at.runtime.levels[0])
    try:
        again_first = at.run((work / f"{first}.onnx").read_bytes(), base, inputs)
        again_previous = at.run((work / f"{previous}.onnx").read_bytes(), base, inputs)
    except Exception as e:  # an optimised graph need not load again (hardware-specific ops)
        return None, f"cannot confirm by running the optimised graphs: {e}"
    first_ok = _same(again_first, outputs[first])
    previous_ok = _same(again_previous, outputs[previous])
    if first_ok and previous_ok:
        return True, (f"confirmed by running: the optimised graphs of {previous} and {first}, "
                      "run with every optimisation disabled, give their levels' outputs again")
    return False, (f"not confirmed by running: the optimised graph of "
                   f"{first if not first_ok else previous} run with every optimisation "
                   "disabled does not give its level's output (the difference is not only "
                   "in the graph)")


def _summary(b: Blame) -> str:
    if b.first_level is None:
        errors = [o for o in b.levels if o.error]
        if errors:
            return (f"cannot blame a level: {errors[0].level} failed ({errors[0].error})")
        text = ("no optimisation level changes the output: all levels give bit-identical "
                "outputs on this graph and these inputs")
        precision = {o.precision for o in b.levels}
        if len(precision) == 1 and "" not in precision:
            text += (f"; every level (the unoptimised one too) holds {precision.pop()}: "
                     "what differs from an engine computing float16 is that rewrite, which "
                     "no level turns off")
        return text
    parts = [f"the output first changes at `{b.first_level}` (against `{b.previous_level}`: "
             f"max |Δ| = {b.max_abs_difference:.3g})"]
    if b.cause:
        parts.append(b.cause)
    innocent = [r for r in b.rewrites if r.disabled == "unchanged"]
    if innocent:  # rewrites that are not the cause, named as such
        parts.append("not the cause (with it off the output is unchanged): " + "; ".join(
            f"{r.transformer}, which made {', '.join(r.nodes)}" for r in innocent))
    others = [r for r in b.rewrites if r.disabled not in ("confirmed", "unchanged")]
    if others:
        parts.append("rewrites whose disabling alone does not restore it: " + "; ".join(
            f"{r.transformer} made {', '.join(r.nodes)}" for r in others))
    if not b.rewrites and (b.added or b.removed):
        parts.append("the graph changed without a named transformer: removed "
                     f"{dict(b.removed)}, added {dict(b.added)}")
    elif not b.rewrites:
        parts.append("the two optimised graphs have the same nodes: not a graph rewrite "
                     "(kernel or session settings differ at this level)")
    if b.running_note:
        parts.append(b.running_note)
    parts += [r.note for r in b.rewrites if r.disabled != "unchanged"]  # said above
    return "; ".join(parts) + "."


def blame_case(directory: Path, row: dict[str, Any]) -> Blame:
    """Run every level of the observation's runtime on its graph and inputs and say which
    level and rewrite changed the output (see the module docstring)."""
    runtime = blamed_runtime(row)
    verify_manifest(directory)
    graph, model = _graph_of(directory, row)
    inputs = _inputs(directory)
    import onnx

    user = onnx.load_from_string(model)
    user_nodes = _graph_nodes(user.graph)  # counted as each level's are: subgraphs too
    user_ops = dict(Counter(op for op, _ in user_nodes))
    at = _Levels(runtime, max(1, int(row.get("threads") or 1)))
    outputs: dict[str, list[np.ndarray]] = {}
    nodes: dict[str, list[tuple[str, str]]] = {}
    levels: list[LevelOutcome] = []
    with tempfile.TemporaryDirectory(prefix="gero-blame-") as tmp:
        work = Path(tmp)
        for level in runtime.levels:
            try:
                outputs[level] = at.run(model, at.settings(level), inputs,
                                        work / f"{level}.onnx")
                nodes[level] = _nodes(work / f"{level}.onnx")
            except Exception as e:  # a level that cannot run is reported, not raised
                levels.append(LevelOutcome(level, float("nan"), False, 0, {},
                                           error=f"{type(e).__name__}: {e}"[:300]))
                continue
            base = outputs.get(runtime.levels[0], outputs[level])
            ops = dict(Counter(op for op, _ in nodes[level]))
            added, removed = added_by_optimizer(user_ops, ops)
            levels.append(LevelOutcome(
                level, _max_abs(outputs[level], base), _same(outputs[level], base),
                len(nodes[level]), ops, added=added, removed=removed,
                precision=_precision(user, work / f"{level}.onnx", runtime)))
        ran = [lvl for lvl in runtime.levels if lvl in outputs]
        first = previous = None
        for before, after in itertools.pairwise(ran):
            if not _same(outputs[before], outputs[after]):
                previous, first = before, after
                break
        blame = Blame(str(row.get("observation_id", "")), str(row.get("case_id", "")), graph,
                      runtime.version(), levels, first, previous, 0.0, backend=runtime.name)
        if first is not None and previous is not None:
            removed, added, named = _rewrites(runtime, nodes[previous], nodes[first])
            confirmed, note = _confirm_by_running(work, at, previous, first, inputs, outputs)
            disabling = _Disabling(model, at, first, inputs, work)
            rewrites = [_try_disabling(disabling, t, made, nodes[previous] + nodes[first],
                                       outputs[previous], outputs[first])
                        for t, made in sorted(named.items())]
            new_nodes = list((Counter(nodes[first]) - Counter(nodes[previous])).elements())
            blame = Blame(blame.observation_id, blame.case_id, graph, blame.onnxruntime_version,
                          levels, first, previous, _max_abs(outputs[first], outputs[previous]),
                          removed, added, rewrites, confirmed, note, backend=runtime.name,
                          cause=_cause(disabling, rewrites, new_nodes, outputs[previous]))
    blame = Blame(**{**blame.__dict__, "user_nodes": len(user_nodes),
                     "user_ops": user_ops})
    return Blame(**{**blame.__dict__, "summary": _summary(blame)})


def _precision(user: Any, graph: Path, runtime: Backend) -> str:
    """The precision rewrite of a level's optimised graph, in a sentence ('' where none)."""
    import onnx

    try:
        rewrite = precision_rewrite(user, onnx.load(str(graph), load_external_data=False))
    except Exception:  # an optimised graph shape inference cannot read: nothing said
        return ""
    return "" if rewrite is None else rewrite.sentence(runtime.label())


def blame_path(directory: Path, observation_id: str) -> Path:
    return directory / BLAME_DIR / f"{observation_id}.json"


def store_blame(directory: Path, blame: Blame, data_root: Path) -> Path:
    """Keep the result beside the evidence (not in the manifest: it is derived from it),
    whole or not at all (a full disk or a read-only root is one sentence)."""
    path = blame_path(directory, blame.observation_id)
    store_beside_evidence(path, json.dumps(blame.as_dict(), indent=2, default=float).encode(),
                          data_root)
    return path


def read_blame(directory: Path, observation_id: str) -> dict[str, Any] | None:
    """A stored blame, or None (an unreadable one counts as none)."""
    return read_json_object(blame_path(directory, observation_id))


def blame_observation(data_root: Path, row: dict[str, Any]) -> tuple[Blame, Path]:
    """Blame the observation ``row`` (a full row) and store the result; (blame, file)."""
    blamed_runtime(row)  # a runtime without levels: one sentence, before anything else
    directory = evidence_directory(data_root, row)
    check_writable(data_root, directory)  # the result is stored there: refused before work
    blame = blame_case(directory, row)
    return blame, store_blame(directory, blame, data_root)
