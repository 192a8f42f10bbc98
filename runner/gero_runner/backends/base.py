"""The one interface every execution path implements.

A runtime is a ``Backend``: it lists its paths (one per setting: ONNX Runtime's optimisation
levels, OpenVINO's inference precisions, tract with and without its optimiser), builds a
session from model bytes and a path's recorded settings, runs it, releases it, reports its
version, and says in one line when it cannot take a case. It also declares what the evidence
tools need of it (its capabilities): a session that gives back named intermediates
(localize), its optimised graph and the tensors that survive it (localize, blame), its
rewrite levels and how to turn one rewrite off (blame), whether it survives a fork
(``process.start_method``), the float type a setting computes in and whether it inserts
precision casts (the fp16 checks), its distributions (the version line), the setting people
deploy it at and when a model case's default plan runs each other setting. Each default is
that it lacks the capability, but for intermediates: any runtime that runs the ONNX graph it
is given gives them back when they are marked as outputs.
Everything above this package (execution, contracts, variants, models, localize, blame,
replay, timing, the version line) talks to runtimes only through it, never by name.

Runtimes are imported inside the methods: the parent of the worker pool forks its workers
and must not hold a runtime's thread pools, and the explorer must not pay their import.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gero_runner.backends.names import NAMES
from gero_runner.backends.names import NOT_APPLICABLE as NOT_APPLICABLE  # re-exported
from gero_runner.process import start_method

if TYPE_CHECKING:
    import onnx

    from gero_runner.case import Arrays, CaseInstance


NEEDED_ALWAYS = "always"
NEEDED_WHEN_OFF = "when-off"
NEEDED_WHEN_ENDS_DIFFER = "when-ends-differ"
"""When a model case's default plan runs a setting (``Backend.needed_when``)."""


@dataclass(frozen=True)
class PathSpec:
    """One path of a runtime: a setting, with what every observation of it records."""

    backend: str
    """The rows' backend column (``Backend.name``)."""
    name: str
    """Unique within a case: names the path's evidence folder, e.g. 'ort-all'."""
    optimization: str
    """The rows' optimization column: the setting, e.g. 'all', 'f32', 'bf16-default'."""
    threads: int
    settings: Mapping[str, Any]
    """Enough to rebuild the session (``Backend.build``); recorded as JSON on every row."""


