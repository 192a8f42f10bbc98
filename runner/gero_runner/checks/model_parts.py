"""A model case in parts: each path under its own budget, spread over the workers, or run
one after another in one process (``checks.task``: the executor chooses; the plan is the
same).

The parts of a model case (each run by the worker pool in a worker, under the path budget
``--path-budget`` gives the plan; inline, each to its end):

- each runtime setting and the ReferenceEvaluator on the model, and each variant's build;
- the corrected ReferenceEvaluator, when the graph holds an operator with a known defect;
- per path that ran, one part after another (its chain): a runtime baseline's noise-floor
  runs on the model; per variant, the path on the variant and a baseline's noise-floor
  runs on it; last, the path on the contract graphs (the contract families);
- judging the case (comparisons, gates, evidence), under the per-case timeout.

Which settings run (``--paths``): ``all`` runs every selected setting of every runtime.
``needed``, the default, runs first what every verdict needs: each runtime's deployed
setting (``Backend.deployed``: ONNX Runtime ``all``, OpenVINO's default, tract optimized),
the setting its noise floor is measured on, and the ReferenceEvaluator; each runtime says
when its other settings can change or explain a verdict (``Backend.needed_when``), and the
plan decides from their outputs as the judge reads them (``ends_agree``, ``within_gates``):
the unoptimised base where the deployed setting is off its gates (is the optimiser at
fault?), a level between base and deployed where those two differ (which level makes the
difference?). A setting that runs, runs on each variant file too, and an unoptimised base
the model did not need still runs on a variant file its deployed setting is off on; the
contract graphs run on the deployed settings and the ReferenceEvaluator. Such a base that
fails on a variant file runs on the model too (and from there as any setting that runs):
whether it fails there as well says whose failure it is, the model's or the file's. A
setting not run has no row (it counts as nothing); the case's ``plan.json`` (evidence) names
it and says why, and the variant files it ran on all the same.

A part that runs out of its budget, or whose worker dies, becomes one row that names the
path, the time it had and what it ran on, and its path is not run on the rest of its chain
(the same row says what it skipped); every other row of the case is kept. Which parts run
depends only on what earlier parts of the same path gave, never on which part finished
first, so rows and evidence are those of a one-worker run.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.backends import reference
from gero_runner.backends.base import (
    NEEDED_ALWAYS,
    NEEDED_WHEN_ENDS_DIFFER,
    NEEDED_WHEN_OFF,
    Backend,
    PathSpec,
)
from gero_runner.case import MODEL_SUITES, CaseInstance
from gero_runner.checks.contracts.paths import execution_row
from gero_runner.checks.early import first_verdict
from gero_runner.checks.families import run_family
from gero_runner.checks.model import (
    Floors,
    ModelRuns,
    StatsRule,
    calibration_of,
    floor_is_lazy,
    floors_of,
    floors_unneeded,
    fp16_yardsticks,
    int8_exact,
    int8_exact_needed,
)
from gero_runner.checks.precision import explain_rows
from gero_runner.checks.reuse import noisy_runs_kept, variant_kept
from gero_runner.classify import classify
from gero_runner.errors import GeroError, error_text
from gero_runner.execution.context import CaseContext, CaseResult, PathResult, RunSettings
from gero_runner.execution.evaluate import case_context, execution_rows, judge_case
from gero_runner.execution.paths import (
    PathTable,
    compare_paths,
    explain_reference_on_variant,
    path_outputs,
    path_result,
    run_corrected_reference,
    run_path,
)
from gero_runner.execution.plan import Part, Plan, ran_out
from gero_runner.facts import CONTRACTS_SCOPE, masked
from gero_runner.metrics import model_level as ml
from gero_runner.metrics.compare import compare
from gero_runner.metrics.model_level import MODEL_REL_FLOOR
from gero_runner.models import variants as var
from gero_runner.request import DECISION_TASKS, PATHS_ALL, PATHS_CHOICES, PATHS_NEEDED
from gero_runner.schema import PASSED, Observation
from gero_runner.tolerances import Tolerances

FP32 = "fp32"
"""The noise-floor runs' label for the model itself (a variant's is its name)."""
MODEL_FAMILY = "model"
PLAN_FILE = "plan.json"
"""The case's evidence file that names each setting the plan did not run, and why."""
FAMILIES_CHECK = "contracts"
"""The check of the row that says a path ran out of its budget on the contract graphs."""


def who(spec: PathSpec) -> str:
    """A path as a sentence names it: 'tract optimized', 'the ReferenceEvaluator'."""
    if spec.backend == reference.BACKEND:
        return "the ReferenceEvaluator"
    if spec.backend == reference.CORRECTED:
        return "the corrected ReferenceEvaluator"
    return f"{spec.backend} {spec.optimization}"


def _backend(spec: PathSpec) -> Backend:
    if spec.backend == reference.CORRECTED:
        return reference.CORRECTED_RUNTIME
    return backends.get(spec.backend)


def _on(variant: str) -> str:
    return "the model" if variant == FP32 else f"the {variant} variant"


# ---- the parts (run in a worker) --------------------------------------------------------


