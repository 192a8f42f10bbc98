"""What a case's checks share: the run's settings, each path's result, the case context
(rows, comparisons, evidence) and the finished row. A leaf of the execution layer: the path
runners, the check families and the evaluation import it; it imports none of them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, overload

import numpy as np

from gero_runner.backends import ort
from gero_runner.case import MODEL_SUITES, CaseInstance
from gero_runner.classify import failure_kind as comparison_kind
from gero_runner.classify import nonfinite_where_finite
from gero_runner.facts import (
    CANNOT_RUN,
    DEFECT,
    ERROR_KEY,
    MALFORMED,
    MODEL_SCOPE,
    NAN,
    OUTPUTS_CHECK,
    TENSOR_OUTPUTS,
    TOOLING,
    VARIANT_BUILD,
    VARIANT_FILES,
    YARDSTICKS,
    failing_node,
    failure_facts,
    figures_json,
    law_name,
    nonfinite_kind,
    root_cause,
    scope_of,
)
from gero_runner.metrics.compare import ACTUAL, Comparison, compare
from gero_runner.metrics.model_level import MODEL_REL_FLOOR
from gero_runner.result_classes import COMPARISON_CHECKS
from gero_runner.schema import (
    COLUMN_NAMES,
    CONTRACT_ISSUE,
    EXECUTION,
    IDENTITY_COLUMNS,
    PASSED,
    Observation,
)
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import row_hash, tensor_hash
from gero_runner.tolerances import DEFAULTS, Tolerance, Tolerances

NOT_APPLICABLE = "-"
T = TypeVar("T")
# Built once: json.dumps with options constructs an encoder per call, and rows ask twice each.
_SETTINGS_JSON = json.JSONEncoder(sort_keys=True)
_DETAILS_JSON = json.JSONEncoder(sort_keys=True, default=repr)
METRIC_COLUMNS = tuple(f.name for f in fields(Comparison) if f.name in COLUMN_NAMES)
"""The comparison's figures that rows store as they are (every other field decides the class)."""


@dataclass(frozen=True)
class RunSettings:
    """Everything a worker needs to evaluate cases; identical for every worker of a run."""

    data_root: str
    levels: tuple[str, ...] = ort.LEVEL_NAMES
    """Settings to run, by optimisation label; a runtime none of whose labels is listed here
    runs all its settings (so ONNX Runtime's levels select its paths, OpenVINO's run all)."""
    backends: tuple[str, ...] = (ort.BACKEND,)
    """Runtimes under test; the ReferenceEvaluator runs whatever is listed."""
    threads: int = 1
    repeats: int = 5
    tolerances: Tolerances = DEFAULTS
    """The run's, as asked for (the per-case rule is ``Tolerances.for_case``)."""
    checks: tuple[str, ...] = ("contracts", "variants")
    """Extra check families to run (see checks.families); empty for the bare comparison."""
    evidence_inline: bool = False
    """Return each case's evidence files in ``CaseResult.evidence`` instead of writing
    them under ``data_root`` (a Dask worker sends them to the client, which writes them)."""
    max_tensor_bytes: int | None = None
    """Largest output a path may make (``--max-tensor-mb``); None: no bound."""
    max_evidence_bytes: int | None = None
    """Tensors a case keeps before the rest become summaries (``--max-evidence-mb``)."""
    skip_paths: tuple[str, ...] = ()
    """Runtime settings not to run, as ``BACKEND:SETTING`` (``--skip-path``)."""
    reuse_root: str = ""
    """The data root whose kept path outputs (``storage.path_outputs``) a path reuses and
    adds to; empty: every path is computed and nothing is kept (``--no-reuse``)."""


class _Outputs:
    """``PathResult.outputs``: the arrays, or, in a process that received a result whose
    outputs lie in a kept entry (``PathResult.kept``), read from that entry the first time
    they are asked for. A worker sends a path's result without its arrays, so the parent
    and the part that judges the case hold only the outputs they have read."""

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> None: ...
    @overload
    def __get__(self, obj: PathResult, owner: type | None = None) -> list[np.ndarray] | None:
        ...

    def __get__(self, obj: PathResult | None, owner: type | None = None
                ) -> list[np.ndarray] | None:
        if obj is None:
            return None  # the field's default
        if "_outputs" not in obj.__dict__:
            obj.__dict__["_outputs"] = obj.read_kept()
        got: list[np.ndarray] | None = obj.__dict__["_outputs"]
        return got

    def __set__(self, obj: PathResult, value: list[np.ndarray] | None) -> None:
        obj.__dict__["_outputs"] = value


