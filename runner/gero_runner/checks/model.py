"""The ``model`` check family: model-level metrics, the noise floor, int8/fp16 gates and
parity metrics for the outputs whose kind the user named.

Runs for the ``models`` (shipped) and ``model`` (user) suites only. Rows (one per float
output unless said otherwise; figures in ``details``):

Each selected runtime has a baseline setting (``Backend.model_baseline``: ONNX Runtime
``all``, OpenVINO ``f32``, tract ``optimized``); the first selected runtime's baseline (ORT
``all`` when ONNX Runtime runs) is the run's.

- ``model:noise-floor``: each runtime's own sensitivity, on its baseline: its first setting
  (ORT ``disable_all``) against the baseline, and 16 baseline runs with 1e-7 relative noise
  on the float inputs (without a float input the row says no input can carry noise, and a
  runtime with one setting has no floor to gate with).
- ``model:fp32``: each runtime setting and the ReferenceEvaluator against the arbiter (the
  float64 shadow or the shipped expected outputs; the run's baseline when there is
  neither): scaled error ≤ 1e-4 for float32 (8 roundings of a narrower output dtype: 4e-3
  for float16), and with a decision task, argmax agreement at least the floor's (the
  runtime's own; the run's baseline's for the ReferenceEvaluator). Where the model rounds
  its activations at run time (``arbiter_quantisation``) the arbiter decides between
  engines (within 1.5x the closest path); without an arbiter, a setting computing in fewer
  bits (OpenVINO bf16) is judged against its own runtime's full-precision setting.
- ``model:VARIANT:vs-model``: per runtime, the variant itself (its baseline on it) against
  the fp32 model it replaces (its baseline on the original), on the same inputs: row cosine
  (and mean-pooled cosine) at least min(0.99, floor), argmax agreement with a decision
  task; the floor is that runtime's own sensitivity on the variant. What a user ships is
  judged here.
- ``model:VARIANT:cosine`` / ``:decision`` (int8) and ``model:fp16:scaled`` /
  ``model:fp16:vs-fp32``: every other path on the variant against the run's baseline on it,
  gated as docs/explanation/tolerances.md says.
- ``model:outputs``: one execution row per output that is not a tensor (a ZipMap's
  sequence of maps), naming it and its type.
- ``model:structure``: one contract-issue row per ai.onnx.ml node whose attribute sizes break
  its operator's spec (``models.structure``): the malformed model's finding, naming what each
  path did with it (ran it anyway, refused it); the paths' failures on it carry its cause key.
- ``parity:KIND``: each runtime's baseline and the ReferenceEvaluator against the arbiter
  with the parity metric of the output's kind (``--output-kind``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from gero_runner import backends
from gero_runner.backends.base import NOT_APPLICABLE, Backend, PathSpec
from gero_runner.case import MODEL_SUITES, CaseInstance, ModelChecks
from gero_runner.classify import nonfinite_where_finite
from gero_runner.errors import GeroError, NotRun, PathFailed, error_text
from gero_runner.facts import (
    ERROR_KEY,
    FP16_OVERFLOW,
    MALFORMED,
    MODEL_SCOPE,
    PRECISION_REWRITE,
    STRUCTURE_CHECK,
    TOOLING,
    failure_cause,
    failure_facts,
    law_name,
    root_cause,
)
from gero_runner.metrics import model_level as ml
from gero_runner.metrics.compare import ACTUAL, REFERENCE, compare
from gero_runner.models import variants as var
from gero_runner.request import DECISION_TASKS
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, EXECUTION, PASSED, Observation
from gero_runner.storage.hashing import tensor_hash

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult

NOISE_RUNS = 16
NOISE_RELATIVE = 1e-7

Rows = list[Observation]
FP16_SHADOW = "fp16-rounded-shadow"
"""The fp16 yardstick: the file's float64 shadow rounded to float16 at every node."""
FP16_EXACT = "fp16-exact-shadow"
"""The fp16 file computed exactly (float64): the yardstick of a path that widens it."""
DEQUANTIZED_MARGIN = 1.5
"""With a dequantized arbiter (the float64 shadow computes an already quantised model's
quantised operators dequantized, without its run-time rounding of activations) every engine
is off it by the model's own quantisation (ddddocr's int8 recogniser: ONNX Runtime 0.0117,
OpenVINO f32 0.0125 scaled), as it is where the model quantises activations at run time
(t5's int8 encoder: ONNX Runtime 0.307, OpenVINO f32 0.433 from its exact float64): it
decides between engines, a path passing within this factor of the closest one's error, as
an fp16 path within 1.5x its correct computation's."""
INT8_EXACT = "int8-exact-shadow"
"""An int8 file computed exactly (its float parts in float64): where a path disagrees with
the run's baseline there, which of the two is off."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    """A runtime's baseline setting for the model family, and its first setting (the other
    end of its floor; the baseline itself when it has one setting)."""

    backend: Backend
    spec: PathSpec
    first: PathSpec

    @property
    def label(self) -> str:
        """As rows name it, e.g. 'onnxruntime:all'."""
        return f"{self.backend.name}:{self.spec.optimization}"


def baselines(ctx: CaseContext) -> list[Baseline]:
    """Each selected runtime's baseline, in the run's order (the first is the run's)."""
    from gero_runner.execution.paths import selected_paths

    out = []
    for name in ctx.settings.backends:
        backend = backends.get(name)
        chosen = selected_paths(backend, ctx.settings)
        spec = backend.model_baseline(chosen)
        out.append(Baseline(backend, spec, chosen[0]))
    return out


@dataclasses.dataclass(frozen=True)
class StatsRule:
    """How the figures of an output are taken: rows and decisions along its class axis
    (``--decision-axis``; the last by default), argmax decisions where it decides."""

    output_names: tuple[str, ...]
    decision: bool
    axes: tuple[tuple[str, int], ...] = ()

    def decides(self, j: int) -> bool:
        """Output j is a decision: a decision task, or a class axis the user named."""
        return self.decision or self.output_names[j] in dict(self.axes)

    def stats(self, j: int, a: np.ndarray, r: np.ndarray) -> ml.OutputStats:
        axis = dict(self.axes).get(self.output_names[j])
        if axis is not None and a.ndim and -a.ndim <= axis < a.ndim:
            a, r = np.moveaxis(a, axis, -1), np.moveaxis(r, axis, -1)
        return ml.output_stats(a, r, decision=self.decides(j))

    def single(self, j: int, a: np.ndarray) -> bool:
        """Output j's rows hold one element (a regressor's [N, 1]): its scaled error is gated."""
        axis = dict(self.axes).get(self.output_names[j], -1)
        return a.ndim == 0 or not -a.ndim <= axis < a.ndim or a.shape[axis] == 1

    def variant_gate(self, name: str, j: int, a: np.ndarray, r: np.ndarray,
                     floor: ml.Floor | None) -> tuple[ml.Gate, ml.OutputStats]:
        """Output j of a variant (``a``) against the fp32 model (``r``); ``floor`` None:
        without a measured floor."""
        stats = self.stats(j, a, r)
        return ml.variant_gate(stats, floor or ml.unmeasured_floor(stats), self.decides(j),
                               ml.variant_scaled_limit(name) if self.single(j, a) else None
                               ), stats


def floors_unneeded(name: str, variant: list[np.ndarray], fp32: list[np.ndarray],
                    rule: StatsRule) -> Floors | None:
    """A runtime's floors on a variant file where its vs-model rows pass without one (the
    gate is min(0.99, floor), the floor's decisions, a one-element row's scaled error at
    least the floor's: a measured floor can only lower it) or hold NaN or inf (no floor
    makes them assessable), so its 16 noise runs would change no verdict; None where an
    output needs them. Depends on the outputs alone, so
    which runs are made does not depend on the machine's speed."""
    floors: Floors = {}
    for j, a in enumerate(variant):
        if a.dtype.kind != "f":
            continue
        if j >= len(fp32) or a.shape != fp32[j].shape:
            return None
        gate, stats = rule.variant_gate(name, j, a, fp32[j], None)
        if not gate.passed and stats.finite:
            return None
        # Passing, or non-finite (no floor makes NaN assessable: magika's fp16 file on
        # tract, whose 16 float16 runs took its whole budget to change nothing).
        floors[j] = (ml.unmeasured_floor(stats), [])
    return floors


Floors = dict[int, tuple[ml.Floor, list[dict[str, Any]]]]
"""A runtime's floor per float output, with its first setting's figures against it."""


def floors_of(base: list[np.ndarray], disabled: list[np.ndarray] | None,
              noisy: list[list[np.ndarray]], rule: StatsRule) -> Floors:
    """The floor of each float output of ``base``: its first setting's outputs
    (``disabled``, when there are) and the noisy runs against it."""
    floors = {}
    for j in [j for j, x in enumerate(base) if x.dtype.kind == "f"]:
        stats = []
        if disabled is not None:
            stats.append(rule.stats(j, disabled[j], base[j]))
        stats += [rule.stats(j, run[j], base[j]) for run in noisy]
        floors[j] = (ml.noise_floor(stats), [s.as_dict() for s in stats[:1]])
    return floors


def floor_is_lazy(variant: str, run_baseline: bool) -> bool:
    """Whether a runtime's floor on a variant is measured only where its own vs-model rows
    need it: every runtime's but the run baseline's on an int8 file, whose floor also gates
    every other path's cosine and decision rows there."""
    return variant == var.FP16 or not run_baseline


def noisy_runs(backend: Backend, spec: PathSpec, model: bytes, inputs: dict[str, np.ndarray],
               seed: int, label: str, timer: Callable[[], AbstractContextManager[None]]
               ) -> list[list[np.ndarray]]:
    """16 runs of a runtime's baseline with 1e-7 relative noise on the float inputs
    (``label`` names the model, 'fp32' or the variant: it seeds the noise)."""
    with timer():
        session = backend.build(model, spec.settings)
    rng = np.random.default_rng([seed & 0xFFFFFFFF, len(label)])
    runs = []
    try:
        for _ in range(NOISE_RUNS):
            feeds = {}
            for k, x in inputs.items():
                if x.dtype.kind == "f":
                    noise = 1.0 + NOISE_RELATIVE * rng.standard_normal(x.shape)
                    x = (x.astype(np.float64) * noise).astype(x.dtype)
                feeds[k] = x
            with timer():
                runs.append(backend.run(session, feeds))
    finally:
        with timer():
            backend.release(session)
            del session
    return runs


def int8_exact(model: bytes, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """An int8 file's float64 shadow: its integer parts as they are, every float tensor
    (scales, dequantized values, the float operators between) in float64 (raises what the
    evaluator raises)."""
    from gero_runner.models import shadow

    return shadow.run_shadow(onnx.load_from_string(model), inputs)


def int8_exact_needed(base: list[np.ndarray], others: list[list[np.ndarray]],
                      rule: StatsRule) -> bool:
    """Whether some path on an int8 file fails its gates against the run's baseline even
    without a floor (a measured floor can only lower them): only then is the file's exact
    computation asked for. Depends on the outputs alone (the plan and the judge agree)."""
    for outputs in others:
        for j, a in enumerate(outputs):
            if j >= len(base) or a.dtype.kind != "f" or a.shape != base[j].shape:
                continue
            stats = rule.stats(j, a, base[j])
            if not stats.finite:
                continue  # no computation makes NaN comparable
            floor = ml.unmeasured_floor(stats)
            if not (ml.int8_single_gate(stats, floor) if rule.single(j, a)
                    else ml.int8_cosine_gate(stats, floor)).passed:
                return True
            if rule.decides(j) and not ml.decision_gate(stats, floor).passed:
                return True
    return False


def calibration_of(case: CaseInstance) -> var.Calibration:
    """What calibrates the case's int8-static variant (``--calibration``, ``--inputs``)."""
    opts = case.model_checks or ModelChecks()
    return var.Calibration(tuple(dict(s) for s in opts.calibration), opts.calibration_source)


def fp16_yardsticks(model: bytes, inputs: dict[str, np.ndarray]
                    ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """The fp16 file's float64 shadow rounded to float16 at each node, its exact float64
    shadow, and the first tensor float16 overflows in the former ('' when none; raises what
    the evaluator raises)."""
    from gero_runner.models import fp16_reference as fr
    from gero_runner.models import shadow

    rounded, first = fr.rounded_shadow_traced(model, inputs)
    exact = shadow.run_shadow(onnx.load_from_string(model), inputs)
    return rounded, exact, first


class ModelRuns:
    """The model family's runs, as a model case's parts made them (``checks.model_parts``:
    one plan, whether the worker pool spread its parts over workers or one process ran them
    one after another); the family judges what they made. A run that was not made raises
    ``NotRun`` (its path ran out of its budget earlier and a row says so); one that gave no
    result raises ``PathFailed`` with the sentence that says why."""

    def __init__(self, noise: dict[tuple[str, str], Any], variant_models: dict[str, bytes | str],
                 on_variant: dict[str, dict[str, PathResult]], keys: list[str],
                 yardsticks: Any, exact: dict[str, Any]) -> None:
        self.noise, self.variant_models, self.on_variant = noise, variant_models, on_variant
        self.keys, self.yardsticks, self.exact = keys, yardsticks, exact

    def floors(self, ctx: CaseContext, label: str, b: Baseline) -> Floors:
        """The baseline's floors on the model or a variant (``label``: 'fp32' or the
        variant's name) from its noise-floor runs."""
        got = self.noise.get((label, b.spec.name))
        if got is None:
            raise NotRun
        if isinstance(got, str):
            raise PathFailed(got)
        floors, seconds = got
        ctx.backend_seconds += seconds
        result: Floors = floors
        return result

    def variant_model(self, name: str) -> bytes:
        got = self.variant_models[name]
        if isinstance(got, str):
            raise PathFailed(got)
        return got

    def variant_paths(self, ctx: CaseContext, name: str) -> dict[str, PathResult]:
        """Every runtime setting and the ReferenceEvaluator on the variant, once each."""
        # In the paths' order whatever order they finished in; a path not run on the
        # variant (it ran out earlier) is marked so, without a row of its own.
        runs = {}
        # A setting the plan ran on this file alone (an unoptimised base the model did not
        # need, whose deployed setting is off here: checks.model_parts) comes last.
        alone = [k for k in self.on_variant[name] if k not in self.keys]
        for key in [*self.keys, *alone]:
            got = self.on_variant[name].get(key)
            if got is None:
                got = dataclasses.replace(ctx.paths[key], outputs=None, files=[],
                                          error="not run", skipped=True, backend_seconds=0.0)
            runs[key] = got
        ctx.backend_seconds += sum(p.backend_seconds for p in runs.values())
        return runs

    def fp16_yardsticks(self, ctx: CaseContext
                        ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
        got = self.yardsticks
        if got is None or isinstance(got, str):
            raise PathFailed(got or "not run")
        (rounded, exact, first), seconds = got
        ctx.backend_seconds += seconds
        return rounded, exact, first

    def int8_exact(self, name: str) -> list[np.ndarray]:
        got = self.exact.get(name)
        if got is None:
            raise NotRun
        if isinstance(got, str):
            raise PathFailed(got)
        result: list[np.ndarray] = got
        return result


class _Checker:
    def __init__(self, ctx: CaseContext) -> None:
        self.ctx = ctx
        self.case = ctx.case
        self.opts = self.case.model_checks or ModelChecks()
        self.decision = self.opts.task in DECISION_TASKS
        self.axes = dict(self.opts.decision_axes)
        self.rows: Rows = []
        self.baselines = [b for b in baselines(ctx) if b.spec.name in ctx.paths]
        self.rule = StatsRule(tuple(ctx.output_names), self.decision,
                              tuple(self.axes.items()))
        self.calibration = calibration_of(self.case)
        if ctx.model_runs is None:
            raise GeroError(f"{self.case.case_id}: the model family judges what the case's "
                            "plan of parts made (checks.task), and this case has none")
        self.runs: ModelRuns = ctx.model_runs
        self.model_floors: dict[str, dict[int, ml.Floor]] = {}
        """Each runtime's noise floor on the model, by output (``noise_floor_rows``)."""
        self.dequantized, self.dequantizes = arbiter_quantisation(self.case)
        """The operators that round the model's activations at run time, and whether the
        float64 arbiter computes them dequantized (else exactly); empty: none."""
        self.noiseless = sorted(f"{k}: {x.dtype}" for k, x in self.case.inputs.items()
                                if x.dtype.kind != "f")
        """Inputs no noise can be put on, named; all of them when none is float."""
        if any(x.dtype.kind == "f" for x in self.case.inputs.values()):
            self.noiseless = []
        self.steps: dict[tuple[int, str], str] = {}
        """What one quantizer step says of an fp16 output (``_one_step``), by output."""

    # ------------------------------------------------------------------ helpers
    def _row(self, check: str, name: str, actual: PathResult, ref_name: str, ref_version: str,
             a: np.ndarray | None, r: np.ndarray | None, result: str, reason: str,
             details: dict[str, Any], files: tuple[str, str] = ("", ""),
             arbiter: str = NOT_APPLICABLE, kind: str = "") -> None:
        dtype = str(a.dtype) if a is not None else self.case.dtype
        rtol, atol = self.ctx.tolerance(dtype)
        cmp = None
        if a is not None and r is not None and a.shape == r.shape:
            # A wider float reference (the float64 shadow) is compared as it is, its ULPs
            # counted in the output's own dtype (a cast down could overflow).
            wider = a.dtype.kind == r.dtype.kind == "f" and a.dtype != r.dtype
            cmp = compare(a, r, rtol, atol, unit=a.dtype if wider else None)
        cause = root_cause(reason) if result != PASSED else ""
        bad = nonfinite_where_finite(cmp) if cmp is not None and cause and not kind else 0
        if cmp is not None and bad:
            # the title's words: the path's NaN or inf, and what is finite there
            cause = (f"{bad} of {cmp.element_count} elements are NaN or inf where "
                     f"{_yardstick_words(ref_name)} is finite")
        self.rows.append(self.ctx.row(
            check=check, output_name=name, actual=actual, reference_name=ref_name,
            reference_version=ref_version, dtype=dtype, cmp=cmp, rtol=rtol, atol=atol,
            result=result, reason=reason, arbiter=arbiter, cause=cause, failure_kind=kind,
            actual_hash=tensor_hash(a) if a is not None else "",
            reference_hash=tensor_hash(r) if r is not None else "",
            actual_file=files[0], reference_file=files[1], details=details))

    def _fail(self, check: str, actual: PathResult, ref_name: str, reason: str,
              name: str = "", failed_path: str = "", cause: str = "", error: str = "",
              kind: str = "", cause_key: str = "") -> None:
        self.rows.append(self.ctx.row(
            check=check, output_name=name, actual=actual, reference_name=ref_name,
            reference_version=actual.version, dtype=self.case.dtype, cmp=None,
            rtol=math.nan, atol=math.nan, result=EXECUTION, reason=reason,
            failed_path=failed_path, cause=cause or root_cause(reason), error=error,
            failure_kind=kind, cause_key=cause_key))

    def _float_outputs(self, outputs: list[np.ndarray]) -> list[int]:
        return [j for j, x in enumerate(outputs) if x.dtype.kind == "f"]

    def _decides(self, j: int) -> bool:
        """Output j is a decision: a decision task, or a class axis the user named."""
        return self.rule.decides(j)

    def _stats(self, j: int, a: np.ndarray, r: np.ndarray) -> ml.OutputStats:
        """The model-level figures of output j, rows and decisions along its class axis
        (``--decision-axis``; the last by default)."""
        return self.rule.stats(j, a, r)

    # ------------------------------------------------------------------ fp32
    def _first_outputs(self, b: Baseline, paths: dict[str, PathResult]
                       ) -> list[np.ndarray] | None:
        """The outputs of the runtime's first setting, the floor's other end (None when it
        is the baseline itself or failed)."""
        first = paths.get(b.first.name) if b.first.name != b.spec.name else None
        return first.outputs if first is not None and first.ok else None

    def noise_floor_rows(self) -> dict[str, dict[int, ml.Floor]]:
        """Each runtime's floor rows; its floors by output, by runtime."""
        out = {}
        for b in self.baselines:
            path = self.ctx.paths[b.spec.name]
            if path.ok:
                out[b.backend.name] = self._noise_floor(b, path)
        return out

    def _noise_floor(self, b: Baseline, base: PathResult) -> dict[int, ml.Floor]:
        assert base.outputs is not None
        title = b.backend.label()
        dis = self._first_outputs(b, self.ctx.paths)
        try:
            floors = self.runs.floors(self.ctx, "fp32", b)
        except NotRun:
            return {}
        except Exception as e:
            self._fail("model:noise-floor", base, f"{b.backend.name}-noise", error_text(e))
            return {}
        first = b.first.optimization
        ends = f"{first} and " if dis is not None else ""
        gated: dict[int, ml.Floor] = {}
        for j, (floor, first_stats) in floors.items():
            ok = not math.isnan(floor.row_cosine)
            noise = f"{NOISE_RUNS} runs with {NOISE_RELATIVE:g} relative input noise"
            if self.noiseless:
                # Integer inputs (token ids, a mask) carry no noise: the 16 runs repeat the
                # baseline and measure nothing (t5's encoder: 'scaled error 1.7e-07' said it
                # was insensitive; float32 against float64 moves it 0.31).
                noise = (f"no noisy runs: no input can carry noise "
                         f"({', '.join(self.noiseless)})")
                ends = f"{first} alone; " if dis is not None else ""
            reason = (f"{title}'s own floor ({ends}{noise}, against "
                      f"{b.spec.optimization}): row cosine "
                      f"{floor.row_cosine:.7f}, scaled error {floor.scaled_error:.3g}, floored "
                      f"relative error {floor.floored_rel_error:.3g}")
            if self.noiseless and dis is None:
                reason = (f"{title}'s floor is not measured: no input can carry noise "
                          f"({', '.join(self.noiseless)}) and it has one setting, so no gate "
                          "uses a floor of it")
            elif ok:
                gated[j] = floor
            if self._decides(j):
                reason += f", argmax agrees on ≥ {floor.decisions_agree} of {floor.decisions}"
            if not ok:
                reason = f"non-finite output: {title}'s noise floor cannot be assessed"
            details: dict[str, Any] = {"floor": floor.as_dict(), "noise_runs": NOISE_RUNS,
                                       "noise_relative": NOISE_RELATIVE}
            if dis is not None:
                details[f"{first}_vs_{b.spec.optimization}"] = first_stats
            if self.noiseless:
                details.update(noise_runs=0, noiseless_inputs=self.noiseless)
            self._row("model:noise-floor", self.ctx.output_names[j], base,
                      f"{b.label if dis is None else b.backend.name + ':' + first}+noise",
                      base.version, base.outputs[j], base.outputs[j],
                      PASSED if ok else CONTRACT_ISSUE, reason, details)
        if self.noiseless:
            return gated  # a vacuous floor gates nothing
        return {j: f for j, (f, _) in floors.items()}

    def arbiter(self) -> tuple[str, str, list[np.ndarray]] | None:
        c = self.case
        if c.expected_exact:
            return c.expected_label, c.expected_version, list(c.expected_exact.values())
        if c.expected:
            return c.expected_label, c.expected_version, list(c.expected.values())
        return None

    def fp32_rows(self, floors: dict[str, dict[int, ml.Floor]]) -> None:
        paths = self.ctx.paths
        arb = self.arbiter()
        candidates = [p for n, p in paths.items() if n != self.case.expected_label and p.ok]
        if arb is None:  # no shadow, no shipped outputs: the run's baseline is the arbiter
            if not self.baselines or not paths[self.baselines[0].spec.name].ok:
                return
            first = self.baselines[0]
            base = paths[first.spec.name]
            arb = (first.label, base.version, list(base.outputs or []))
            candidates = [p for p in candidates if p is not base]
        label, version, truth = arb
        run_floors = floors.get(self.baselines[0].backend.name, {}) if self.baselines else {}
        shadowless = self.arbiter() is None
        closest = self._closest(candidates, truth) if self.dequantized and not shadowless \
            else {}
        for path in candidates:
            assert path.outputs is not None
            own = floors.get(path.backend, run_floors)
            if shadowless:  # a runtime arbitrates: its own sensitivity bounds the blame too
                own = {j: ml.worse_floor(f, run_floors.get(j)) for j, f in own.items()}
            narrow = self._narrower(path) if shadowless else None
            for j in self._float_outputs(path.outputs):
                if j >= len(truth):
                    continue
                a, r = path.outputs[j], np.asarray(truth[j])
                if narrow is not None and _bits(narrow[1]) < 8 * a.dtype.itemsize:
                    self._narrow_row(path, j, narrow, own.get(j))
                    continue
                name = self.ctx.output_names[j]
                if a.shape != r.shape:
                    self._row("model:fp32", name, path, label, version, a, None, DIVERGENCE,
                              f"shape {list(a.shape)} differs from {label} {list(r.shape)}", {})
                    continue
                stats = self._stats(j, a, r)
                limit = ml.scaled_limit(a.dtype)
                near = closest.get(j)
                if near is not None:  # a dequantized arbiter decides between engines
                    limit = max(limit, DEQUANTIZED_MARGIN * near[1])
                gate = ml.fp32_gate(stats, own.get(j), self._decides(j), limit)
                if near is not None:
                    gate = self._between_engines(gate, stats, near)
                result = PASSED if gate.passed else (CONTRACT_ISSUE if not stats.finite
                                                     else DIVERGENCE)
                reason = gate.reason
                # Who is off: against a truth (the shadow, shipped outputs) the path; against
                # another engine nobody can say, and the findings blame neither (arbiter '-').
                side = REFERENCE if result != PASSED and not shadowless else NOT_APPLICABLE
                if shadowless:
                    why = (self.case.shadow_error or "none was made")[:120]
                    reason = (f"against {label}, the arbiter: no float64 shadow ({why}); "
                              f"{reason}" if result == PASSED else
                              f"two engines disagree and nothing arbitrates (no float64 "
                              f"shadow: {why}): neither {_path_label(path)} nor {label} is "
                              f"blamed; {reason}")
                self._row("model:fp32", name, path, label, version, a, r, result, reason,
                          {**gate.figures, "arbiter": label,
                           "floor": own[j].as_dict() if j in own else None},
                          (path.files[j] if j < len(path.files) else "", ""), arbiter=side)

    def _narrower(self, path: PathResult) -> tuple[PathResult, str] | None:
        """Without a float64 arbiter, a setting that computes every float tensor in fewer
        bits (OpenVINO's bf16 inference precision) and the same runtime's setting computing
        as declared (f32), with that precision; None otherwise."""
        runtime = backends.find(path.backend)
        precision = runtime.float_precision(path.settings) if runtime is not None else None
        if runtime is None or precision is None or _bits(precision) >= 32:
            return None
        full = next((q for q in self.ctx.paths.values() if q.backend == path.backend
                     and q is not path and q.ok and q.outputs is not None
                     and runtime.float_precision(q.settings) in ("f32", "f64")), None)
        return (full, precision) if full is not None else None

    def _narrow_row(self, path: PathResult, j: int, narrow: tuple[PathResult, str],
                    floor: ml.Floor | None) -> None:
        """A fewer-bits setting against its own runtime computing as the graph declares: the
        one difference between the two is the precision setting (and OpenVINO's run-time
        quantization, named where its compiled model does it), so a divergence is the
        precision's (named), whatever a float64 arbiter would say about either (tashkeel
        and t5 had 'OpenVINO at bf16-default and at f32 disagree … neither is blamed')."""
        assert path.outputs is not None
        full, precision = narrow
        assert full.outputs is not None
        a, r = path.outputs[j], full.outputs[j]
        name, label = self.ctx.output_names[j], _path_label(full)
        if a.shape != r.shape:
            return
        stats = self._stats(j, a, r)
        gate = ml.fp32_gate(stats, floor, self._decides(j), ml.scaled_limit(a.dtype))
        result = PASSED if gate.passed else (CONTRACT_ISSUE if not stats.finite
                                             else DIVERGENCE)
        runtime = backends.get(path.backend).label()
        quantized = _run_time_quantization(self.ctx, path) if result != PASSED else ""
        sentence = (f"{runtime} at {path.optimization} computes {a.dtype} in {precision} (its "
                    f"inference precision){' and ' + quantized if quantized else ''}, against "
                    f"its own {label} computing as the graph declares (no float64 shadow: "
                    f"{(self.case.shadow_error or 'none was made')[:120]})")
        self._row("model:fp32", name, path, label, full.version, a, r, result,
                  f"{sentence}; {gate.reason}",
                  {**gate.figures, "arbiter": label, "precision": precision,
                   "floor": floor.as_dict() if floor is not None else None},
                  (path.files[j] if j < len(path.files) else "",
                   full.files[j] if j < len(full.files) else ""),
                  arbiter=REFERENCE if result != PASSED else NOT_APPLICABLE)

    def _closest(self, candidates: list[PathResult], truth: list[np.ndarray]
                 ) -> dict[int, tuple[str, float]]:
        """Per float output, the path closest to a dequantized arbiter and its scaled error."""
        best: dict[int, tuple[str, float]] = {}
        for p in candidates:
            for j in self._float_outputs(p.outputs or []):
                if j >= len(truth) or p.outputs is None or p.outputs[j].shape != truth[j].shape:
                    continue
                e = ml.scaled_error(p.outputs[j], np.asarray(truth[j]))
                if math.isfinite(e) and (j not in best or e < best[j][1]):
                    best[j] = (_path_label(p), e)
        return best

    def _between_engines(self, gate: ml.Gate, stats: ml.OutputStats,
                         near: tuple[str, float]) -> ml.Gate:
        """A gate against the dequantized arbiter, saying so: it arbitrates the model's float
        computation, not its run-time int8 rounding of activations, so a path is judged by
        how much further from it than the closest path it is."""
        what = (f"{_quantisation_sentence(self.dequantized, self.dequantizes)}, so it "
                f"decides between engines: within {DEQUANTIZED_MARGIN:g}x the closest path's "
                f"scaled error ({near[0]}, {near[1]:.3g})")
        if gate.passed:
            return dataclasses.replace(gate, reason=f"{what}; {gate.reason}")
        ratio = stats.scaled_error / near[1] if near[1] > 0 else math.inf
        return dataclasses.replace(gate, reason=f"{ratio:.3g}x further from the float64 "
                                   f"arbiter than {near[0]}: {what}; {gate.reason}")

    # ------------------------------------------------------------------ parity
    def parity_rows(self) -> None:
        from gero_runner.metrics import parity

        kinds: dict[str, str] = dict(self.opts.output_kinds)
        if not kinds:
            return
        paths = self.ctx.paths
        arb = self.arbiter()
        bases = [paths[b.spec.name] for b in self.baselines if paths[b.spec.name].ok]
        ref = paths.get("onnx-reference")
        pairs: list[tuple[PathResult, str, str, list[np.ndarray]]] = []
        if arb is not None:
            pairs = [(p, *arb) for p in (*bases, ref) if p is not None and p.ok]
        elif ref is not None and ref.ok:
            pairs = [(b, ref.backend, ref.version, list(ref.outputs or [])) for b in bases]
        tol = parity.ParityTolerances()
        for j, name in enumerate(self.ctx.output_names):
            kind = kinds.get(name)
            if kind is None:
                continue
            for path, label, version, truth in pairs:
                assert path.outputs is not None
                a, r = path.outputs[j], np.asarray(truth[j])
                try:
                    verdict = parity.evaluate_output(kind, r, a, tol)
                except Exception as e:  # shapes the kind cannot take
                    self._row(f"parity:{kind}", name, path, label, version, a, None,
                              CONTRACT_ISSUE, f"{kind}: {error_text(e)}", {"kind": kind})
                    continue
                if verdict.nonfinite:
                    result, reason = CONTRACT_ISSUE, verdict.nonfinite
                elif verdict.passed:
                    result, reason = PASSED, _parity_summary(verdict.figures)
                else:
                    result, reason = DIVERGENCE, "; ".join(verdict.failures)
                self._row(f"parity:{kind}", name, path, label, version, a, r, result, reason,
                          verdict.figures,
                          (path.files[j] if j < len(path.files) else "", ""))

    # ------------------------------------------------------------------ variants
    def variant_rows(self, name: str) -> None:
        ctx = self.ctx
        run_base = self.baselines[0]
        fp32 = ctx.paths[run_base.spec.name]
        base_label = f"{name}:{run_base.label}"
        try:
            model = self.runs.variant_model(name)
        except Exception as e:  # gero's variant tooling, not a runtime, failed
            self._fail(f"model:{name}:build", fp32, base_label,
                       f"building the {name} variant failed: {error_text(e)}")
            return
        ctx.writer.add_bytes(f"variants/{name}.onnx", model)
        for sentence in var.build_notes(model):  # the builder's warnings: notes, no verdict
            self.rows.append(ctx.row(
                check=f"model:{name}:build-note", output_name="", actual=fp32,
                reference_name=base_label, reference_version=fp32.version,
                dtype=self.case.dtype, cmp=None, rtol=math.nan, atol=math.nan,
                result=PASSED, reason=f"a note, no verdict: {sentence}", scope=name,
                note=sentence))
        runs = self.runs.variant_paths(ctx, name)
        for key, p in runs.items():
            p.name = f"{name}:{key}"
            p.settings = {**p.settings, "variant": name}
            if p.outputs is not None:
                p.files = [ctx.writer.add_array(f"outputs/{name}/{key}/output_{j}.npy", x)
                           for j, x in enumerate(p.outputs)]
        base = runs[run_base.spec.name]
        if base.skipped:
            return  # it ran out of its budget earlier: that row says it skipped this variant
        if not base.ok and var.invalid_graph(base.error or ""):
            # ORT runs the original but refuses the graph the tooling wrote: a build failure
            self._fail(f"model:{name}:build", base, base_label,
                       f"building the {name} variant failed: the file it wrote is not a "
                       f"valid graph for {run_base.backend.label()}: {base.error}")
            return
        failed_base = base
        yard: Baseline | None = run_base
        if not base.ok:
            self._fail(f"model:{name}", base, base_label,
                       f"{run_base.backend.label()} cannot run the {name} variant: "
                       f"{base.error}", error=base.error or "")
            # Every other path on the file is judged all the same: the next runtime whose
            # baseline ran it stands in as the yardstick (the plan asks for its exact
            # computation alike); with none, the fp16 file's own yardsticks still judge
            # the ReferenceEvaluator.
            stand_in = next((b for b in self.baselines[1:] if runs[b.spec.name].ok), None)
            ran = [p for p in runs.values() if p.ok]
            if stand_in is not None:
                yard, base = stand_in, runs[stand_in.spec.name]
            elif name == var.FP16 and ran:
                yard, base = None, ran[0]
            else:
                return
        assert base.outputs is not None
        others = [p for p in runs.values() if p is not base and p is not failed_base]
        for p in others:
            if not p.ok and not p.skipped:
                failed, cause = failure_cause(p.name, p.error or "")
                self._fail(f"model:{name}", p, base_label, f"{p.name} failed: {p.error}",
                           failed_path=failed, cause=cause, error=p.error or "")
        others = [p for p in others if p.ok]
        run_floors = None
        for b in self.baselines:  # what each runtime's users would ship: its own judgement
            own, original = runs[b.spec.name], ctx.paths[b.spec.name]
            if not own.ok or not original.ok:
                continue
            assert own.outputs is not None and original.outputs is not None
            try:
                floors = (floors_unneeded(name, own.outputs, original.outputs, self.rule)
                          if floor_is_lazy(name, b is run_base) else None)
                if floors is None:
                    floors = self.runs.floors(ctx, name, b)
            except NotRun:
                continue
            except Exception as e:
                self._fail(f"model:{name}:vs-model", own, f"{b.backend.name}-noise",
                           error_text(e))
                continue
            self._vs_model_rows(name, own, original, floors, b)
            if b is yard:
                run_floors = floors
        if run_floors is None and yard is not None:
            return  # the yardstick's runtime could not be floored: its row says why
        if name == var.FP16:
            self._fp16_rows(model, base, others, fp32, run_base)
        elif yard is not None and run_floors is not None:
            self._int8_rows(name, base, others, ctx.paths[yard.spec.name], run_floors, yard)

    def _vs_model_rows(self, name: str, base: PathResult, fp32: PathResult,
                       floors: dict[int, tuple[ml.Floor, list[dict[str, Any]]]],
                       b: Baseline) -> None:
        """The variant (a runtime's baseline on it) against the fp32 model it replaces (the
        same baseline on the original), on the same inputs: what a user ships instead of
        the model."""
        assert base.outputs is not None and fp32.outputs is not None
        check = f"model:{name}:vs-model"
        fp32_label = f"fp32:{b.label}"
        for j, (floor, _) in floors.items():
            out = self.ctx.output_names[j]
            a = base.outputs[j]
            if j >= len(fp32.outputs):
                continue
            r = fp32.outputs[j]
            if a.shape != r.shape:
                self._row(check, out, base, fp32_label, fp32.version, a, None,
                          DIVERGENCE, f"shape {list(a.shape)} differs from the fp32 model's "
                          f"{list(r.shape)}", {})
                continue
            gate, stats = self.rule.variant_gate(name, j, a, r, floor)
            if name == var.FP16:  # float16's own step at a tiny output is no error
                gate = ml.within_fp16_steps(gate, a, r)
            if stats.finite:
                gate = self._within_sensitivity(gate, j, a, r)
            reason = gate.reason
            if a.dtype == r.dtype and a.tobytes() == r.tobytes():
                reason = (f"bit-identical to the fp32 model: the {name} variant changed "
                          f"nothing that reaches this output; {reason}")
            if name == var.FP16 and self._declared_overflow(j, a):
                self._file_overflow_row(check, out, base, fp32_label, fp32.version, a,
                                        r.astype(a.dtype), gate.figures,
                                        (base.files[j], fp32.files[j] if j < len(fp32.files)
                                         else ""))
                continue
            extra: dict[str, Any] = {}
            if name == var.INT8_STATIC:  # the verdict says what the ranges came from
                reason = f"{self.calibration.note()}; {reason}"
                extra["calibration"] = self.calibration.source or "seeded N(0,1) noise"
            self._row(check, out, base, fp32_label, fp32.version, a,
                      r.astype(a.dtype) if r.dtype != a.dtype else r, _gate_class(gate, stats),
                      reason, {**gate.figures, "variant": name,
                                    "variant_vs_fp32": stats.as_dict(), **extra},
                      (base.files[j], fp32.files[j] if j < len(fp32.files) else ""))

    def _within_sensitivity(self, gate: ml.Gate, j: int, a: np.ndarray, f32: np.ndarray,
                            file_truth: np.ndarray | None = None) -> ml.Gate:
        """A variant's failed gate against the fp32 model, judged again by the model's own
        sensitivity: where the fp32 model is itself off the float64 arbiter (float32 against
        float64 of the same graph) and the file is no further from it (within
        ``DEQUANTIZED_MARGIN``), the gap is the model's, not the file's (t5's int8 encoder:
        the fp16 file 0.327 from float64, the fp32 model already 0.307). ``file_truth``:
        what the file is measured against instead (its own correct computation)."""
        arb = self.arbiter()
        if gate.passed or arb is None or j >= len(arb[2]):
            return gate
        truth = np.asarray(arb[2][j])
        mine = truth if file_truth is None else file_truth
        if truth.shape != a.shape or truth.shape != f32.shape or mine.shape != a.shape:
            return gate
        file_err, model_err = ml.scaled_error(a, mine), ml.scaled_error(f32, truth)
        if not (math.isfinite(file_err) and math.isfinite(model_err)) \
                or model_err <= ml.scaled_limit(f32.dtype) \
                or file_err > DEQUANTIZED_MARGIN * model_err:
            return gate
        figures = {**gate.figures, "file_vs_arbiter": file_err, "model_vs_arbiter": model_err}
        return ml.Gate(True, f"the model's own sensitivity, not the file's: the fp32 model is "
                       f"{model_err:.3g} (scaled) from {arb[0]}, the file {file_err:.3g}"
                       f"{'' if file_truth is None else ' from its own correct computation'}, "
                       f"within {DEQUANTIZED_MARGIN:g}x; alone its gate failed: "
                       f"{gate.reason}", figures)

    def _int8_rows(self, name: str, base: PathResult,
                   others: list[PathResult], fp32: PathResult,
                   floors: dict[int, tuple[ml.Floor, list[dict[str, Any]]]],
                   b: Baseline) -> None:
        """Every other path on the int8 file against the run's baseline on it (the model-level
        cosine and decisions, above the floor: docs/explanation/tolerances.md); where one
        disagrees, the file computed exactly says whether it is off or merely as far from
        exact as the baseline."""
        assert base.outputs is not None
        ref_label = f"{name}:{b.label}"
        exact: list[np.ndarray] | str | None = None  # asked for at the first failed gate
        for j, (floor, _) in floors.items():
            out = self.ctx.output_names[j]
            r = base.outputs[j]
            accuracy = None
            if fp32.outputs is not None and fp32.outputs[j].shape == r.shape:
                accuracy = self._stats(j, r, fp32.outputs[j]).as_dict()
            for p in others:
                assert p.outputs is not None
                a = p.outputs[j]
                if a.shape != r.shape:
                    self._row(f"model:{name}:cosine", out, p, ref_label, base.version, a, None,
                              DIVERGENCE, f"shape {list(a.shape)} differs from {list(r.shape)}",
                              {})
                    continue
                stats = self._stats(j, a, r)
                files = (p.files[j], base.files[j])
                # Rows of one element: a cosine says only the sign, the scaled error is
                # gated (oww's [1, 1] score: tract 2.23 off, its row cosine 1)
                single = self.rule.single(j, a)
                gates = [("cosine", ml.int8_single_gate(stats, floor) if single
                          else ml.int8_cosine_gate(stats, floor))]
                if self._decides(j):
                    gates.append(("decision", ml.decision_gate(stats, floor)))
                for kind, gate in gates:
                    if not gate.passed and stats.finite:
                        # It fails without a floor too, so the plan had the file computed
                        # exactly (int8_exact_needed).
                        if exact is None:
                            exact = self._int8_exact(name)
                        gate = self._by_exact(kind, gate, j, a, r, exact, floor, single)
                    # Two engines on one file: the exact computation names the path off;
                    # without it nothing arbitrates and neither is blamed (arbiter '-').
                    side = (REFERENCE if not gate.passed and "vs_exact" in gate.figures
                            else NOT_APPLICABLE)
                    self._row(f"model:{name}:{kind}", out, p, ref_label, base.version, a, r,
                              _gate_class(gate, stats), gate.reason,
                              {**gate.figures, "int8_vs_fp32": accuracy}, files, arbiter=side)

    def _int8_exact(self, name: str) -> list[np.ndarray] | str:
        """The int8 file computed exactly, or why it could not be made."""
        try:
            return self.runs.int8_exact(name)
        except Exception as e:
            return error_text(e) or type(e).__name__

    def _by_exact(self, kind: str, gate: ml.Gate, j: int, a: np.ndarray, r: np.ndarray,
                  exact: list[np.ndarray] | str, floor: ml.Floor,
                  single: bool = False) -> ml.Gate:
        """A failed gate against the baseline, judged again against the exact computation:
        passed where the path is as close to it as the baseline is."""
        ex = exact[j] if isinstance(exact, list) and exact[j].shape == r.shape else None
        if ex is None:
            why = exact if isinstance(exact, str) else "its output's shape differs"
            return dataclasses.replace(gate, reason=f"{gate.reason}; two engines disagree "
                                       "on the file and nothing arbitrates (the file "
                                       f"computed exactly could not be made: {why[:200]}): "
                                       "neither is blamed")
        vs_p, vs_b = self._stats(j, a, ex), self._stats(j, r, ex)
        by = (ml.int8_exact_single_gate(vs_p, vs_b) if kind == "cosine" and single
              else ml.int8_exact_gate(vs_p, vs_b, floor) if kind == "cosine"
              else ml.int8_exact_decision_gate(vs_p, vs_b))
        figures = {**gate.figures, "vs_exact": by.figures, "yardstick": INT8_EXACT}
        if by.passed:
            return ml.Gate(True, f"{gate.reason} against the run's baseline, yet as close to "
                           f"the file computed exactly as the baseline: {by.reason}", figures)
        return ml.Gate(False, f"{gate.reason}, and further from the file computed exactly "
                       f"than the run's baseline: {by.reason}", figures)

    def _fp16_rows(self, model: bytes, base: PathResult, others: list[PathResult],
                   fp32: PathResult, b: Baseline) -> None:
        """Every path on the fp16 file against honest yardsticks, not against one runtime:
        ``model:fp16:scaled`` against the float64 shadow of the file rounded to float16 at
        each node (the exact shadow for a path that computes the file in float32), and
        ``model:fp16:vs-fp32`` against the fp32 model, within the 4e-3 gate or 1.5× the
        correct fp16 computation's own error, whichever is larger."""
        assert base.outputs is not None and fp32.outputs is not None
        rounded: list[np.ndarray] | None
        exact: list[np.ndarray] | None
        first = ""
        try:
            rounded, exact, first = self.runs.fp16_yardsticks(self.ctx)
        except Exception as e:
            rounded = exact = None
            # The yardstick's own failure (the float64 shadow's evaluator on the fp16 file),
            # not the runtime's: its row names the shadow as the path that could not run.
            self._fail("model:fp16:scaled", self._fp16_shadow_path(), FP16_SHADOW,
                       f"the fp16 yardstick (the float64 shadow rounded to float16 at each "
                       f"node) could not run on the fp16 file: {error_text(e)}",
                       kind=TOOLING, cause_key="tooling:fp16-yardstick")
        run_floor = self.model_floors.get(b.backend.name, {})
        # How far the file's two correct computations are apart: its sensitivity to where
        # float16 roundings happen, the largest over its outputs (one output's figure is a
        # single extreme value; PicoDet: 5.5e-3 on one output, 9e-3 on another).
        spread = max((e for j in range(len(rounded or []))
                      if exact is not None and rounded is not None
                      and rounded[j].shape == exact[j].shape
                      and rounded[j].dtype.kind == "f"
                      for e in [ml.scaled_error(rounded[j], exact[j])] if math.isfinite(e)),
                     default=math.nan)
        widening = self._widening(model, base, others)
        for k, row in enumerate(self.rows):  # each runtime's own fp16 file vs its fp32 model
            own = next((q for q in (base, *others) if row.check == "model:fp16:vs-model"
                        and (q.backend, q.optimization) == (row.backend, row.optimization)
                        and q.outputs is not None and row.output_name in self.ctx.output_names
                        ), None)
            if own is not None and own.outputs is not None:
                j = self.ctx.output_names.index(row.output_name)
                self._one_step(own, j, own.outputs[j], self._wide(own, widening), k)
        if rounded is not None:
            self._fp16_overflow(rounded, first, (base, *others), fp32)
        for p in (base, *others):
            assert p.outputs is not None
            runtime = backends.find(p.backend)
            wide = p.backend in widening or (
                runtime is not None and runtime.float_precision(p.settings) == "f32")
            # The path's own fp32 output is its yardstick on the model: another runtime's
            # would charge the gap between the two engines to the file (the speaker
            # embedder: OpenVINO's fp16 output 2.1e-4 from its own fp32 one, 0.0286 from
            # ONNX Runtime's). A runtime with no fp32 output is judged on the file alone.
            own = self._own_fp32(p)
            f32 = own.outputs if own is not None else None
            floors = self.model_floors.get(p.backend, run_floor)
            for j in self._float_outputs(p.outputs):
                out, a = self.ctx.output_names[j], p.outputs[j]
                finite = bool(np.isfinite(a).all())
                if own is not None and f32 is not None and j < len(f32):
                    self._fp16_vs_fp32(out, j, p, own, f"fp32:{_path_label(own)}", f32[j],
                                       floors, (rounded, exact), finite)
                    self._one_step(p, j, a, wide)
                yard = exact if wide else rounded
                if yard is None or yard[j].shape != a.shape:
                    continue
                label = FP16_EXACT if wide else FP16_SHADOW
                if not np.isfinite(yard[j]).all():
                    # The yardstick overflows float16 (t5's encoder rounded at each node),
                    # not the path: nothing to measure the path against.
                    bad = int((~np.isfinite(yard[j])).sum())
                    sentence = (f"the {label} yardstick itself is NaN or inf at {bad} of "
                                f"{yard[j].size} elements: this path is not measured against it")
                    self._row("model:fp16:scaled", out, p, label, onnx.__version__, a, None,
                              PASSED, f"a note, no verdict: {sentence}", {},
                              (p.files[j], ""))
                    self.rows[-1] = dataclasses.replace(self.rows[-1], note=sentence)
                    continue
                same = ml.within_fp16_steps(
                    ml.fp16_reference_gate(ml.scaled_error(a, yard[j]), wide, spread), a,
                    yard[j])
                if finite and own is not None and f32 is not None and j < len(f32) \
                        and self.dequantized:
                    # A model that rounds its activations at run time: the file's distance
                    # from its correct computation is the model's own sensitivity where its
                    # fp32 model is as far from float64 (t5: 0.272 here, 0.307 there).
                    same = self._within_sensitivity(same, j, a, f32[j], yard[j])
                self._fp16_row("model:fp16:scaled", out, p, label, onnx.__version__, a,
                               yard[j].astype(a.dtype), same, finite, (p.files[j], ""))
                self._one_step(p, j, a, wide)

    def _wide(self, p: PathResult, widening: set[str]) -> bool:
        """Path ``p`` computes the fp16 file's float16 nodes in float32 (its runtime's note,
        or a float32 inference precision)."""
        runtime = backends.find(p.backend)
        return p.backend in widening or (
            runtime is not None and runtime.float_precision(p.settings) == "f32")

    def _one_step(self, p: PathResult, j: int, a: np.ndarray, wide: bool, at: int = -1
                  ) -> None:
        """The row ``at`` of path ``p`` on the fp16 file (the one just made), off its
        yardstick, marked a precision rewrite's (cause_key 'precision-rewrite') where the
        path computes the file's float16 nodes in float32, the file computed as it declares
        (float16 after every node) is not where the path is, and the file computed exactly
        with its last QuantizeLinear one step away is (smart_turn: ONNX Runtime and
        OpenVINO f32 at 0.006422, one step of 0.0394 through the Sigmoid above 0.006176):
        a last-bit difference moved it to another step, no engine's fault
        (``quant_step``)."""
        from gero_runner.checks.quant_step import one_step

        row = self.rows[at]
        if not wide or row.result != DIVERGENCE or row.backend != p.backend \
                or row.optimization != p.optimization or not np.isfinite(a).all():
            return

        def within(t: np.ndarray) -> bool:
            return t.shape == a.shape and ml.within_fp16_steps(ml.fp16_reference_gate(
                ml.scaled_error(a, t), True), a, t).passed

        got = self.runs.yardsticks
        if got is not None and not isinstance(got, str) and j < len(got[0][0]) \
                and within(got[0][0][j]):
            return  # float16 as the file declares it lands there too: the file's own move
        steps = self.steps
        key = (j, tensor_hash(a))
        if key not in steps:
            steps[key] = one_step(self.runs.variant_model(var.FP16), self.case.inputs,
                                  self.ctx.output_names[j], a, within)
        if steps[key]:
            runtime = backends.find(p.backend)
            label = runtime.label() if runtime is not None else p.backend
            self.rows[at] = dataclasses.replace(
                row, cause=steps[key], cause_key=PRECISION_REWRITE,
                reason=f"{label} computes the fp16 file in float32, wider than it declares: "
                       f"{steps[key]} computed exactly; a last-bit difference moved it to "
                       f"another step: {row.reason}")

    def _fp16_overflow(self, rounded: list[np.ndarray], first: str,
                       paths: tuple[PathResult, ...], fp32: PathResult) -> None:
        """The fp16 file computed as it declares (float16 after every node) is NaN or inf
        where the fp32 model is finite: a contract issue of the file (cause key
        ``fp16-overflow``), whichever path widens it to float32 and stays finite (t5's
        encoder: the yardstick NaN at 18432 of 18432 elements, every CPU path finite); a
        runtime that honours float16 gets inf or NaN."""
        assert fp32.outputs is not None
        for j in self._float_outputs(fp32.outputs):
            f = fp32.outputs[j]
            if j >= len(rounded) or rounded[j].shape != f.shape \
                    or np.isfinite(rounded[j]).all() or not np.isfinite(f).all():
                continue
            y = rounded[j]
            finite = [_path_label(p) for p in paths if p.outputs is not None
                      and j < len(p.outputs) and bool(np.isfinite(p.outputs[j]).all())]
            bad = int((~np.isfinite(y)).sum())
            at = f" ({first})" if first else ""
            widen = (f"; {', '.join(finite)} widen it to float32 and stay finite"
                     if finite else "")
            reason = (f"NaN or inf at {bad} of {y.size} elements where the fp32 model is "
                      f"finite: float16 overflows past ±65504 in the file{at}{widen}; a "
                      f"runtime that honours float16 gets inf or NaN")
            self._row("model:fp16:vs-model", self.ctx.output_names[j],
                      self._fp16_shadow_path(), f"fp32:{_path_label(fp32)}", fp32.version,
                      y.astype(np.float16), f, CONTRACT_ISSUE, reason, {})
            # the file's own verdict, no path's NaN (its law's kind, not nonfinite:actual)
            self.rows[-1] = dataclasses.replace(
                self.rows[-1], cause_key=FP16_OVERFLOW, cause=reason,
                failure_kind=law_name("model:fp16:vs-model"))

    def _own_fp32(self, p: PathResult) -> PathResult | None:
        """A path's own output on the fp32 model, else its runtime's baseline's (a setting
        the plan ran on the variant file alone), or None."""
        same = self.ctx.paths.get(p.name.partition(":")[2])
        if same is not None and same.ok:
            return same
        base = next((self.ctx.paths.get(b.spec.name) for b in self.baselines
                     if b.backend.name == p.backend), None)
        return base if base is not None and base.ok else None

    def _fp16_vs_fp32(self, out: str, j: int, p: PathResult, own: PathResult, label: str,
                      f: np.ndarray, floors: dict[int, ml.Floor],
                      yardsticks: tuple[list[np.ndarray] | None, list[np.ndarray] | None],
                      finite: bool) -> None:
        """Output j of a path on the fp16 file against the same path's fp32 output (``f``):
        within the 4e-3 gate, the correct fp16 computation's own error or the runtime's
        own noise floor on the model, whichever is largest."""
        assert p.outputs is not None
        a = p.outputs[j]
        if a.shape != f.shape:
            self._row("model:fp16:vs-fp32", out, p, label, own.version, a, None, DIVERGENCE,
                      f"shape {list(a.shape)} differs from {list(f.shape)}", {})
            return
        # A correct computation's own error: the larger of the rounded and the exact one
        # (PicoDet: 4.1e-3 rounded, more exact on some outputs).
        honest = max((e for y in yardsticks if y is not None and y[j].shape == f.shape
                      for e in [ml.scaled_error(y[j], f)] if math.isfinite(e)),
                     default=math.nan)
        floor = floors.get(j)
        vs = ml.within_fp16_steps(
            ml.fp16_vs_fp32_gate(ml.scaled_error(a, f), honest,
                                 floor.scaled_error if floor is not None else math.nan), a, f)
        if finite:
            vs = self._within_sensitivity(vs, j, a, f)
        if self._declared_overflow(j, a):
            self._file_overflow_row("model:fp16:vs-fp32", out, p, label, own.version, a, f,
                                    vs.figures,
                                    (p.files[j], own.files[j] if j < len(own.files) else ""))
            return
        self._fp16_row("model:fp16:vs-fp32", out, p, label, own.version, a, f, vs, finite,
                       (p.files[j], own.files[j] if j < len(own.files) else ""))

    def _declared_overflow(self, j: int, a: np.ndarray) -> bool:
        """Output j of a path on the fp16 file is NaN or inf only where float16 computed as
        declared (the rounded yardstick) overflows too: the file's overflow, not the path's
        (t5's encoder on a runtime that honours float16)."""
        got = self.runs.yardsticks
        if got is None or isinstance(got, str) or np.isfinite(a).all():
            return False
        rounded = got[0][0]
        return (j < len(rounded) and rounded[j].shape == a.shape
                and not np.isfinite(rounded[j][~np.isfinite(a)]).any())

    def _file_overflow_row(self, check: str, out: str, p: PathResult, ref: str, version: str,
                           a: np.ndarray, r: np.ndarray, figures: dict[str, Any],
                           files: tuple[str, str]) -> None:
        """A gate a path on the fp16 file fails by the file's own overflow: the gate's kind
        (the file's finding, ``fp16-overflow``, says why), not the path's NaN."""
        bad = int((~np.isfinite(a)).sum())
        self._row(check, out, p, ref, version, a, r, CONTRACT_ISSUE,
                  f"{bad} of {a.size} elements are NaN or inf where the fp32 model is finite, "
                  "each where float16 computed as declared overflows too: the file's "
                  "overflow, not this path's", figures, files, kind=law_name(check))

    def _fp16_shadow_path(self) -> PathResult:
        """The fp16 yardstick as a path: the float64 shadow's evaluator on the fp16 file."""
        from gero_runner.execution.context import NOT_APPLICABLE, PathResult

        label = self.case.expected_label
        return PathResult(f"fp16:{label}", label, self.case.expected_version, NOT_APPLICABLE,
                          0, {"evaluator": "onnx.reference.ReferenceEvaluator",
                              "widened": "float64", "variant": var.FP16,
                              "yardstick": FP16_SHADOW})

    def _fp16_row(self, check: str, out: str, p: PathResult, ref: str, version: str,
                  a: np.ndarray, r: np.ndarray, gate: ml.Gate, finite: bool,
                  files: tuple[str, str]) -> None:
        if finite:
            result, reason = (PASSED if gate.passed else DIVERGENCE), gate.reason
        else:
            result, reason = CONTRACT_ISSUE, ml.overflow_text(a, "the fp16 file")
        self._row(check, out, p, ref, version, a, r, result, reason, gate.figures, files)

    def _widening(self, model: bytes, base: PathResult, others: list[PathResult]
                  ) -> set[str]:
        """A runtime that inserts precision casts (``Backend.inserts_precision_casts``:
        ONNX Runtime's CPU) computes float16 nodes of the file in float32: one note per such
        runtime says which and how many, on its path at the level whose graph is read (its
        first: ONNX Runtime's ``disable_all``), a passed row (a note changes no count and no
        exit status); the backend names that do."""
        from gero_runner.models import fp16_reference as fr

        asked: set[str] = set()
        wide: set[str] = set()
        paths = (base, *others)
        for p in paths:
            runtime = backends.find(p.backend)
            if (runtime is None or not runtime.inserts_precision_casts or not p.ok
                    or p.backend in asked):
                continue
            asked.add(p.backend)
            try:
                widened = fr.float32_nodes(model, runtime)  # its first level's graph
            except Exception:  # the session already ran: nothing new to say if this fails
                continue
            if not widened.float32_nodes:
                continue
            wide.add(p.backend)
            first = runtime.paths(1)[0].optimization
            at = next((q for q in paths if q.backend == p.backend and q.optimization == first
                       and q.ok), None)
            if at is not None:
                sentence = f"{runtime.label()} {widened.sentence()}"
                self.rows.append(self.ctx.row(
                    check="model:fp16:precision", output_name="", actual=at,
                    reference_name="fp16 file", reference_version=at.version,
                    dtype=self.case.dtype, cmp=None, rtol=math.nan, atol=math.nan,
                    result=PASSED, reason=f"a note, no verdict: {sentence}", note=sentence))
        return wide


def _yardstick_words(reference: str) -> str:
    """What a model row's reference is, in a title's words."""
    if reference == FP16_SHADOW:
        return "float16 computed as declared"
    if reference == FP16_EXACT:
        return "the fp16 file computed exactly"
    return "the fp32 model" if reference.startswith("fp32:") else reference


def _path_label(p: PathResult) -> str:
    """A path as a row's reference names it: 'onnxruntime:all', 'onnx-reference'."""
    return p.backend if p.optimization == NOT_APPLICABLE else f"{p.backend}:{p.optimization}"


def _bits(precision: str) -> int:
    """A precision setting's bits ('bf16' 16, 'f32' 32); 64 when unknown."""
    return {"bf16": 16, "bfloat16": 16, "f16": 16, "float16": 16, "f32": 32,
            "float32": 32}.get(precision, 64)


def _gate_class(gate: ml.Gate, stats: ml.OutputStats) -> str:
    if not stats.finite:
        return CONTRACT_ISSUE
    return PASSED if gate.passed else DIVERGENCE


def _parity_summary(figures: dict[str, Any]) -> str:
    keys = ("mae", "max_diff", "relative_error_pct", "conf_mae", "rotation_error_deg_max",
            "translation_error_max", "match_ratio", "top1_agreement")
    parts = [f"{k} {figures[k]:.3g}" for k in keys
             if k in figures and isinstance(figures[k], int | float)]
    return f"{figures.get('kind', '')} within tolerance: " + ", ".join(parts)


RUNTIME_QUANTISING = ("DynamicQuantizeLinear", "DynamicQuantizeLSTM")
"""Operators that round a model's activations to int8 at run time, each scale computed from
the tensor itself: a last-bit difference upstream moves values to another step."""


def arbiter_quantisation(case: CaseInstance) -> tuple[list[str], bool]:
    """The operators of a model case with a float64 arbiter that round its activations at
    run time, and whether the arbiter computes them dequantized (com.microsoft ones:
    ``shadow.needs_dequantizing``) rather than exactly; ([], False) without either."""
    from gero_runner.cases.user_models import SHADOW_LABEL
    from gero_runner.models import shadow

    if case.suite not in MODEL_SUITES or case.expected_label != SHADOW_LABEL or not (
            case.expected_exact or case.expected):
        return [], False
    model = onnx.load_from_string(case.model)
    dequantized = shadow.needs_dequantizing(model)
    if dequantized:
        return dequantized, True
    return sorted({n.op_type for n in model.graph.node if n.op_type in RUNTIME_QUANTISING}), \
        False


def _quantisation_sentence(ops: list[str], dequantized: bool) -> str:
    if dequantized:
        return (f"the float64 arbiter computes the model's quantised operators "
                f"({', '.join(ops)}) dequantized, without its rounding of activations")
    return (f"the model rounds its activations to int8 at run time ({', '.join(ops)}, each "
            "scale from the tensor itself): a last-bit difference moves values to another "
            "step, on every engine and in the float64 arbiter alike")


def dequantized_expected_rows(ctx: CaseContext, rows: list[Observation]
                              ) -> list[Observation]:
    """A model case's ``expected`` rows where the model rounds its activations at run time
    (``arbiter_quantisation``: its float64 arbiter computes them dequantized, or exactly but
    one last bit away from another int8 step): element-wise against it every engine is off
    by the model's own quantisation (tashkeel's BiLSTM: ONNX Runtime 675 of 705 elements;
    t5's encoder 17663 of 18432), which blames no engine; a divergence there is a note, and
    ``model:fp32`` decides between engines (``DEQUANTIZED_MARGIN``)."""
    if not any(r.check in ("expected", "levels") and r.result == DIVERGENCE for r in rows):
        return rows
    ops, dequantized = arbiter_quantisation(ctx.case)
    if not ops:
        return rows
    sentence = (f"element-wise against a dequantized arbiter ({', '.join(ops)} computed "
                "without the model's rounding of activations), which measures the model's own "
                "quantisation, not the engine; model:fp32 decides between engines"
                if dequantized else
                f"element-wise against the float64 arbiter of a model that rounds its "
                f"activations to int8 at run time ({', '.join(ops)}), where a last-bit "
                "difference moves values to another step: model:fp32 decides between engines")
    out = [dataclasses.replace(r, result=PASSED, reason=f"a note, no verdict: {sentence}; "
                               f"{r.reason}", note=sentence, cause="", arbiter=NOT_APPLICABLE)
           if r.check == "expected" and r.result == DIVERGENCE else r for r in rows]
    return [_level_within_sensitivity(ctx, r, ops) if r.check == "levels"
            and r.result == DIVERGENCE else r for r in out]


def _level_within_sensitivity(ctx: CaseContext, row: Observation, ops: list[str]
                              ) -> Observation:
    """A ``levels`` divergence (two settings of one runtime) of a model that rounds its
    activations at run time, no larger than ``DEQUANTIZED_MARGIN`` times the closest path's
    distance from the float64 arbiter: the model's own sensitivity moved it, and the arbiter
    cannot side with either element by element (t5's encoder: OpenVINO bf16-default against
    f32 0.22 scaled, the closest engine 0.307 from float64; the row blamed f32)."""
    by_label = {_path_label(p): p for n, p in ctx.paths.items()
                if p.ok and p.outputs and n != ctx.case.expected_label}  # not the arbiter
    actual = by_label.get(f"{row.backend}:{row.optimization}")
    ref = by_label.get(row.reference)
    names = ctx.output_names
    exact = list((ctx.case.expected_exact or ctx.case.expected or {}).values())
    if actual is None or ref is None or row.output_name not in names:
        return row
    j = names.index(row.output_name)
    if j >= len(exact) or actual.outputs is None or ref.outputs is None:
        return row
    a, r, truth = actual.outputs[j], ref.outputs[j], np.asarray(exact[j])
    if a.shape != r.shape or a.shape != truth.shape:
        return row
    level = ml.scaled_error(a, r)
    closest = min((e for p in by_label.values() if p.outputs is not None and j < len(p.outputs)
                   and p.outputs[j].shape == truth.shape and p.backend != "onnx-reference"
                   for e in [ml.scaled_error(p.outputs[j], truth)] if math.isfinite(e)),
                  default=math.nan)
    if not (math.isfinite(level) and math.isfinite(closest)) \
            or level > DEQUANTIZED_MARGIN * closest:
        return row
    sentence = (f"the model rounds its activations to int8 at run time ({', '.join(ops)}): "
                f"these settings differ by {level:.3g} (scaled), within {DEQUANTIZED_MARGIN:g}x "
                f"the closest path's distance from float64 ({closest:.3g}), the model's own "
                "sensitivity; no setting is blamed")
    return dataclasses.replace(row, result=PASSED, reason=f"a note, no verdict: {sentence}; "
                               f"{row.reason}", note=sentence, cause="", arbiter=NOT_APPLICABLE)


def fewer_bits_level_rows(ctx: CaseContext, rows: list[Observation]) -> list[Observation]:
    """A model case's ``levels`` divergence between a setting computing in fewer bits than
    the output declares (OpenVINO's bf16 default) and the same runtime's full-precision
    setting: the precision is the one difference between the two (as a float64 arbiter
    declares it), so the fewer-bits side is blamed with it named, as its ``model:fp32``
    row is (``_Checker._narrow_row``). Was 'OpenVINO at bf16-default and at f32 disagree …
    neither is blamed', a second finding beside the precision's on the same pair.

    With or without an arbiter, a levels row compares a setting with its runtime's first
    one: a divergence no larger than that runtime's own input-noise floor is a note
    (``_level_within_noise``), and one beyond it is the setting under test's, never the
    first setting's (ddddocr: OpenVINO bf16-default against f32 0.035, its noise floor
    0.0397, the element-wise arbiter siding with bf16 there: 'OpenVINO at f32 … is off', f32
    being closest of all paths to float64)."""
    if ctx.case.suite not in MODEL_SUITES:
        return rows
    return [_level_moved(ctx, r) if r.check == "levels" and r.result == DIVERGENCE else r
            for r in rows]


def _level_moved(ctx: CaseContext, row: Observation) -> Observation:
    """A ``levels`` divergence within its runtime's own input-noise floor, as a note; else
    blaming the setting under test (the side that moved from the runtime's first setting),
    with its precision where that is fewer bits (``_narrow_level``)."""
    row = _level_within_noise(ctx, row)
    if row.result != DIVERGENCE:
        return row
    row = _narrow_level(ctx, row)
    if row.arbiter == REFERENCE:
        return row
    sentence = (f"{row.backend}:{row.optimization} is the setting that moved the output from "
                f"{row.reference}, its runtime's first setting: the row is its own, whichever "
                "side a float64 arbiter is closer to")
    return dataclasses.replace(row, reason=f"{sentence}; {row.reason}", arbiter=REFERENCE)


def _level_within_noise(ctx: CaseContext, row: Observation) -> Observation:
    """A ``levels`` divergence no larger than its runtime's own input-noise floor (the
    baseline's 16 runs with 1e-7 relative input noise, ``model:noise-floor``), as a note:
    the two settings differ by no more than the runtime's own sensitivity moves either.
    Only where the row's reference, the runtime's first setting, is its baseline (OpenVINO
    f32): elsewhere the floor holds the first setting's own difference from the baseline,
    one of the rows it would judge."""
    runs = getattr(ctx, "model_runs", None)
    noise = getattr(runs, "noise", None) or {}
    by_label = {_path_label(p): p for p in ctx.paths.values() if p.backend == row.backend}
    actual, ref = by_label.get(f"{row.backend}:{row.optimization}"), by_label.get(row.reference)
    names = ctx.output_names
    if actual is None or ref is None or row.output_name not in names:
        return row
    got = noise.get(("fp32", ref.name))
    j = names.index(row.output_name)
    if not isinstance(got, tuple) or j not in got[0] or actual.outputs is None \
            or ref.outputs is None or j >= min(len(actual.outputs), len(ref.outputs)):
        return row
    floor: ml.Floor = got[0][j][0]
    a, r = actual.outputs[j], ref.outputs[j]
    if a.shape != r.shape or not floor.measured or not floor.samples:
        return row
    level = ml.scaled_error(a, r)
    if not (math.isfinite(level) and math.isfinite(floor.scaled_error)) \
            or level > floor.scaled_error:
        return row
    sentence = (f"these settings differ by {level:.3g} (scaled), within "
                f"{backends.get(row.backend).label()}'s own input-noise floor "
                f"({floor.scaled_error:.3g}: its {row.reference} with {NOISE_RELATIVE:g} "
                "relative input noise): no setting is blamed")
    return dataclasses.replace(row, result=PASSED, reason=f"a note, no verdict: {sentence}; "
                               f"{row.reason}", note=sentence, cause="", arbiter=NOT_APPLICABLE)


def _narrow_level(ctx: CaseContext, row: Observation) -> Observation:
    runtime = backends.find(row.backend)
    if runtime is None:
        return row
    by_label = {_path_label(p): p for p in ctx.paths.values() if p.backend == row.backend}
    actual, ref = by_label.get(f"{row.backend}:{row.optimization}"), by_label.get(row.reference)
    if actual is None or ref is None:
        return row
    mine, theirs = runtime.float_precision(actual.settings), runtime.float_precision(
        ref.settings)
    full = ("f32", "f64")
    if mine is not None and _bits(mine) < _bits(row.dtype) and theirs in full:
        narrow, precision, other, side = actual, mine, ref, REFERENCE
    elif theirs is not None and _bits(theirs) < _bits(row.dtype) and mine in full:
        narrow, precision, other, side = ref, theirs, actual, ACTUAL
    else:
        return row
    # OpenVINO's default path also quantizes int8-weight MatMuls' activations, which its
    # f32 turns off: the larger part of the int8 MiniLM's error (its compiled model says).
    quantized = _run_time_quantization(ctx, narrow)
    differs = (f" and {quantized}, against its own {_path_label(other)} computing as the "
               "graph declares: these are the two differences between the two settings"
               if quantized else
               f", against its own {_path_label(other)} computing as the graph declares: the "
               "precision is the one difference between the two settings")
    sentence = (f"{runtime.label()} at {narrow.optimization} computes {row.dtype} in "
                f"{precision} (its inference precision){differs}")
    return dataclasses.replace(row, reason=f"{sentence}; {row.reason}", arbiter=side)


def _run_time_quantization(ctx: CaseContext, path: PathResult) -> str:
    """What ``path`` quantizes at run time beyond the graph, as its compiled model says
    (``Backend.run_time_quantization``), '' when nothing or not known."""
    runtime = backends.find(path.backend)
    if runtime is None:
        return ""
    try:
        return runtime.run_time_quantization(ctx.case.model, path.settings)
    except Exception:  # the path already ran; a compile that fails again tells nothing
        return ""


STRUCTURE_LABEL = "model-structure"
"""The rows' path of gero's check of the model's ai.onnx.ml nodes against their specs."""


def structure_rows(ctx: CaseContext) -> list[Observation]:
    """One contract-issue row per node of the model that breaks its operator's spec
    (``CaseInstance.malformed``, ``models.structure``): the model's finding, no runtime's,
    naming what each path did with it on the fp32 model: ran it without a word (ONNX
    Runtime computes logreg_iris's 12-coefficient LinearClassifier with its first 6), or
    refused it (failed with an error no known cause names; a runtime that lacks the
    operator is its own finding)."""
    from gero_runner.backends.names import title
    from gero_runner.execution.context import NOT_APPLICABLE, PathResult

    ran: list[str] = []
    refused: list[str] = []
    for p in ctx.paths.values():
        who = title(p.backend)
        if p.ok and who not in ran:
            ran.append(who)
        elif not p.ok and p.error and failure_facts(root_cause(p.error), p.error,
                                                     ctx.op_domains)[1].startswith(ERROR_KEY):
            refused.append(who)
    refused = [w for i, w in enumerate(refused) if w not in ran and w not in refused[:i]]
    said = ([f"{' and '.join(ran)} run{'s' if len(ran) == 1 else ''} it anyway"] if ran
            else []) + ([f"{' and '.join(refused)} refuse{'s' if len(refused) == 1 else ''} "
                         "it"] if refused else [])
    checked = PathResult(STRUCTURE_LABEL, STRUCTURE_LABEL, onnx.__version__, NOT_APPLICABLE,
                         0, {"checked": "ai.onnx.ml attribute sizes against the operator "
                                        "specs (gero_runner.models.structure)"})
    rows = []
    for key, sentence in ctx.case.malformed:
        cause = sentence + (f"; {', '.join(said)}" if said else "")
        rows.append(ctx.row(
            check=STRUCTURE_CHECK, output_name="", actual=checked, reference_name=NOT_APPLICABLE,
            reference_version=onnx.__version__, dtype=ctx.case.dtype, cmp=None,
            rtol=math.nan, atol=math.nan, result=CONTRACT_ISSUE,
            reason=f"the model is malformed: {cause}", cause=cause, failure_kind=MALFORMED,
            cause_key=key, scope=MODEL_SCOPE))
    return rows


def run_model_checks(ctx: CaseContext) -> list[Observation]:
    """Entry point of the ``model`` family (checks.families.FAMILIES)."""
    if ctx.case.suite not in MODEL_SUITES:
        return []
    checker = _Checker(ctx)
    if not checker.baselines:
        return []
    base = ctx.paths[checker.baselines[0].spec.name]
    for name, kind in ctx.case.non_tensor_outputs.items():
        checker._fail("model:outputs", base, "-", f"output {name!r} is {kind}, not a tensor: "
                      "gero compares tensor outputs only, so this one is not compared", name)
    checker.rows += structure_rows(ctx)
    shadow_error = ctx.case.shadow_error
    if shadow_error:
        from gero_runner.execution.context import NOT_APPLICABLE, PathResult

        shadow = PathResult(ctx.case.expected_label, ctx.case.expected_label,
                            ctx.case.expected_version, NOT_APPLICABLE, 0,
                            {"evaluator": "onnx.reference.ReferenceEvaluator",
                             "widened": "float64"})
        # gero's own tooling, no path's failure (an operator that cannot be widened
        # says so itself: 'no float64 arbiter: BitCast cannot be widened').
        reason = shadow_error if shadow_error.startswith("no float64 arbiter") \
            else f"the float64 shadow could not run: {shadow_error}"
        checker._fail("model:float64-shadow", shadow, "-", reason, kind=TOOLING,
                      cause_key="tooling:shadow")
    if not base.ok:
        return checker.rows  # the run's baseline failed: its execution rows already say why
    floors = checker.noise_floor_rows()
    checker.model_floors = floors
    checker.fp32_rows(floors)
    checker.parity_rows()
    for name in checker.opts.variants:
        checker.variant_rows(name)
    return runtime_defect_rows(ctx, checker.rows)


def runtime_defect_rows(ctx: CaseContext, rows: list[Observation]) -> list[Observation]:
    """A model case's divergent rows of a runtime that a 1-node probe finds computing an
    operator of their file wrong, keyed by that defect (``backends.runtime_defects``): tract
    0.22's per-axis DequantizeLinear was three findings on three int8 files."""
    if ctx.case.suite not in MODEL_SUITES or not any(r.result == DIVERGENCE for r in rows):
        return rows
    import json

    from gero_runner.backends.runtime_defects import defect_of, pattern_counts
    from gero_runner.facts import DEFECT

    def file_of(scope: str) -> onnx.ModelProto | None:
        if scope in var.VARIANTS:
            try:
                return onnx.load_from_string(ctx.model_runs.variant_model(scope))
            except (GeroError, PathFailed, KeyError, AttributeError):
                return None  # the file was not made: nothing of it ran
        return onnx.load_from_string(ctx.case.model)

    counts: dict[str, dict[str, int]] = {}
    out = []
    for row in rows:
        found = None
        # a row another known cause already explains (a precision rewrite) keeps it
        if (row.result == DIVERGENCE and row.failure_kind != DEFECT and not row.cause_key
                and backends.find(row.backend) is not None
                and not backends.is_reference(row.backend)):
            if row.scope not in counts:
                model = file_of(row.scope)
                counts[row.scope] = {} if model is None else pattern_counts(model)
            found = defect_of(row.backend, row.backend_version, row.session_settings,
                              counts[row.scope], row.scope, ctx.settings.data_root)
        if found is not None:
            key, cause, facts = found
            details = {**json.loads(row.details or "{}"), "runtime_defect": facts}
            row = dataclasses.replace(row, reason=f"{cause}; {row.reason}", cause=cause,
                                      failure_kind=DEFECT, cause_key=key,
                                      details=json.dumps(details, sort_keys=True))
        out.append(row)
    return out