@dataclass
class RunPath(Part):
    """A path on the model, or on a variant (``case.model`` is then the variant)."""

    case: CaseInstance
    spec: PathSpec
    repeats: int
    max_tensor_bytes: int | None
    label: str
    budget_s: float
    variant: str = FP32

    def run(self, settings: Any) -> PathResult:
        result = run_path(_backend(self.spec), self.spec, self.case, self.repeats,
                          self.max_tensor_bytes, path_outputs(settings))
        if self.spec.backend == reference.BACKEND and self.variant != FP32:
            # On the model, the corrected evaluator's part does it.
            explain_reference_on_variant(self.case, result, path_outputs(settings))
        return result


@dataclass
class BuildVariant(Part):
    """A variant's model: its bytes, or why it could not be built (a sentence)."""

    case: CaseInstance
    name: str
    label: str
    budget_s: float

    def run(self, settings: Any) -> bytes | str:
        try:
            return variant_kept(path_outputs(settings), self.name, self.case.model,
                                self.case.inputs, self.case.seed, calibration_of(self.case))
        except Exception as e:  # the model family's row says so
            return error_text(e)


@dataclass
class Fp16Yardsticks(Part):
    """The fp16 file's float64 shadow rounded to float16 at each node, its exact float64
    shadow (the ReferenceEvaluator twice: a path of its own) and the first tensor float16
    overflows in the former."""

    model: bytes
    inputs: dict[str, np.ndarray]
    label: str
    budget_s: float

    def run(self, settings: Any) -> tuple[list[np.ndarray], list[np.ndarray], str] | str:
        try:
            return fp16_yardsticks(self.model, self.inputs)
        except Exception as e:  # the model family's row says so
            return error_text(e)


@dataclass
class Int8Exact(Part):
    """An int8 file computed exactly (its float parts in float64, the ReferenceEvaluator),
    asked for only where a path disagrees with the run's baseline on it."""

    model: bytes
    inputs: dict[str, np.ndarray]
    variant: str
    label: str
    budget_s: float

    def run(self, settings: Any) -> list[np.ndarray] | str:
        try:
            return int8_exact(self.model, self.inputs)
        except Exception as e:  # the int8 rows say so
            return error_text(e) or type(e).__name__


@dataclass
class CorrectReference(Part):
    """The corrected ReferenceEvaluator (when it is needed): its path and the stock
    path's known defects."""

    case: CaseInstance
    ref: PathResult
    runtime_paths: list[PathResult]
    label: str
    budget_s: float

    def run(self, settings: Any) -> tuple[PathResult | None, tuple[str, ...]]:
        corrected = run_corrected_reference(self.case, self.ref, self.runtime_paths,
                                            settings.tolerances, path_outputs(settings))
        return corrected, self.ref.known_defects


@dataclass
class NoiseRuns(Part):
    """A runtime baseline's noise-floor runs on the model or a variant, made into its
    floors here (the runs themselves are not sent back), and their backend seconds."""

    case: CaseInstance
    model: bytes
    variant: str
    spec: PathSpec
    base: list[np.ndarray]
    disabled: list[np.ndarray] | None
    rule: StatsRule
    label: str
    budget_s: float

    def run(self, settings: Any) -> tuple[Floors, float]:
        timer = _Timer()
        runs = noisy_runs_kept(path_outputs(settings), _backend(self.spec), self.spec,
                               self.model, self.case.inputs, self.case.seed, self.variant,
                               timer)
        return floors_of(self.base, self.disabled, runs, self.rule), timer.seconds


@dataclass
class FamilyResult:
    """What one path's contract families made: rows by family, the evidence files they
    added, and their backend seconds."""

    rows: dict[str, list[Observation]]
    files: dict[str, bytes]
    summaries: dict[str, dict[str, object]]
    summarised: dict[str, np.ndarray]
    backend_seconds: float


@dataclass
class RunFamilies(Part):
    """One path on the contract graphs: the check families other than the model family,
    restricted to that path, on the context every part of the case builds alike."""

    case: CaseInstance
    runtime_paths: list[PathResult]
    ref: PathResult
    corrected: PathResult | None
    key: str
    names: tuple[str, ...]
    label: str
    budget_s: float

    def run(self, settings: Any) -> FamilyResult:
        ctx, _, _ = case_context(self.case, settings, self.runtime_paths, self.ref,
                                 self.corrected)
        ctx.family_paths = (self.key,)
        writer = ctx.writer
        files, summaries = set(writer.files), set(writer.summaries)
        before = ctx.backend_seconds
        rows = {name: run_family(name, ctx) for name in self.names}
        return FamilyResult(rows, {k: v for k, v in writer.files.items() if k not in files},
                            {k: v for k, v in writer.summaries.items() if k not in summaries},
                            {k: v for k, v in writer.summarised.items() if k not in summaries},
                            ctx.backend_seconds - before)