@dataclass
class PathResult:
    """One path's outputs (or its error) for a case."""

    name: str
    backend: str
    version: str
    optimization: str
    threads: int
    settings: dict[str, Any]
    outputs: _Outputs = _Outputs()
    error: str | None = None
    median_ms: float = math.nan
    build_ms: float = math.nan
    """Building the session (not part of the inference time; recorded as context)."""
    repeats: int = 0
    deterministic: bool = True
    """Every repeated run gave bit-identical outputs."""
    backend_seconds: float = 0.0
    """Time inside the backend: building the session, the timed runs, releasing it."""
    files: list[str] = field(default_factory=list)
    known_defects: tuple[str, ...] = ()
    """Registry keys (backends.reference_defects) of defects this path showed on the case:
    its non-passed rows are labelled with them."""
    ran_out: bool = False
    """It ran out of its budget: its failure says nothing about the graph."""
    skipped: bool = False
    """Not run: the path ran out of its budget earlier in the case, and the row saying so
    names what it was not run on (no row of its own)."""
    reused: str = ""
    """The kept outputs it reused instead of running (``cache/outputs/KEY.npz``: its
    outputs and timing are an earlier run's); empty: computed here. Its rows' details say
    so (``reused``)."""
    reuse_problem: str = ""
    """Why a kept entry of this path could not be used (it was computed again): a sentence
    its rows' details carry (``reuse_problem``)."""
    kept: tuple[str, str] | None = None
    """(data root, key) of the kept entry (``storage.path_outputs``) that holds exactly these
    outputs; None: none does. A result pickled with one leaves its arrays behind."""
    _settings_cache: tuple[dict[str, Any], str] | None = field(
        default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.outputs is not None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.kept and state.get("_outputs") is not None:
            del state["_outputs"]  # read back from the entry where they are used
        return state

    def read_kept(self) -> list[np.ndarray] | None:
        """The outputs from the kept entry (None without one). An entry that cannot be read
        back (removed, changed since this run wrote or read it) leaves the path failed, with
        the sentence saying why."""
        if self.kept is None:
            return None
        from gero_runner.storage.path_outputs import PathOutputs

        stored, problem = PathOutputs(self.kept[0]).load(self.kept[1])
        if stored is None:
            self.error = self.error or problem or (
                f"its kept outputs {self.kept[1]} could not be read back")
            return None
        return stored.outputs

    @property
    def settings_json(self) -> str:
        """The settings as recorded on rows, encoded once per settings object."""
        cache = self._settings_cache
        if cache is None or cache[0] is not self.settings:
            cache = self._settings_cache = (self.settings, _SETTINGS_JSON.encode(self.settings))
        return cache[1]


@dataclass
class CaseResult:
    rows: list[Observation]
    backend_seconds: float
    total_seconds: float
    evidence_seconds: float = 0.0
    """Writing the evidence directory and hashing the rows' ids (a part of the overhead)."""
    batch: bytes | None = None
    """The rows as an Arrow IPC record batch of the observation schema, when a worker made
    it (``rows`` is then empty): the parent stores them without touching a dict."""
    evidence: dict[str, dict[str, bytes]] | None = None
    """With ``RunSettings.evidence_inline``: the evidence directory by its path relative to
    the data root, file name to bytes, for the client to publish."""


@dataclass
class CaseContext:
    """What check families get: the case, its paths, the evidence writer and row helpers."""

    case: CaseInstance
    settings: RunSettings
    writer: EvidenceWriter
    paths: dict[str, PathResult]
    output_names: list[str]
    graph_hash: str
    input_hash: str
    backend_seconds: float = 0.0
    family_paths: tuple[str, ...] | None = None
    """The paths (by name) the contract and variant families check; None: every path (a
    split case checks each path in its own part)."""
    model_runs: Any = None
    """The runs a model case's parts made, for the model family (``checks.model.ModelRuns``;
    None outside a model case's plan)."""
    _digests: dict[int, tuple[np.ndarray, str]] = field(default_factory=dict, repr=False)
    _comparisons: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)
    _nodes: dict[tuple[str, str], tuple[str, str, str] | None] = field(default_factory=dict,
                                                                       repr=False)

    @contextlib.contextmanager
    def backend_time(self) -> Iterator[None]:
        """Time spent inside the block is backend time (building, running, releasing)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.backend_seconds += time.perf_counter() - start

    def digest(self, x: np.ndarray) -> str:
        """``tensor_hash`` of an array of this case, computed once per array (a case's
        outputs and law sides are never modified once made)."""
        hit = self._digests.get(id(x))
        if hit is None:  # the array is kept with its hash, so its id is not reused
            hit = self._digests[id(x)] = (x, tensor_hash(x))
        return hit[1]

    def compare(self, a: np.ndarray, r: np.ndarray, rtol: float, atol: float) -> Comparison:
        """``compare``, once per distinct pair of tensors and tolerance: the ORT levels
        usually agree bit for bit, so most comparisons of a case repeat an earlier one."""
        floor = MODEL_REL_FLOOR if self.case.suite in MODEL_SUITES else 0.0
        return self.once(("compare", self.digest(a), self.digest(r), rtol, atol),
                         lambda: compare(a, r, rtol, atol, rel_floor=floor))

    def once(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked for in this case; keys name every
        input by content, so a repeat gives what a fresh computation would."""
        if key not in self._comparisons:
            self._comparisons[key] = compute()
        result: T = self._comparisons[key]
        return result

    @functools.cached_property
    def input_shapes(self) -> str:
        """The case's input shapes as rows record them, e.g. '[2,3];[3]'."""
        return ";".join("[" + ",".join(str(d) for d in x.shape) + "]"
                        for x in self.case.inputs.values())

    def tolerance(self, dtype: str) -> Tolerance:
        return self.settings.tolerances.for_case(self.case.tolerance, dtype,
                                                 model=self.case.suite in MODEL_SUITES)

    def row(self, *, check: str, output_name: str, actual: PathResult, reference_name: str,
            reference_version: str, dtype: str, cmp: Comparison | None, rtol: float,
            atol: float, result: str, reason: str, arbiter: str = NOT_APPLICABLE,
            actual_hash: str = "", reference_hash: str = "", actual_file: str = "",
            reference_file: str = "", reference_ms: float = math.nan,
            details: dict[str, Any] | None = None, failed_path: str = "",
            cause: str = "", failure_kind: str = "", error: str = "", scope: str = "",
            cause_key: str = "", note: str = "",
            figures: dict[str, Any] | None = None) -> Observation:
        """An observation row of this case (ids added by ``finish_row``); without a
        comparison (a path failed) its metric columns keep the row type's defaults.

        A non-passed row of a path that showed a known ReferenceEvaluator defect on this
        case (different outputs, or a failure the corrected evaluator does not have) names
        the registry entry, in the reason and in the details. ``failed_path``, ``cause``,
        ``failure_kind``, ``scope``, ``cause_key``, ``note``, ``figures``: the verdict's facts
        (``gero_runner.facts``), each the site's where it names one, else what the row's
        own arguments say (never its sentence): a registered defect (``defect``, keyed
        ``defect:KEYS``), a path that failed (``cannot-run``, keyed by the operator its
        ``error`` says it lacks, or ``out-of-budget``), else the check's law or gate
        (``law:NAME``); the scope from the check (a variant file, the model, the graph).
        A verdict about gero's own tooling (a variant file its builder cannot make, an output
        it does not compare, a yardstick that cannot run) is a note on a passed row: it
        changes no class count and no exit status (issue 40)."""
        if actual.known_defects and result != PASSED:
            from gero_runner.backends.reference_defects import BY_KEY

            entries = [BY_KEY[k] for k in actual.known_defects]
            reason = "; ".join(d.label() for d in entries) + " — " + reason
            details = {**(details or {}), "known_defect": [d.as_dict() for d in entries]}
            if failure_kind != NAN:  # NaN fed to both sides is no defect's doing
                failure_kind = DEFECT
                cause_key = "defect:" + ",".join(sorted({d.key for d in entries}))
        if result == PASSED:
            failure_kind = cause_key = ""
        elif not failure_kind and check.endswith(":build"):  # gero's builder, no runtime
            failure_kind, cause_key = TOOLING, cause_key or VARIANT_BUILD
        elif not failure_kind and check == OUTPUTS_CHECK:  # an output gero cannot compare
            failure_kind, cause_key = TOOLING, cause_key or TENSOR_OUTPUTS
        elif not failure_kind and (failed_path or result == EXECUTION):
            where = scope or scope_of(self.case.suite, check)
            failure_kind, found = failure_facts(cause or reason, error, self.op_domains,
                                                self.failing_op(error, where))
            cause_key = cause_key or found
        elif not failure_kind and cmp is not None and check in COMPARISON_CHECKS:
            failure_kind = comparison_kind(cmp)  # a parity row's, like any comparison's
        elif not failure_kind and cmp is not None and nonfinite_where_finite(cmp):
            # NaN or inf where the yardstick is finite, whatever law or gate it broke: one
            # cause of the path, one finding (magika: tract's fp16 NaN on three gates)
            failure_kind = nonfinite_kind(ACTUAL)
        elif not failure_kind:
            failure_kind = law_name(check)
        if self.case.malformed and result != PASSED:
            failure_kind, cause_key, result = self._malformed(failure_kind, cause_key,
                                                              result, reason)
        if failure_kind == TOOLING:  # about gero's own tooling, no runtime's: a note (issue 40)
            result, note = PASSED, note or reason
            failure_kind = cause_key = ""
        scope = scope or scope_of(self.case.suite, check)
        if cmp is not None and result != PASSED:
            figures = {"mismatches": cmp.mismatch_count, "elements": cmp.element_count,
                       "max_abs_error": _finite(cmp.max_abs_error), **(figures or {})}
        if actual.reused:  # a fact a reader of the timing needs: it is an earlier run's
            details = {**(details or {}), "reused": actual.reused}
        if actual.reuse_problem:
            details = {**(details or {}), "reuse_problem": actual.reuse_problem}
        c = self.case
        if c.inputs_text:  # what a user model was fed, and why (models.inputs)
            details = {**(details or {}), "inputs": c.inputs_text}
        metrics = {} if cmp is None else {name: getattr(cmp, name) for name in METRIC_COLUMNS}
        return Observation(
            suite=c.suite, case_id=c.case_id, op_type=c.op_type, case_name=c.case_name,
            check=check, dtype=dtype, input_shapes=self.input_shapes, output_name=output_name,
            backend=actual.backend, backend_version=actual.version,
            optimization=actual.optimization, threads=actual.threads,
            reference=reference_name, reference_version=reference_version, rtol=rtol,
            atol=atol, result=result, reason=reason, arbiter=arbiter,
            actual_hash=actual_hash, reference_hash=reference_hash,
            graph_hash=self.graph_hash, input_hash=self.input_hash, seed=c.seed,
            actual_file=actual_file, reference_file=reference_file,
            actual_median_ms=actual.median_ms, reference_median_ms=reference_ms,
            repeats=actual.repeats, session_settings=actual.settings_json,
            details=_DETAILS_JSON.encode(details) if details else "{}",
            failed_path=failed_path, cause=cause, failure_kind=failure_kind, scope=scope,
            cause_key=cause_key, note=note, figures=figures_json(figures or {}), **metrics)

    def _malformed(self, kind: str, key: str, result: str, reason: str
                   ) -> tuple[str, str, str]:
        """On a model that breaks an operator's spec (``CaseInstance.malformed``): a path
        that failed on the model with an error no known cause names (not an operator it
        lacks, not its time budget) failed on the malformed node, as did a path failing with
        that same error on a variant file, and gero's yardstick (the float64 shadow, the
        fp16 yardstick) that could not run for that error: the model's finding, no path's nor
        gero's tooling's (logreg_iris: the ReferenceEvaluator's 'operands could not be
        broadcast' on a LinearClassifier holding 12 coefficients for 3 classes x 2
        features); the yardstick's row is a contract issue (the model cannot be assessed),
        not a note. A failure with another error stays its own."""
        errors = self._model_errors
        first = self.case.malformed[0][0]
        if kind == CANNOT_RUN and key in errors.values():
            return MALFORMED, first, result
        if kind == TOOLING and key in YARDSTICKS and any(e in reason for e in errors):
            return MALFORMED, first, CONTRACT_ISSUE
        return kind, key, result

    @functools.cached_property
    def _model_errors(self) -> dict[str, str]:
        """The errors the paths failed with on the model itself that no known cause names
        (root cause -> cause key)."""
        found = {}
        for p in self.paths.values():
            if p.error and not p.ok:
                words = root_cause(p.error)
                kind, key = failure_facts(words, p.error, self.op_domains,
                                          self.failing_op(p.error, MODEL_SCOPE))
                if kind == CANNOT_RUN and key.startswith(ERROR_KEY):
                    found[words] = key
        return found

    def failing_op(self, error: str, scope: str) -> tuple[str, str, str] | None:
        """``(dtype, domain, op)`` of the node a path's error says it failed on
        (``failing_node``), read in the graph it ran (``scope``: the model, or a variant
        file the plan built), None where the error names none or the graph has no such
        node: tract names its own op (``LayerNorm``) over a root cause that names none."""
        name = failing_node(error)
        if not name:
            return None
        if (scope, name) not in self._nodes:
            model: Any = self.case.model
            if scope in VARIANT_FILES:
                made = getattr(self.model_runs, "variant_models", None) or {}
                model = made.get(scope)
            self._nodes[(scope, name)] = (node_op(model, name) if isinstance(model, bytes)
                                          else None)
        return self._nodes[(scope, name)]

    @functools.cached_property
    def op_domains(self) -> dict[str, str]:
        """The case's operators, type -> domain (an error that names no domain, tract's
        ``Unimplemented(Scaler)``, takes the graph's); read on the case's first failure."""
        import onnx

        try:
            graph = onnx.load_from_string(self.case.model).graph
        except Exception:  # a graph gero cannot parse: the error's words are all there is
            return {}
        return {n.op_type: n.domain or "ai.onnx" for n in graph.node}