class Backend(ABC):
    """A runtime gero can run a case on."""

    name: ClassVar[str]
    """The rows' backend column, also the name ``gero run --backends`` takes."""
    prefix: ClassVar[str]
    """Path names are ``{prefix}-{optimization}``."""
    distribution: ClassVar[str]
    """The PyPI distribution that provides the runtime (its version is recorded)."""
    module: ClassVar[str]
    """The import name, probed without importing it."""
    extra: ClassVar[str | None] = None
    """gero's optional extra that installs it (None: a core dependency)."""
    title: ClassVar[str] = ""
    """How sentences name it ("ONNX Runtime"); its name when empty."""
    short: ClassVar[str] = ""
    """Its name where room is short (a column head, a bar's label: "ov"); its name when empty."""
    path_label: ClassVar[str] = "{short}:{setting}"
    """How tables and lists name one of its paths, a template over ``short`` and the path's
    setting (its ``optimization``): "ov:f32". Rendered by ``backends.path_label`` in Python
    and ``backends.path_label_sql`` in SQL, the one rule every view uses."""

    # Its capabilities (see the module docstring), each default the safe one.
    keeps_intermediates: ClassVar[bool] = True
    """Whether ``intermediates`` can give back a graph's inner tensors (localize compares
    them); the default marks them as graph outputs, which any runtime that runs the ONNX
    graph it is given does."""
    levels: ClassVar[tuple[str, ...]] = ()
    """Its settings that rewrite the graph more and more, from the unoptimised base (the
    first) to the most rewritten, as its paths' ``optimization`` (taken from its names'
    line, ``names.Names.levels``); empty: it has none, and blame cannot compare any."""
    level_setting: ClassVar[str] = ""
    """The key of its settings that holds its level ("graph_optimization_level")."""
    keeps_optimized_graph: ClassVar[bool] = False
    """Whether ``build_keeping_graph`` can write the graph it runs after its own rewrites
    as ONNX (ONNX Runtime's ``optimized_model_filepath``)."""
    disable_option: ClassVar[str] = ""
    """The setting that turns rewrites off by name ("disabled_optimizers"); empty: it
    cannot turn one off (blame then cannot confirm a rewrite that way)."""
    rewrite_names: ClassVar[str] = ""
    """A regular expression for the rewrites a node of its optimised graph is named after
    (ONNX Runtime names a fused node after its transformer, '/LayerNormFusion/'); empty:
    its node names name none."""
    rewrite_ops: ClassVar[dict[str, str]] = {}
    """The rewrite that makes an operator of its optimised graph, where the node's name does
    not name it (ONNX Runtime's FusedGemm is 'fused Gemm_27', made by GemmActivationFusion)."""
    inserts_precision_casts: ClassVar[bool] = False
    """Whether its graph at its base setting (``optimized_graph``) holds the Casts it
    inserts to compute a float16 model's nodes in float32 (ONNX Runtime's CPU kernels that
    lack float16), read by the fp16 precision check (``models.fp16_reference``)."""
    widened_prefix: ClassVar[str] = ""
    """The prefix its optimised graph gives a tensor it computes wider than declared
    (ONNX Runtime's "InsertedPrecisionFreeCast_"), read by ``widened_nodes``."""
    survives_fork: ClassVar[bool] = True
    """Whether a process that has loaded it may fork a child that runs it (OpenVINO's
    thread pool does not survive a fork: the child hangs on its first inference)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A backend gero names (backends.names) takes its names from that table, their one
        # owner; a backend made elsewhere (a test's) keeps what its class says.
        super().__init_subclass__(**kwargs)
        known = NAMES.get(cls.__dict__.get("name", ""))
        if known is not None:
            cls.prefix, cls.title, cls.short = known.prefix, known.title, known.short
            cls.path_label, cls.levels = known.path_label, known.levels
        if not cls.survives_fork and "module" in cls.__dict__:
            # The fork policy sits below this package: it learns the module to watch here,
            # before anything of this class can load it.
            start_method.no_fork_once_loaded(cls.module)

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def install_hint(self) -> str:
        target = f"'gero[{self.extra}]'" if self.extra else self.distribution
        return f"pip install {target}"

    def version(self) -> str:
        return _version(self.distribution)

    @abstractmethod
    def paths(self, threads: int) -> list[PathSpec]:
        """Every setting this runtime is run at, in display order (the first is its base)."""

    def label(self) -> str:
        return self.title or self.name

    def short_name(self) -> str:
        return self.short or self.name

    def model_baseline(self, paths: list[PathSpec]) -> PathSpec:
        """Of this runtime's paths (``paths(threads)``), the one the model family measures
        its noise floor on and judges a model's int8/fp16 variants against: its most
        optimised setting (the last) unless a runtime says otherwise."""
        return paths[-1]

    def deployed(self, paths: list[PathSpec]) -> PathSpec:
        """Of these paths of its, the setting people deploy it at (an application's session
        with no options): every verdict of a model case needs it, on the model, on each
        variant file and on the contract graphs. Its most rewritten setting (the last)
        unless a runtime says otherwise."""
        return paths[-1]

    def needed_when(self, spec: PathSpec, paths: list[PathSpec]) -> str:
        """When a model case's default plan (``--paths needed``) runs this setting of its
        (``paths``: those selected): ``NEEDED_ALWAYS`` (the deployed setting, the noise
        floor's baseline, any setting that is not a rewrite level), ``NEEDED_WHEN_OFF``
        (the unoptimised base level: only where the deployed setting is off its gates, to
        say whether its optimiser is at fault) or ``NEEDED_WHEN_ENDS_DIFFER`` (a level
        between the base and the deployed one: only where those two differ, to name the
        level that makes the difference)."""
        deployed = self.deployed(paths)
        if (spec.name in (deployed.name, self.model_baseline(paths).name)
                or spec.optimization not in self.levels or deployed.optimization not in
                self.levels):
            return NEEDED_ALWAYS
        if spec.optimization == self.levels[0]:
            return NEEDED_WHEN_OFF
        return NEEDED_WHEN_ENDS_DIFFER

    def supports(self, case: CaseInstance) -> str | None:
        """None when the runtime can take the case, else a one-line reason."""
        return None

    @abstractmethod
    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        """A session for the serialised model with a path's settings."""

    @abstractmethod
    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        """The graph outputs, in graph order, as NumPy arrays."""

    def release(self, session: Any) -> None:
        """Free the session now (its teardown is timed as backend work)."""
        del session

    def with_threads(self, settings: Mapping[str, Any], threads: int) -> dict[str, Any] | None:
        """The settings at another intra-op thread count, or None when the runtime has no
        such setting (the threads contract then does not apply to it)."""
        return None

    def spec(self, optimization: str, threads: int, settings: Mapping[str, Any]) -> PathSpec:
        return PathSpec(self.name, f"{self.prefix}-{optimization}", optimization, threads,
                        settings)

    def distributions(self) -> tuple[str, ...]:
        """The distributions ``gero --version`` names for it (its own by default)."""
        return (self.distribution,)

    # ---------------------------------------------------------------- evidence capabilities
    def intermediates(self, model: onnx.ModelProto, settings: Mapping[str, Any],
                      names: list[str], feeds_list: list[Arrays]
                      ) -> list[dict[str, np.ndarray]]:
        """``names`` (tensors of ``model``) as a session with these settings computes them,
        for each of ``feeds_list``, from one session (a compile can cost more than a run).
        By default the names become graph outputs (a runtime that rewrites the graph keeps
        a tensor it must output: ``surviving_tensors`` says which to ask for)."""
        marked = with_outputs(model, names)
        session = self.build(marked.SerializeToString(), settings)
        order = [o.name for o in marked.graph.output]
        results = []
        try:
            for feeds in feeds_list:
                got = dict(zip(order, self.run(session, feeds), strict=False))
                results.append({n: got[n] for n in names})
        finally:
            self.release(session)
            del session
        return results

    def level_of(self, settings: Mapping[str, Any]) -> str | None:
        """The level these settings run at (``levels``), or None when they name none."""
        value = settings.get(self.level_setting) if self.level_setting else None
        return None if value is None else str(value)

    def build_keeping_graph(self, model: bytes, settings: Mapping[str, Any],
                            graph: Path) -> Any:
        """A session as ``build`` makes, which also writes the graph it runs after its own
        rewrites to ``graph`` as ONNX (only where ``keeps_optimized_graph``)."""
        raise NotImplementedError(f"{self.label()} keeps no optimised graph")

    def optimized_graph(self, model: bytes, settings: Mapping[str, Any]
                        ) -> onnx.ModelProto | None:
        """The graph a session with these settings runs after its own rewrites, or None
        when it keeps none as ONNX (``keeps_optimized_graph``)."""
        if not self.keeps_optimized_graph:
            return None
        import onnx

        with tempfile.TemporaryDirectory(prefix="gero-graph-") as tmp:
            saved = Path(tmp) / "optimized.onnx"
            self.release(self.build_keeping_graph(model, settings, saved))
            return onnx.load(str(saved), load_external_data=False)

    def surviving_tensors(self, model: onnx.ModelProto, settings: Mapping[str, Any]
                          ) -> dict[str, str] | None:
        """The model's tensors a session with these settings still computes after its own
        rewrites (a tensor a fusion removed cannot be read back without undoing the
        fusion), each with the node of its graph that makes it ("OpType 'name'", "" when
        it cannot say); None: every tensor. By default its optimised graph's, none at its
        unoptimised base level."""
        if self.levels and self.level_of(settings) in (None, self.levels[0]):
            return None
        graph = self.optimized_graph(model.SerializeToString(), settings)
        if graph is None:
            return None
        made = {i.name: "" for i in graph.graph.input}
        made.update({o: f"{n.op_type} {n.name!r}" for n in graph.graph.node for o in n.output})
        return made

    def rewrites_named(self, op: str, node: str) -> list[str]:
        """The rewrites a node of its optimised graph is named after (``rewrite_names``), else
        the one that makes its operator (``rewrite_ops``)."""
        named = sorted(set(re.findall(self.rewrite_names, node))) if self.rewrite_names else []
        return named or ([self.rewrite_ops[op]] if op in self.rewrite_ops else [])

    def rewrite_aliases(self, rewrite: str) -> list[str]:
        """The names its ``disable_option`` may know a rewrite by, the node's first."""
        return [rewrite]

    def without_rewrites(self, settings: Mapping[str, Any], names: Iterable[str]
                         ) -> dict[str, Any]:
        """The settings with the rewrites of those names turned off (``disable_option``)."""
        return {**settings, self.disable_option: list(names)}

    def float_precision(self, settings: Mapping[str, Any]) -> str | None:
        """The float type these settings compute every float tensor in, whatever the model
        declares ("f32", "bf16", "f16": OpenVINO's inference precision), or None when each
        is computed as declared (the default)."""
        return None

    def run_time_quantization(self, model: bytes, settings: Mapping[str, Any]) -> str:
        """What these settings quantize at run time that the graph does not declare, as its
        compiled model says, in words ('' when nothing: the default)."""
        return ""

    def widened_nodes(self, model: bytes, settings: Mapping[str, Any]) -> dict[str, str] | None:
        """The graph's float16 nodes that these settings compute in float32, skipping the
        float16 roundings the graph declares (a precision rewrite), each node (its name, else
        its first output) with its operator type; {} when none; None when it cannot tell. By
        default: every one where ``float_precision`` is "f32", else those whose outputs its
        optimised graph (``inserts_precision_casts``) no longer holds in float16."""
        import onnx

        proto = onnx.load_from_string(model)
        halves = float16_nodes(proto)
        if not halves:
            return {}
        if self.float_precision(settings) == "f32":
            return {key: op for key, (op, _) in halves.items()}
        if not self.inserts_precision_casts:
            return None
        seen = self.optimized_graph(model, settings)
        if seen is None:
            return None
        still = float16_tensors(seen)
        by_output = {o: key for key, (_, outs) in halves.items() for o in outs}
        widened = {}
        for node in seen.graph.node:
            # a widened node keeps its name, or writes the user's output renamed with the
            # prefix (a function the runtime inlined writes it from another node)
            keys = {node.name} | {by_output.get(o.removeprefix(self.widened_prefix), "")
                                  for o in node.output if self.widened_prefix}
            for key in keys & halves.keys():
                if not any(o in still for o in node.output):
                    widened[key] = halves[key][0]
        return widened


@functools.cache  # reading package metadata costs ~1 ms; rows ask per output
def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def with_outputs(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """A copy of the model whose graph outputs are its own followed by ``names`` (untyped:
    every runtime gero drives infers their types)."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    have = {o.name for o in out.graph.output}
    for name in names:
        if name not in have:
            out.graph.output.append(onnx.ValueInfoProto(name=name))
            have.add(name)
    return out


def float16_tensors(model: onnx.ModelProto) -> set[str]:
    """The main graph's tensors whose type is float16 (by shape inference; the declared
    types alone where it fails on an operator it does not know)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    g = inferred.graph
    return {vi.name for vi in [*g.value_info, *g.output, *g.input]
            if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16}


def float16_nodes(model: onnx.ModelProto) -> dict[str, tuple[str, list[str]]]:
    """The graph's nodes that write a float16 tensor, Casts aside (a Cast writes the type it
    names, whatever it computes in): each node (its name, else its first output) with its
    operator type and its outputs."""
    halves = float16_tensors(model)
    return {(n.name or n.output[0]): (n.op_type, list(n.output)) for n in model.graph.node
            if n.op_type != "Cast" and n.output and any(o in halves for o in n.output)}


def input_dtypes(case: CaseInstance) -> set[str]:
    return {str(x.dtype) for x in case.inputs.values()}


def as_array(value: Any) -> np.ndarray:
    """An output as an array; a string tensor (object array of str) as a unicode array, so
    that it is stored without pickles and compared exactly."""
    x = np.asarray(value)
    if x.dtype == object and all(isinstance(v, str) for v in x.reshape(-1)):
        return x.astype(str) if x.size else np.zeros(x.shape, dtype="<U1")
    return x