@dataclass
class Judge(Part):
    """The case judged from what its parts made: comparisons, check families, evidence."""

    plan: _Made
    label: str
    budget_s: float

    def run(self, settings: Any) -> CaseResult:
        made = self.plan
        start = time.perf_counter()
        runs = ModelRuns(made.noise, made.variant_models, made.on_variant, made.keys,
                         made.yardsticks, made.int8_exact)

        def family_rows(name: str, ctx: CaseContext) -> list[Observation]:
            rows: list[Observation] = []
            if not made.merged:  # the first family asked for
                made.merge_into(ctx)
                failed = made.corrected_failure
                if failed is not None:
                    rows += compare_paths(ctx, "agreement", failed, made.ref)
            if name == MODEL_FAMILY:
                return rows + run_family(name, ctx)
            for key in made.keys:
                if name == made.families[0] and key in made.family_failures:
                    path = ctx.paths[key]
                    row = execution_row(ctx, FAMILIES_CHECK, path, "", ctx.case.dtype,
                                        made.family_failures[key], "law:contracts")
                    # it failed on the graphs derived from the model, not on the model:
                    # its scope, and its words without what the title says (who, where)
                    cause = row.cause.removeprefix("worker process ").replace(
                        " on the contract graphs, on ", " on ", 1)
                    rows.append(dataclasses.replace(row, scope=CONTRACTS_SCOPE, cause=cause))
                got = made.family_results.get(key)
                if got is not None:
                    rows += got.rows.get(name, [])
            return rows

        result = judge_case(made.case, settings, made.runtime_paths, made.ref, made.corrected,
                            start=start, family_rows=family_rows, model_runs=runs,
                            explain=explain_rows)
        backend = made.backend_seconds()
        return dataclasses.replace(result, backend_seconds=result.backend_seconds + backend)


class _Timer:
    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> _Timer:
        return self

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.seconds += time.perf_counter() - self._start


# ---- the plan (in the parent) -----------------------------------------------------------


def check_paths(paths: str) -> str:
    """``--paths`` names one of ``PATHS_CHOICES`` (one sentence otherwise)."""
    if paths not in PATHS_CHOICES:
        raise GeroError(f"--paths {paths}: choose {' or '.join(PATHS_CHOICES)}")
    return paths


def _row_passes(a: np.ndarray, r: np.ndarray, case: CaseInstance,
                tolerances: Tolerances) -> bool:
    """A row of ``a`` against ``r`` passes, as the judge classifies it (compare_paths: the
    reference's dtype gives the tolerance, the model's scale floors the relative error)."""
    rtol, atol = tolerances.for_case(case.tolerance, str(r.dtype), model=True)
    cmp = compare(a, r, rtol, atol, rel_floor=MODEL_REL_FLOOR)
    return classify(cmp, rtol, atol)[0] == PASSED


def ends_agree(base: PathResult, deployed: PathResult, case: CaseInstance,
               tolerances: Tolerances) -> bool:
    """A runtime's unoptimised base and its deployed setting give outputs whose ``levels``
    rows pass: no level between them can name a difference."""
    if base.outputs is None or deployed.outputs is None:
        return False
    return len(base.outputs) == len(deployed.outputs) and all(
        _row_passes(a, r, case, tolerances)
        for a, r in zip(deployed.outputs, base.outputs, strict=True))


def within_gates(path: PathResult, truth: list[np.ndarray], exact: list[np.ndarray],
                 case: CaseInstance, tolerances: Tolerances, rule: StatsRule) -> bool:
    """The path's rows against the arbiter pass without a noise floor (which can only widen
    the scaled-error gate): each output within tolerance of ``truth`` (the ``expected`` row),
    and each float output's scaled error against ``exact`` within the ``model:fp32`` gate,
    finite, every decision agreeing. A path that failed is off."""
    if path.outputs is None or len(path.outputs) != len(truth):
        return False
    for j, (a, r) in enumerate(zip(path.outputs, truth, strict=True)):
        if a.shape != r.shape or not _row_passes(a, r, case, tolerances):
            return False
        if a.dtype.kind != "f" or j >= len(exact) or exact[j].shape != a.shape:
            continue
        stats = rule.stats(j, a, np.asarray(exact[j]))
        if (not stats.finite or stats.scaled_error > ml.scaled_limit(a.dtype)
                or (rule.decides(j) and stats.decisions_agree < stats.decisions)):
            return False
    return True