def node_op(model: bytes, name: str) -> tuple[str, str, str] | None:
    """``(dtype, domain, op)`` of the graph's node ``name`` (in a subgraph too): its
    operator, and the element type of its first input (float16 for the fp16 file's
    LayerNormalization, where the fp32 model's runs); None where there is no such node."""
    import onnx

    try:
        proto = onnx.load_from_string(model)
    except Exception:  # a graph gero cannot parse: the error's words are all there is
        return None
    node = next((n for n in _all_nodes(proto.graph) if n.name == name), None)
    if node is None:
        return None
    first = node.input[0] if node.input else ""
    elem = _elem_type(proto.graph, first)
    if not elem and first:
        try:  # the exporter declared no type for it: inferred
            elem = _elem_type(onnx.shape_inference.infer_shapes(proto).graph, first)
        except Exception:
            elem = 0
    dtype = (onnx.helper.tensor_dtype_to_np_dtype(elem).name if elem else "")
    return dtype, node.domain or "ai.onnx", node.op_type


def _all_nodes(graph: Any) -> Iterator[Any]:
    import onnx

    for node in graph.node:
        yield node
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                yield from _all_nodes(sub)


def _elem_type(graph: Any, name: str) -> int:
    """The element type the graph declares for the value ``name``, 0 where it declares
    none."""
    for t in graph.initializer:
        if t.name == name:
            return int(t.data_type)
    for v in [*graph.input, *graph.value_info, *graph.output]:
        if v.name == name and v.type.HasField("tensor_type"):
            return int(v.type.tensor_type.elem_type)
    return 0