@dataclass
class _Made:
    """What a model case's parts made so far (sent whole to the part that judges it)."""

    case: CaseInstance
    keys: list[str]
    """Every path's name, runtime settings first, the ReferenceEvaluator last."""
    families: tuple[str, ...]
    on_model: dict[str, PathResult] = field(default_factory=dict)
    variant_models: dict[str, bytes | str] = field(default_factory=dict)
    on_variant: dict[str, dict[str, PathResult]] = field(default_factory=dict)
    noise: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(variant or 'fp32', path) -> (runs, seconds), a failure's sentence; absent: not run."""
    corrected: PathResult | None = None
    family_results: dict[str, FamilyResult] = field(default_factory=dict)
    family_failures: dict[str, str] = field(default_factory=dict)
    yardsticks: Any = None
    """The fp16 file's two float64 shadows and their seconds, or why they are missing."""
    int8_exact: dict[str, Any] = field(default_factory=dict)
    """An int8 file computed exactly, by variant, or why it is missing; absent: not asked."""
    corrected_failure: PathResult | None = None
    """The corrected ReferenceEvaluator, when it ran out (the stock one is used)."""
    merged: bool = False
    paths_mode: str = PATHS_NEEDED
    not_needed: dict[str, str] = field(default_factory=dict)
    """Settings the plan did not run, each with why."""
    ran_on_variants: dict[str, list[str]] = field(default_factory=dict)
    """Of those, the variant files each ran on all the same (its deployed setting is off
    there)."""

    @property
    def runtime_paths(self) -> list[PathResult]:
        return [self.on_model[k] for k in self.keys[:-1]]

    @property
    def ref(self) -> PathResult:
        return self.on_model[self.keys[-1]]

    def merge_into(self, ctx: CaseContext) -> None:
        """The evidence the contract parts added, into the case's writer."""
        writer = ctx.writer
        for key in self.keys:
            got = self.family_results.get(key)
            if got is None:
                continue
            for rel, data in got.files.items():
                writer.add_bytes(rel, data)
            writer.summaries.update(got.summaries)
            writer.summarised.update(got.summarised)
        writer.add_json(PLAN_FILE, self.plan_record())
        self.merged = True

    def plan_record(self) -> dict[str, Any]:
        """``plan.json``: the plan's mode, the settings it ran and those it did not, why."""
        return {"paths": self.paths_mode, "ran": list(self.keys),
                "not_run": dict(self.not_needed), "ran_on_variants": self.ran_on_variants}

    def backend_seconds(self) -> float:
        """Backend time of the parts the judge does not count itself (contract graphs)."""
        return sum(r.backend_seconds for r in self.family_results.values())


@dataclass
class _Link:
    """One step of a path's chain: ('noise', variant), ('variant', name) or ('families')."""

    kind: str
    variant: str = FP32

    def describe(self) -> str:
        if self.kind == "families":
            return "the contract graphs"
        if self.kind == "noise":
            return f"the noise-floor runs on {_on(self.variant)}"
        return _on(self.variant)


class ModelCasePlan(Plan):
    """The parts of one model case and what they made (see the module doc)."""

    def __init__(self, case: CaseInstance, settings: RunSettings, table: PathTable, *,
                 path_budget_s: float, timeout_s: float, paths: str = PATHS_NEEDED) -> None:
        """``table``: the selected runtimes' settings; each path's part runs under
        ``path_budget_s``, judging the case under ``timeout_s``; ``paths``: which settings
        run (``--paths``)."""
        self.case, self.settings, self.timeout_s = case, settings, timeout_s
        self.budget = path_budget_s
        self.paths_mode = check_paths(paths)
        self.specs: dict[str, PathSpec] = {s.name: s for s in table.specs}
        self.specs[reference.PATH.name] = reference.PATH
        self.order = list(self.specs)
        """Every setting and the ReferenceEvaluator (last), in the table's order."""
        # What each runtime says of its settings: the deployed one, the base (the first
        # selected), and when the default plan runs each (``Backend.needed_when``).
        self.deployed: dict[str, str] = {}
        self.base_of: dict[str, str] = {}
        self.needs: dict[str, str] = {}
        for spec in table.specs:
            specs = [s for s in table.specs if s.backend == spec.backend]
            runtime = backends.get(spec.backend)
            self.deployed[spec.backend] = runtime.deployed(specs).name
            self.base_of[spec.backend] = specs[0].name
            self.needs[spec.name] = (runtime.needed_when(spec, specs)
                                     if self.paths_mode == PATHS_NEEDED else NEEDED_ALWAYS)
        self.pending = {k: when for k, when in self.needs.items() if when != NEEDED_ALWAYS}
        """Settings whose need is not decided yet (their deciding outputs are to come)."""
        self.not_needed: dict[str, str] = {}
        """Settings the plan did not run, each with why (``plan.json``)."""
        self.variant_only: dict[str, PathSpec] = {}
        """Unoptimised bases the model did not need: each may still run on a variant file
        its deployed setting is off on (``_decide_variant_only``)."""
        self.on_variant_only: dict[tuple[str, str], str] = {}
        """(variant, setting) of those: "running", "done" or "skip" (not needed there)."""
        model_family = MODEL_FAMILY in settings.checks and case.suite in MODEL_SUITES
        checks = case.model_checks
        self.variants = tuple(checks.variants) if model_family and checks is not None else ()
        # Each runtime baseline's first setting (the other end of its floor), by name.
        self.bases = ({base: first for base, first in table.baselines.values()}
                      if model_family else {})
        self.run_base = next(iter(self.bases), None)
        """The run's baseline (the first runtime's): its int8 floors gate the other paths."""
        import onnx

        names = tuple(o.name for o in onnx.load_from_string(case.model).graph.output)
        self.rule = StatsRule(names, checks is not None and checks.task in DECISION_TASKS,
                              tuple(dict(checks.decision_axes).items()) if checks else ())
        self.yardsticks_state = "none"  # "running", "done"
        self.exact_state = {v: "none" for v in self.variants if v != var.FP16}
        """Each int8 file's exact computation: "none" (not decided), "running", "done"."""
        names = tuple(f for f in settings.checks if f != MODEL_FAMILY)
        self.made = _Made(case, list(self.specs), names, paths_mode=self.paths_mode,
                          not_needed=self.not_needed)
        self.made.on_variant = {v: {} for v in self.variants}
        self.chains: dict[str, list[_Link]] = {}
        self.next_link: dict[str, int] = {}
        self.busy: set[str] = set()
        """Paths whose chain has a part out now."""
        self.corrected_state = "unknown"  # then "running", "done"
        self.judging = False
        self._result: CaseResult | None = None
        self._new: list[Part] = []
        self._made_count = 0
        for spec in self.specs.values():
            if spec.name not in self.pending:
                self._run_on_model(spec)
        for name in self.variants:
            self._add(BuildVariant(case, name, f"building the {name} variant", self.budget))

    # ---- the Plan interface
    def ready(self) -> list[Part]:
        new, self._new = self._new, []
        return new

    @property
    def result(self) -> CaseResult | None:
        return self._result

    @property
    def planned(self) -> int:
        future = 0
        for key in self.specs:
            if key not in self.made.on_model:
                future += len(self._chain_for(key, ok=True, completed=True))
            else:
                future += len(self.chains.get(key, [])) - self.next_link.get(key, 0)
        return self._made_count + future + (0 if self.judging else 1)

    def finish(self, part: Part, result: Any) -> None:
        made = self.made
        if isinstance(part, Judge):
            self._result = result
            return
        if isinstance(part, RunPath):
            if part.variant == FP32:  # on the model itself
                made.on_model[part.spec.name] = result
                early = first_verdict(self.case, self.rule, part.spec, result,
                                      list(self.specs.values()))
                self.early += (early,) if early else ()
                self._start_chain(part.spec.name, result)
            else:
                made.on_variant[part.variant][part.spec.name] = result
                if self.on_variant_only.get((part.variant, part.spec.name)) == "running":
                    self.on_variant_only[(part.variant, part.spec.name)] = "done"
                    if not result.ok and not self._files_own_failure(
                            part.spec.name, part.variant, result):
                        self._run_on_model_too(part.spec.name)
                else:
                    self._link_done(part.spec.name)
        elif isinstance(part, BuildVariant):
            made.variant_models[part.name] = result
            if part.name == var.FP16 and isinstance(result, bytes):
                self.yardsticks_state = "running"
                self._add(Fp16Yardsticks(result, self.case.inputs,
                                         "the float64 shadows of the fp16 variant",
                                         self.budget))
        elif isinstance(part, Fp16Yardsticks):
            made.yardsticks = result if isinstance(result, str) else (result, 0.0)
            self.yardsticks_state = "done"
        elif isinstance(part, Int8Exact):
            made.int8_exact[part.variant] = result
            self.exact_state[part.variant] = "done"
        elif isinstance(part, CorrectReference):
            made.corrected, known = result
            made.ref.known_defects = known
            self.corrected_state = "done"
        elif isinstance(part, NoiseRuns):
            made.noise[(part.variant, part.spec.name)] = result
            self._link_done(part.spec.name)
        elif isinstance(part, RunFamilies):
            made.family_results[part.key] = result
            self._link_done(part.key)
        self._advance()

    def fail(self, part: Part, message: str, out_of_budget: bool) -> None:
        made = self.made

        def why(name: str, on: str) -> str:
            return ran_out(name, self.budget, on) if out_of_budget else message

        if isinstance(part, Judge):
            reason = (f"judging the case ran out of its {self.timeout_s:g} s (--timeout)"
                      if out_of_budget else f"judging the case failed: {message}")
            self._result = CaseResult(execution_rows(self.case, reason), 0.0, 0.0)
            return
        if isinstance(part, BuildVariant):
            made.variant_models[part.name] = (
                f"it ran out of its {self.budget:g} s budget" if out_of_budget else message)
        elif isinstance(part, Fp16Yardsticks):
            made.yardsticks = (f"they ran out of their {self.budget:g} s budget"
                               if out_of_budget else message)
            self.yardsticks_state = "done"
        elif isinstance(part, Int8Exact):
            made.int8_exact[part.variant] = (
                f"it ran out of its {self.budget:g} s budget" if out_of_budget else message)
            self.exact_state[part.variant] = "done"
        elif isinstance(part, CorrectReference):
            # The runtimes are compared with the stock evaluator; this row says why.
            failed = path_result(reference.CORRECTED_RUNTIME, reference.CORRECTED_PATH)
            failed.error = why(who(reference.CORRECTED_PATH), "the model")
            made.corrected, made.corrected_failure = None, failed
            self.corrected_state = "done"
        elif isinstance(part, RunPath):
            key = part.spec.name
            if part.variant == FP32:
                chain = self._chain_for(key, ok=True, completed=True)
                failed = path_result(_backend(part.spec), part.spec)
                failed.error = why(who(part.spec), "the model") + _skipping(chain, "on")
                failed.backend_seconds = self.budget if out_of_budget else 0.0
                failed.ran_out = out_of_budget
                made.on_model[key] = failed
                self.chains[key], self.next_link[key] = [], 0
            elif self.on_variant_only.get((part.variant, key)) == "running":
                failed = path_result(_backend(part.spec), part.spec)
                failed.error = why(who(part.spec), _on(part.variant))
                made.on_variant[part.variant][key] = failed
                self.on_variant_only[(part.variant, key)] = "done"
                if not out_of_budget:
                    self._run_on_model_too(key)
            else:
                failed = path_result(_backend(part.spec), part.spec)
                failed.error = (why(who(part.spec), _on(part.variant))
                                + self._skip_rest(key, "again on"))
                made.on_variant[part.variant][key] = failed
                self.busy.discard(key)
        elif isinstance(part, NoiseRuns):
            key = part.spec.name
            made.noise[(part.variant, key)] = (
                why(who(part.spec), f"the noise-floor runs on {_on(part.variant)}")
                + self._skip_rest(key, "again on"))
            self.busy.discard(key)
        elif isinstance(part, RunFamilies):
            key = part.key
            made.family_failures[key] = (why(who(self.specs[key]), "the contract graphs")
                                         + self._skip_rest(key, "again on"))
            self.busy.discard(key)
        self._advance()

    # ---- the settings the default plan decides on
    def _run_on_model(self, spec: PathSpec) -> None:
        repeats = ((self.case.reference_repeats or self.settings.repeats)
                   if spec.backend == reference.BACKEND else self.settings.repeats)
        self._add(RunPath(self.case, spec, repeats, self.settings.max_tensor_bytes,
                          f"{who(spec)} on the model", self.budget))

    def _decide_pending(self) -> None:
        """Each setting whose deciding outputs are in: run it, or record why not."""
        for key, when in list(self.pending.items()):
            why = self._why_not_needed(key, when)
            if why is None:
                continue  # its deciding outputs are to come
            del self.pending[key]
            if why:
                self.not_needed[key] = why
                if when == NEEDED_WHEN_OFF:
                    self.variant_only[key] = self.specs[key]
                del self.specs[key]
                self.made.keys.remove(key)
            else:
                self._run_on_model(self.specs[key])

    def _why_not_needed(self, key: str, when: str) -> str | None:
        """Why the setting is not needed (a sentence), '' when it is, None while the
        outputs that decide it are to come."""
        spec = self.specs[key]
        on = self.made.on_model
        deployed = on.get(self.deployed[spec.backend])
        if deployed is None:
            return None
        name = who(self.specs[self.deployed[spec.backend]])
        if not deployed.ok:
            return ""  # it failed: whether this setting runs says what failed
        tail = " (--paths all runs it)"
        if when == NEEDED_WHEN_ENDS_DIFFER:
            base_key = self.base_of[spec.backend]
            if base_key in self.not_needed:
                return (f"not needed: {who(self.specs.get(base_key, spec))} did not run, so "
                        f"no difference of levels is to name{tail}")
            base = on.get(base_key)
            if base is None:
                return None
            if not ends_agree(base, deployed, self.case, self.settings.tolerances):
                return ""
            return (f"not needed: {who(self.specs[base_key])} and {name} agree within "
                    f"tolerance, so no level between them makes a difference{tail}")
        assert when == NEEDED_WHEN_OFF, when
        arbiter = self._arbiter()
        if arbiter is None:
            return None
        if not arbiter:
            return ""  # nothing to judge it by: run it
        label, truth, exact = arbiter
        if not within_gates(deployed, truth, exact, self.case, self.settings.tolerances,
                            self.rule):
            return ""
        return (f"not needed: {name} is within its gates against {label}, so its optimiser "
                f"is not at fault{tail}")

    def _arbiter(self) -> tuple[str, list[np.ndarray], list[np.ndarray]] | tuple[()] | None:
        """What decides whether a deployed setting is off: the case's float64 shadow or
        shipped outputs, else the ReferenceEvaluator's once it ran (None: it runs; ():
        nothing, it failed)."""
        case = self.case
        if case.expected:
            exact = list((case.expected_exact or case.expected).values())
            return case.expected_label, list(case.expected.values()), exact
        ref = self.made.on_model.get(reference.PATH.name)
        if ref is None:
            return None
        if ref.outputs is None:
            return ()
        return who(reference.PATH), ref.outputs, ref.outputs

    def _on_contracts(self, key: str) -> bool:
        """The setting runs on the contract graphs: every one with ``--paths all``, else the
        deployed settings and the ReferenceEvaluator."""
        spec = self.specs[key]
        return (self.paths_mode == PATHS_ALL or spec.backend not in self.deployed
                or self.deployed[spec.backend] == key)

    # ---- the chains
    def _add(self, part: Part) -> None:
        self._new.append(part)
        self._made_count += 1

    def _chain_for(self, key: str, ok: bool, completed: bool) -> list[_Link]:
        """What the path runs after the model: noise-floor runs where it is a baseline
        that ran, each variant, and the contract graphs where it ran."""
        if not completed:
            return []
        links: list[_Link] = []
        baseline = key in self.bases and ok
        if baseline:
            links.append(_Link("noise", FP32))
        for name in self.variants:
            links.append(_Link("variant", name))
            if baseline:
                links.append(_Link("noise", name))
        if ok and self.made.families and self._on_contracts(key):
            links.append(_Link("families"))
        return links

    def _start_chain(self, key: str, result: PathResult) -> None:
        self.chains[key] = self._chain_for(key, result.ok, completed=True)
        self.next_link[key] = 0

    def _link_done(self, key: str) -> None:
        self.busy.discard(key)
        self.next_link[key] += 1

    def _skip_rest(self, key: str, verb: str) -> str:
        """Marks the rest of the path's chain not run; what the row says of it."""
        chain = self.chains[key]
        rest = chain[self.next_link[key] + 1:]
        for link in rest:
            if link.kind == "variant":
                skipped = path_result(_backend(self.specs[key]), self.specs[key])
                skipped.error, skipped.skipped = "not run: it ran out of its budget", True
                self.made.on_variant[link.variant][key] = skipped
        self.next_link[key] = len(chain)
        return _skipping(rest, verb)

    def _advance(self) -> None:
        made = self.made
        self._decide_pending()
        stage_a = len(made.on_model) == len(self.specs)
        if stage_a and self.corrected_state == "unknown":
            self.corrected_state = "done"
            import onnx

            from gero_runner.backends import reference_defects

            if reference_defects.applicable(onnx.load_from_string(self.case.model)):
                self.corrected_state = "running"
                self._add(CorrectReference(self.case, made.ref, made.runtime_paths,
                                           "the corrected ReferenceEvaluator on the model",
                                           self.budget))
        for key, chain in self.chains.items():
            while key not in self.busy and self.next_link[key] < len(chain):
                link = chain[self.next_link[key]]
                part = self._part_for(key, link, stage_a and self.corrected_state == "done")
                if part is None:  # waits for another part (a build, the other paths)
                    break
                if part == "skip":
                    self.next_link[key] += 1
                    continue
                assert isinstance(part, Part)
                self.busy.add(key)
                self._add(part)
        self._decide_variant_only()
        for name, state in self.exact_state.items():
            if state == "none":
                self._decide_exact(name)
        chains_done = all(self.next_link.get(k, 0) >= len(self.chains.get(k, []))
                          for k in self.specs) and not self.busy
        if (stage_a and self.corrected_state == "done" and chains_done
                and len(made.variant_models) == len(self.variants)
                and self.yardsticks_state != "running"
                and all(state == "done" for state in self.exact_state.values())
                and self._variant_only_done()
                and not self.judging):
            self.judging = True
            self._add(Judge(made, "judging the case", self.timeout_s))

    def _part_for(self, key: str, link: _Link, others_done: bool) -> Part | str | None:
        made, spec = self.made, self.specs[key]
        if link.kind == "families":
            if not others_done:
                return None
            return RunFamilies(self.case, made.runtime_paths, made.ref, made.corrected, key,
                               made.families, f"{who(spec)} on the contract graphs",
                               self.budget)
        if link.variant != FP32 and link.variant not in made.variant_models:
            return None  # its build runs
        model = made.variant_models.get(link.variant, self.case.model)
        if isinstance(model, str):
            return "skip"  # it could not be built: the model family's row says so
        if link.kind == "variant":
            if self.on_variant_only.get((link.variant, key), "skip") != "skip":
                return "skip"  # it ran there before the model (``_run_on_model_too``)
            vcase = dataclasses.replace(self.case, model=model)
            return RunPath(vcase, spec, 1, None, f"{who(spec)} on {_on(link.variant)}",
                           self.budget, link.variant)
        on = made.on_model if link.variant == FP32 else made.on_variant[link.variant]
        ran = on.get(key)
        if ran is None or not ran.ok:
            return "skip"  # nothing to floor: the model family says why
        assert ran.outputs is not None
        original = made.on_model.get(key)
        if (link.variant != FP32 and floor_is_lazy(link.variant, key == self.run_base)
                and original is not None and original.outputs is not None):
            # The floor can only lower a gate this variant passes without it: not measured
            # (the judge decides the same from the same outputs).
            unneeded = floors_unneeded(link.variant, ran.outputs, original.outputs, self.rule)
            if unneeded is not None:
                return "skip"
        first = self.bases[key]
        disabled = None
        if first != key:  # the floor's other end: the runtime's first setting there
            if first not in on and not self._gone(first, link.variant):
                return None  # it runs
            other = on.get(first)
            disabled = other.outputs if other is not None and other.ok else None
        if not any(x.dtype.kind == "f" for x in self.case.inputs.values()):
            # No input can carry noise (token ids, a mask): the 16 noisy runs would repeat
            # the baseline and measure nothing, so none is run; the floor is the first
            # setting's difference alone, the baseline standing for its own repeat.
            self.made.noise[(link.variant, key)] = (
                floors_of(ran.outputs, disabled, [ran.outputs], self.rule), 0.0)
            return "skip"
        return NoiseRuns(self.case, model, link.variant, spec, ran.outputs, disabled,
                         self.rule, f"{who(spec)}: noise-floor runs on {_on(link.variant)}",
                         self.budget)

    def _decide_exact(self, name: str) -> None:
        """Once every path has run on the int8 file (or never will), its exact computation
        is asked for where one disagrees with the run's baseline (as the judge decides)."""
        made = self.made
        on = made.on_variant[name]
        model = made.variant_models.get(name)
        if (model is None or not all(k in on or self._gone(k, name) for k in self.specs)
                or not self._variant_only_done(name)):
            return  # its build or a path on it still runs
        # The run's baseline on the file, else the next runtime's baseline that ran it (the
        # judge's stand-in yardstick).
        yard = next((k for i, k in enumerate(self.bases)
                     if (i == 0 or not self._ran_ok(on, self.run_base))
                     and self._ran_ok(on, k)), self.run_base)
        base = on.get(yard) if yard is not None else None
        others = [p.outputs for k, p in on.items()
                  if k not in (yard, self.run_base) and p.ok and p.outputs is not None]
        if (isinstance(model, str) or base is None or not base.ok or base.outputs is None
                or not int8_exact_needed(base.outputs, others, self.rule)):
            self.exact_state[name] = "done"
            return
        self.exact_state[name] = "running"
        self._add(Int8Exact(model, self.case.inputs, name,
                            f"the {name} variant computed exactly", self.budget))

    def _files_own_failure(self, key: str, variant: str, failed: PathResult) -> bool:
        """Its runtime's deployed setting ran the model and fails on this file with the
        same error (names and numbers masked): the failure is the file's, shown without
        running the base on the model (magika: tract optimized and unoptimized both 'cannot
        unify U8 with I8' on the int8-dynamic file; unoptimized on the model takes 15 s, and
        ran out of its 60 s budget under load)."""
        deployed = self.deployed.get(self.variant_only[key].backend, "")
        on_model = self.made.on_model.get(deployed)
        on_file = self.made.on_variant.get(variant, {}).get(deployed)
        return (on_model is not None and on_model.ok and on_file is not None
                and not on_file.ok and bool(failed.error)
                and masked(on_file.error or "") == masked(failed.error or ""))

    def _run_on_model_too(self, key: str) -> None:
        """An unoptimised base the model did not need, failed on a variant file, runs on
        the model too, and from there as any setting that runs (on each file it has not run
        on yet): whether it fails on the model as well says whose failure it is, the
        model's or the file's (minilm: tract unoptimized failed on the int8-static file,
        'Undetermined symbol in expression: sequence_length', as it does on the model; not
        run there, the failure read as the file's)."""
        if key in self.specs or key not in self.variant_only:
            return
        spec = self.variant_only[key]
        del self.not_needed[key]
        self.specs = {k: spec if k == key else self.specs[k] for k in self.order
                      if k == key or k in self.specs}
        self.made.keys[:] = list(self.specs)
        self._run_on_model(spec)

    def _decide_variant_only(self) -> None:
        """An unoptimised base the model did not need runs on a variant file where its
        runtime's deployed setting cannot run the file or is off its gates there without a
        floor (which can only lower them; ``floors_unneeded``, as the judge reads it): is
        the optimiser at fault on that file?"""
        made = self.made
        for key, spec in self.variant_only.items():
            if key in self.specs:  # it runs on the model now, and from there on each file
                for name in self.variants:
                    self.on_variant_only.setdefault((name, key), "skip")
                continue
            deployed = self.deployed[spec.backend]
            for name in self.variants:
                if (name, key) in self.on_variant_only:
                    continue
                model = made.variant_models.get(name)
                on = made.on_variant[name].get(deployed)
                if isinstance(model, str) or (on is None and self._gone(deployed, name)):
                    self.on_variant_only[(name, key)] = "skip"
                    continue
                if model is None or on is None:
                    continue  # the build, or the deployed setting on the file, runs
                original = made.on_model.get(deployed)
                if on.skipped or (on.ok and original is not None and original.ok
                                  and floors_unneeded(name, on.outputs or [],
                                                      original.outputs or [],
                                                      self.rule) is not None):
                    self.on_variant_only[(name, key)] = "skip"
                    continue
                self.on_variant_only[(name, key)] = "running"
                made.ran_on_variants.setdefault(key, []).append(name)
                self._add(RunPath(dataclasses.replace(self.case, model=model), spec, 1, None,
                                  f"{who(spec)} on {_on(name)}", self.budget, name))

    def _variant_only_done(self, variant: str | None = None) -> bool:
        """Each unoptimised base the model did not need is decided (and has run, where it
        runs) on the variant file, or on every one."""
        names = self.variants if variant is None else (variant,)
        return all(self.on_variant_only.get((name, key)) in ("done", "skip")
                   for name in names for key in self.variant_only)

    @staticmethod
    def _ran_ok(on: dict[str, PathResult], key: str | None) -> bool:
        got = on.get(key) if key is not None else None
        return got is not None and got.ok

    def _gone(self, key: str, variant: str) -> bool:
        """The path will never run on the variant (it ran out on the model, or earlier, or
        the plan does not run it)."""
        if key in self.not_needed:
            return True
        if key not in self.made.on_model:
            return False
        chain = self.chains.get(key, [])
        return not any(link.kind == "variant" and link.variant == variant
                       for link in chain[self.next_link.get(key, 0):])


def _skipping(links: list[_Link], verb: str) -> str:
    """What a path that ran out is not run on: '; not run again on the fp16 and int8-static
    variants and the contract graphs, nor its noise-floor runs' (empty: nothing)."""
    variants = [link.variant for link in links if link.kind == "variant"]
    names = []
    if variants:
        names.append(f"the {_listed(variants)} variant{'s' if len(variants) > 1 else ''}")
    if any(link.kind == "families" for link in links):
        names.append("the contract graphs")
    noise = any(link.kind == "noise" for link in links)
    if not names:
        return "; its noise-floor runs are not made" if noise else ""
    return f"; not run {verb} {_listed(names)}" + (", nor its noise-floor runs" if noise else "")


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