def _finite(x: float) -> float | None:
    """A figure JSON can hold (NaN and ±inf are no figure: None)."""
    return x if math.isfinite(x) else None


OUTPUT_IDENTITY = ("actual_hash", "reference_hash", "result", "reason")
"""Identity columns that depend on the values a path computed."""
RANDOM_IDENTITY = tuple(c for c in IDENTITY_COLUMNS if c not in OUTPUT_IDENTITY)
"""A random case's identity: its slot (case, check, path, settings), not its draws."""


def note_summaries(rows: list[Observation], writer: EvidenceWriter) -> list[Observation]:
    """Rows that compare a tensor kept only as a summary say so, and keep the worst
    elements of their comparison (the tensors themselves are not on disk)."""
    if not writer.summarised:
        return rows
    from gero_runner.storage.budget import worst_elements

    noted = []
    for row in rows:
        sides = [side for side, rel in (("actual", row.actual_file),
                                        ("reference", row.reference_file))
                 if rel in writer.summarised]
        if not sides:
            noted.append(row)
            continue
        details = json.loads(row.details)
        details["evidence"] = (f"{' and '.join(sides)} tensor kept as a summary (shape, dtype, "
                               "hash, statistics; summaries.json): a replay checks its hash "
                               "but cannot measure a difference")
        worst = worst_elements(writer.array(row.actual_file), writer.array(row.reference_file))
        if worst:
            details["worst"] = worst
        noted.append(replace(row, details=_DETAILS_JSON.encode(details)))
    return noted


def finish_row(row: Observation, artifact_path: str, random: bool = False) -> Observation:
    """The row with its evidence directory and its id (the hash of its identity columns;
    without the output-dependent ones for a ``random`` case)."""
    return replace(row, artifact_path=artifact_path,
                   observation_id=row_hash(row, RANDOM_IDENTITY if random else IDENTITY_COLUMNS))


