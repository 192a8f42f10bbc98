"""Model-level metrics: figures over a whole output tensor, and the gates built on them.

Why these figures and gates: docs/explanation/tolerances.md.

Element-wise tolerances say little about a model output whose small elements are
differences of large terms. These metrics look at the output's scale and its structure:

- scaled error ``max|a−r| / max|r|`` and floored relative error
  ``max |a−r| / max(|r|, 1e-3·max|r|)``;
- the 1st-percentile cosine similarity over the rows of the last axis (the minimum when
  there are fewer than 100 rows): one extreme row among thousands is not gated;
- for outputs of rank ≥ 3, the minimum cosine of the mean-pooled vectors (mean over the
  second-to-last axis);
- decision agreement: the argmax over the last axis, for outputs that are decisions.

The noise floor of a statistic is its worst value over ONNX Runtime's own variations
(``disable_all`` against ``all``, and runs with 1e-7 relative input noise): a candidate
need not do better than ONNX Runtime does against itself.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

PERCENTILE_ROWS = 100
"""At least this many rows: the 1st percentile of the row cosines; fewer: their minimum."""
COSINE_CAP = 0.99
DECISION_SHARE = 0.95
FP16_SCALED_LIMIT = 4e-3
FP16_RATIO_LIMIT = 1.5
FP16_SPREAD_CAP = 5e-2
"""The largest distance between an fp16 file's two correct computations (rounded at each
node, exact) that widens the fp16 yardstick's gate; beyond it float16 itself breaks the
model and the 4e-3 gate stands."""
FP32_SCALED_LIMIT = 1e-4
"""fp32: a 1e-4 bound is meaningful against the output's scale, not per element
(docs/explanation/tolerances.md)."""
MODEL_REL_FLOOR = 1.0
"""Element-wise comparisons of a model's outputs take the rtol term at the output's largest
magnitude, ``|a−r| ≤ atol + rtol·max|r|``: the scaled error, the fp32 metric (its
other choice, a floor of at least 1e-2 of the maximum, still fails ONNX Runtime against its
own levels: they differ by 1e-4 to 3e-3 relative at a 1e-3 floor, because a model's small
elements are differences of large terms)."""
ROUNDINGS = 8
"""A narrower output is allowed this many of its own roundings (half an ulp each) of
scaled error: for float16, 8 × 2^-11 ≈ 3.9e-3, the 4e-3 fp16 gate."""


def scaled_limit(dtype: Any) -> float:
    """The scaled-error gate for an output of ``dtype``: 1e-4, or 8 of the dtype's own
    roundings when that is more (float16: 4e-3; bfloat16: 3.1e-2). A bound below one
    rounding of the output would fail a model that computes it exactly."""
    try:
        eps = float(np.finfo(np.dtype(dtype)).eps)
    except (TypeError, ValueError):
        name = str(dtype)
        eps = 2.0 ** -7 if "bfloat16" in name else 2.0 ** -23
    if str(dtype) == "float16":
        return FP16_SCALED_LIMIT
    return max(FP32_SCALED_LIMIT, ROUNDINGS * eps / 2)


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def scaled_error(actual: Any, reference: Any) -> float:
    a, r = _f64(actual), _f64(reference)
    if a.size == 0:
        return 0.0
    diff = float(np.max(np.abs(a - r)))
    scale = float(np.max(np.abs(r)))
    if scale == 0:
        return 0.0 if diff == 0 else math.inf
    return diff / scale


def floored_relative_error(actual: Any, reference: Any, floor: float = 1e-3) -> float:
    a, r = _f64(actual), _f64(reference)
    if a.size == 0:
        return 0.0
    scale = float(np.max(np.abs(r)))
    diff = np.abs(a - r)
    if scale == 0:
        return 0.0 if float(diff.max()) == 0 else math.inf
    return float(np.max(diff / np.maximum(np.abs(r), floor * scale)))


def _cosines(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Cosine of each pair of rows; two zero rows are identical (1), one zero row is 0."""
    dot = np.sum(a * r, axis=-1)
    na = np.linalg.norm(a, axis=-1)
    nr = np.linalg.norm(r, axis=-1)
    both_zero = (na == 0) & (nr == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(both_zero, 1.0, dot / (na * nr))
    return np.where(np.isnan(cos) & ~both_zero, 0.0, np.clip(cos, -1.0, 1.0))


def row_cosine(actual: Any, reference: Any) -> tuple[float, int]:
    """(1st-percentile row cosine over the last axis, or the minimum under 100 rows; rows)."""
    a, r = _f64(actual), _f64(reference)
    if a.ndim == 0:
        a, r = a.reshape(1, 1), r.reshape(1, 1)
    rows_a = a.reshape(-1, a.shape[-1]) if a.shape[-1] else a.reshape(-1, 1)
    rows_r = r.reshape(-1, r.shape[-1]) if r.shape[-1] else r.reshape(-1, 1)
    if rows_a.shape[0] == 0:
        return 1.0, 0
    cos = _cosines(rows_a, rows_r)
    n = cos.shape[0]
    if n < PERCENTILE_ROWS:
        return float(cos.min()), n
    return float(np.percentile(cos, 1)), n


def pooled_cosine(actual: Any, reference: Any) -> float:
    """Minimum cosine of the vectors mean-pooled over the second-to-last axis (rank ≥ 3)."""
    a, r = _f64(actual), _f64(reference)
    if a.ndim < 3:
        return math.nan
    pa, pr = a.mean(axis=-2), r.mean(axis=-2)
    return float(_cosines(pa.reshape(-1, pa.shape[-1]), pr.reshape(-1, pr.shape[-1])).min())


def decisions(actual: Any, reference: Any) -> tuple[int, int]:
    """(positions whose argmax over the last axis agrees, positions)."""
    a, r = np.asarray(actual), np.asarray(reference)
    if a.ndim == 0 or a.shape[-1] == 0:
        return 0, 0
    da, dr = np.argmax(a, axis=-1), np.argmax(r, axis=-1)
    return int(np.sum(da == dr)), int(da.size)


@dataclass(frozen=True)
class OutputStats:
    """Every model-level figure of one output against a reference output."""

    scaled_error: float
    floored_rel_error: float
    row_cosine: float
    rows: int
    pooled_cosine: float
    decisions_agree: int
    decisions: int
    finite: bool

    @property
    def decision_share(self) -> float:
        return self.decisions_agree / self.decisions if self.decisions else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "decision_share": self.decision_share}


def output_stats(actual: Any, reference: Any, *, decision: bool = False) -> OutputStats:
    a, r = _f64(actual), _f64(reference)
    finite = bool(np.isfinite(a).all() and np.isfinite(r).all())
    if a.shape != r.shape:
        raise ValueError(f"shapes differ: {list(a.shape)} vs {list(r.shape)}")
    if not finite:  # figures over the finite part would hide the problem
        nan = math.nan
        return OutputStats(nan, nan, nan, 0, nan, 0, 0, False)
    cos, rows = row_cosine(a, r)
    agree, total = decisions(a, r) if decision else (0, 0)
    return OutputStats(scaled_error(a, r), floored_relative_error(a, r), cos, rows,
                       pooled_cosine(a, r), agree, total, True)


@dataclass(frozen=True)
class Floor:
    """ONNX Runtime's own sensitivity for one output: the worst of each statistic."""

    row_cosine: float
    pooled_cosine: float
    decisions_agree: int
    decisions: int
    scaled_error: float
    floored_rel_error: float
    samples: int
    measured: bool = True
    """False: no noise runs were made (``unmeasured_floor``), the gate is the floorless one."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def unmeasured_floor(stats: OutputStats) -> Floor:
    """A floor that leaves a variant's gate as it is without one: row cosines 1 (the gate is
    then 0.99), every decision agreeing (95 %), no scaled error. A measured floor can only
    lower the gate, so a variant that passes against this one passes against any floor."""
    return Floor(1.0, 1.0, stats.decisions, stats.decisions, 0.0, 0.0, 0, measured=False)


def noise_floor(stats: Iterable[OutputStats]) -> Floor:
    """Worst cosine, decision count and error over ONNX Runtime's own variations."""
    items = list(stats)
    if not items or not all(s.finite for s in items):
        nan = math.nan
        return Floor(nan, nan, 0, 0, nan, nan, len(items))
    pooled = [s.pooled_cosine for s in items if not math.isnan(s.pooled_cosine)]
    return Floor(
        row_cosine=min(s.row_cosine for s in items),
        pooled_cosine=min(pooled) if pooled else math.nan,
        decisions_agree=min(s.decisions_agree for s in items),
        decisions=max(s.decisions for s in items),
        scaled_error=max(s.scaled_error for s in items),
        floored_rel_error=max(s.floored_rel_error for s in items),
        samples=len(items),
    )


@dataclass(frozen=True)
class Gate:
    passed: bool
    reason: str
    figures: dict[str, Any]


def int8_cosine_gate(stats: OutputStats, floor: Floor) -> Gate:
    """Row cosine (and pooled cosine at rank ≥ 3) at least min(0.99, floor)."""
    need = min(COSINE_CAP, floor.row_cosine)
    figures: dict[str, Any] = {
        "row_cosine": stats.row_cosine, "rows": stats.rows, "need_row_cosine": need,
        "floor": floor.as_dict(), "scaled_error": stats.scaled_error}
    if not stats.finite or math.isnan(need):
        return Gate(False, "non-finite output or floor: the cosine cannot be assessed", figures)
    failures = []
    if stats.row_cosine < need:
        failures.append(f"row cosine {stats.row_cosine:.6f} < min(0.99, floor "
                        f"{floor.row_cosine:.6f}) over {stats.rows} row(s)")
    if not math.isnan(stats.pooled_cosine):
        need_pooled = min(COSINE_CAP, floor.pooled_cosine)
        figures.update(pooled_cosine=stats.pooled_cosine, need_pooled_cosine=need_pooled)
        if stats.pooled_cosine < need_pooled:
            failures.append(f"mean-pooled cosine {stats.pooled_cosine:.6f} < {need_pooled:.6f}")
    if failures:
        return Gate(False, "; ".join(failures), figures)
    text = f"row cosine {stats.row_cosine:.6f} ≥ {need:.6f} (min of 0.99 and the noise floor)"
    if "pooled_cosine" in figures:
        need_pooled = figures["need_pooled_cosine"]
        text += f", mean-pooled cosine {stats.pooled_cosine:.6f} ≥ {need_pooled:.6f}"
    return Gate(True, text, figures)


def decision_gate(stats: OutputStats, floor: Floor) -> Gate:
    """Argmax agrees on ≥ 95 % of positions or on as many as the floor; one decision must."""
    figures = {"agree": stats.decisions_agree, "decisions": stats.decisions,
               "floor_agree": floor.decisions_agree, "share": stats.decision_share}
    if not stats.finite or stats.decisions == 0:
        return Gate(False, "no decisions could be compared (non-finite or empty output)",
                    figures)
    if stats.decisions == 1:
        ok = stats.decisions_agree == 1
        return Gate(ok, "the single decision " + ("agrees" if ok else "differs"), figures)
    ok = (stats.decision_share >= DECISION_SHARE
          or stats.decisions_agree >= floor.decisions_agree)
    text = (f"argmax agrees on {stats.decisions_agree} of {stats.decisions} positions "
            f"({stats.decision_share:.1%}); needs ≥ 95 % or ≥ the floor's "
            f"{floor.decisions_agree}")
    return Gate(ok, text, figures)


EXACT_ANGLE_RATIO = 1.5
"""A path may be this many times as far (in angle) from an int8 file's exact computation as
the run's baseline is, as the fp16 yardstick allows 1.5× the spread of correct engines."""


def _angle(cosine: float) -> float:
    return math.acos(min(1.0, max(-1.0, cosine)))


def _exact_need(base_cosine: float, floor_cosine: float) -> float:
    """The cosine a path needs against the exact computation: 1.5× the spread of correct
    computations (the larger angle of the baseline's to the exact one and of the
    baseline's floor), and no more than the 0.99 gate's angle beyond it (an output the
    flips scramble for the baseline too blames nothing, but scrambling it further is not a
    correct computation)."""
    theta = max(_angle(base_cosine),
                _angle(floor_cosine) if math.isfinite(floor_cosine) else 0.0)
    return math.cos(min(EXACT_ANGLE_RATIO * theta, theta + _angle(COSINE_CAP), math.pi))


def int8_exact_gate(path: OutputStats, base: OutputStats, floor: Floor | None = None) -> Gate:
    """A path that disagrees with the run's baseline on an int8 file, judged against the
    file computed exactly (its float parts in float64): one float32 ulp before a
    quantizer flips an 8-bit rounding and the flips spread, so two correct engines each
    land some way off the exact computation, and apart from each other by up to the sum.
    The path is as correct as the baseline when its row cosine to the exact computation is
    within 1.5× the spread of correct computations (the baseline's angle to the exact one,
    or its floor's when larger), and so its mean-pooled cosine."""
    floor_row = floor.row_cosine if floor is not None and floor.measured else math.nan
    floor_pooled = floor.pooled_cosine if floor is not None and floor.measured else math.nan
    need = _exact_need(base.row_cosine, floor_row)
    figures: dict[str, Any] = {
        "row_cosine_vs_exact": path.row_cosine, "baseline_row_cosine_vs_exact": base.row_cosine,
        "need_row_cosine_vs_exact": need}
    if not (path.finite and base.finite):
        return Gate(False, "non-finite output: not comparable with the exact computation",
                    figures)
    ok = path.row_cosine >= need
    text = (f"against the file computed exactly its row cosine is {path.row_cosine:.6f}, "
            f"the run's baseline's {base.row_cosine:.6f} (needs ≥ {need:.6f}: 1.5× the "
            "spread of correct computations)")
    if not math.isnan(path.pooled_cosine) and not math.isnan(base.pooled_cosine):
        need_pooled = _exact_need(base.pooled_cosine, floor_pooled)
        figures.update(pooled_cosine_vs_exact=path.pooled_cosine,
                       baseline_pooled_cosine_vs_exact=base.pooled_cosine,
                       need_pooled_cosine_vs_exact=need_pooled)
        ok = ok and path.pooled_cosine >= need_pooled
        text += (f", mean-pooled {path.pooled_cosine:.6f} against the baseline's "
                 f"{base.pooled_cosine:.6f} (needs ≥ {need_pooled:.6f})")
    return Gate(ok, text, figures)


def int8_exact_decision_gate(path: OutputStats, base: OutputStats) -> Gate:
    """Decisions of a path that disagrees with the run's baseline on an int8 file: against
    the file computed exactly, it agrees on as many positions as the baseline does (or 95 %)."""
    figures = {"agree_vs_exact": path.decisions_agree,
               "baseline_agree_vs_exact": base.decisions_agree, "decisions": path.decisions}
    if not (path.finite and base.finite) or path.decisions == 0:
        return Gate(False, "no decisions could be compared with the exact computation",
                    figures)
    ok = (path.decisions_agree >= base.decisions_agree
          or path.decision_share >= DECISION_SHARE)
    text = (f"against the file computed exactly its argmax agrees on {path.decisions_agree} "
            f"of {path.decisions} positions, the run's baseline's on {base.decisions_agree}")
    return Gate(ok, text, figures)


def fp16_reference_gate(scaled: float, widened: bool, spread: float = math.nan) -> Gate:
    """A path on the fp16 file against a correct computation of it: the float64 shadow
    rounded to float16 at each node, or (``widened``: a path that computes the file in
    float32) the exact shadow; scaled error ≤ 4e-3 (two correct engines that round in
    different places differ by that much: docs/explanation/tolerances.md), or ≤ 1.5×
    ``spread`` when that is larger: how far the two correct computations (rounded at each
    node and exact) are apart on this file, which an engine that rounds elsewhere (a
    BatchNormalization folded into float16 weights) may be too (PicoDet's layout file:
    9e-3)."""
    what = ("the fp16 file computed exactly (this path computes it in float32)" if widened
            else "the fp16 file's float64 shadow rounded to float16 at each node")
    limit = FP16_SCALED_LIMIT
    # A file whose float16-rounded computation is itself far off the exact one (magika:
    # the whole scale) gives no allowance: its spread would pass anything.
    by_spread = (math.isfinite(spread) and FP16_RATIO_LIMIT * spread > limit
                 and spread <= FP16_SPREAD_CAP)
    if by_spread:
        limit = FP16_RATIO_LIMIT * spread
    ok = scaled <= limit
    text = f"scaled error against {what} {scaled:.3g} {'≤' if ok else '>'} {limit:.3g}"
    if by_spread:
        text += (f" (1.5× the {spread:.3g} that the file's two correct computations, rounded "
                 "to float16 at each node and exact, are apart on its outputs)")
    return Gate(ok, text, {"scaled_error": scaled, "limit": limit, "widened": widened,
                           "yardsticks_apart": spread})


def fp16_vs_fp32_gate(scaled: float, honest: float, floor: float = math.nan) -> Gate:
    """A path's fp16 output against the fp32 model: scaled error ≤ 4e-3 (the fp16 gate),
    or ≤ 1.5× a correct fp16 computation's own error when that is larger (a deep model
    loses more than 4e-3 to float16 rounding on every correct engine), or within the
    model's own noise floor (``floor``: the scaled error 1e-7 input noise makes on the fp32
    model; float16's rounding of the inputs alone is far more than that, so a model that
    moves this much from 1e-7 blames no fp16 path for it)."""
    limit = FP16_SCALED_LIMIT
    if math.isfinite(honest):
        limit = max(limit, FP16_RATIO_LIMIT * honest)
    by_floor = math.isfinite(floor) and floor > limit
    if by_floor:
        limit = floor
    ok = scaled <= limit
    text = f"scaled error against the fp32 model {scaled:.3g} {'≤' if ok else '>'} {limit:.3g}"
    if by_floor:
        text += (f" (the fp32 model's own noise floor: 1e-7 relative input noise moves it by "
                 f"{floor:.3g} scaled)")
    elif math.isfinite(honest):
        text += (f" (4e-3, or 1.5× the error {honest:.3g} of the fp16 file computed correctly: "
                 "rounded to float16 at each node, or exactly, whichever is further off)")
    return Gate(ok, text, {"scaled_error": scaled, "limit": limit,
                           "correct_fp16_vs_fp32": honest, "model_noise_floor": floor})


FP16_STEPS = 4
"""Float16 steps (its spacing at each reference value) a gate on the fp16 file accepts at
every element: for normal values 4 steps are at most 4 × 2^-10 of the value, within the
4e-3 gate already; below 6.1e-5 float16's step is a fixed 2^-24 = 5.96e-8, so a tiny
output's last bit weighs far more (oww's 1.55e-5: 0.38 % a step, and a runtime one step
from the correctly rounded value failed 4e-3)."""


def fp16_steps(actual: Any, reference: Any) -> float:
    """The largest difference at any element counted in float16 steps at the reference
    value (2^-10 of its binade, 2^-24 below float16's smallest normal 2^-14); inf where
    either side is NaN or inf."""
    a, r = _f64(actual), _f64(reference)
    if a.size == 0:
        return 0.0
    if a.shape != r.shape or not (np.isfinite(a).all() and np.isfinite(r).all()):
        return math.inf
    r16 = np.abs(np.clip(r, -65504.0, 65504.0).astype(np.float16)).astype(np.float64)
    step = np.exp2(np.floor(np.log2(np.maximum(r16, 2.0 ** -14))) - 10)
    return float(np.max(np.abs(a - r) / step))


def within_fp16_steps(gate: Gate, actual: Any, reference: Any) -> Gate:
    """A failed gate on an output of the fp16 file passed again where the output is within
    ``FP16_STEPS`` float16 steps of the reference at every element: float16's own
    resolution there, no error (it matters for values below float16's smallest normal)."""
    steps = fp16_steps(actual, reference)
    figures = {**gate.figures, "fp16_steps": steps}
    if gate.passed or steps > FP16_STEPS:
        return dataclasses.replace(gate, figures=figures)
    return Gate(True, f"within {steps:.3g} float16 steps of it at every element (≤ "
                f"{FP16_STEPS}: float16's spacing at each value, 5.96e-08 below 6.1e-05), "
                f"float16's own resolution; alone its gate failed: {gate.reason}", figures)


INT8_SINGLE_LIMIT_WHY = "rows of one element: a cosine only compares their signs"


def int8_single_gate(stats: OutputStats, floor: Floor) -> Gate:
    """Two paths on an int8 file whose output rows hold one element (a detector's [1, 1]
    score), where a row cosine says only the sign: the scaled error between them at most
    8 int8 roundings (``INT8_SCALED_LIMIT``) or the floor's, as ``variant_gate`` judges such
    an output against the fp32 model."""
    limit = INT8_SCALED_LIMIT
    if floor.measured and math.isfinite(floor.scaled_error):
        limit = max(limit, floor.scaled_error)
    figures: dict[str, Any] = {"scaled_error": stats.scaled_error, "scaled_limit": limit,
                               "rows": stats.rows, "floor": floor.as_dict()}
    if not stats.finite:
        return Gate(False, "non-finite output: the scaled error cannot be assessed", figures)
    ok = stats.scaled_error <= limit
    return Gate(ok, f"scaled error {stats.scaled_error:.3g} {'≤' if ok else '>'} {limit:.3g} "
                f"({INT8_SINGLE_LIMIT_WHY})", figures)


def int8_exact_single_gate(path: OutputStats, base: OutputStats) -> Gate:
    """``int8_exact_gate`` for outputs whose rows hold one element: the path's scaled error
    against the file computed exactly at most 1.5× the baseline's, or 8 int8 roundings."""
    need = max(EXACT_ANGLE_RATIO * base.scaled_error, INT8_SCALED_LIMIT)
    figures = {"scaled_error_vs_exact": path.scaled_error,
               "baseline_scaled_error_vs_exact": base.scaled_error,
               "need_scaled_error_vs_exact": need}
    if not (path.finite and base.finite):
        return Gate(False, "non-finite output: not comparable with the exact computation",
                    figures)
    ok = path.scaled_error <= need
    return Gate(ok, f"against the file computed exactly its scaled error is "
                f"{path.scaled_error:.3g}, the run's baseline's {base.scaled_error:.3g} "
                f"(needs ≤ {need:.3g}: 1.5× the baseline's, or 8 int8 roundings; "
                f"{INT8_SINGLE_LIMIT_WHY})", figures)


def overflow_text(x: np.ndarray, where: str) -> str:
    """What a non-finite fp16 output says: how many elements, and float16's limit."""
    bad = ~np.isfinite(np.asarray(x, dtype=np.float64))
    return (f"{int(bad.sum())} of {x.size} elements are NaN or inf on {where}: float16 "
            f"overflows past ±65504 (its largest finite value) or an intermediate was NaN")


def worse_floor(a: Floor, b: Floor | None) -> Floor:
    """The worse of two floors, statistic by statistic (two runtimes' sensitivities)."""
    if b is None:
        return a
    return noise_floor_of([a, b])


def noise_floor_of(floors: list[Floor]) -> Floor:
    pooled = [f.pooled_cosine for f in floors if not math.isnan(f.pooled_cosine)]
    return Floor(row_cosine=min(f.row_cosine for f in floors),
                 pooled_cosine=min(pooled) if pooled else math.nan,
                 decisions_agree=min(f.decisions_agree for f in floors),
                 decisions=max(f.decisions for f in floors),
                 scaled_error=max(f.scaled_error for f in floors),
                 floored_rel_error=max(f.floored_rel_error for f in floors),
                 samples=sum(f.samples for f in floors))


def fp32_gate(stats: OutputStats, floor: Floor | None, decision: bool,
              limit: float = FP32_SCALED_LIMIT) -> Gate:
    """The model against the arbiter: scaled error ≤ ``limit`` (1e-4 for float32, see
    :func:`scaled_limit`) or within the noise floor's own scaled error when that is larger
    (a difference the runtime makes from 1e-7 input noise blames no one); decisions at
    least as the floor's."""
    floor_scaled = floor.scaled_error if floor is not None else math.nan
    if math.isfinite(floor_scaled) and floor_scaled > limit:
        limit = floor_scaled
    figures = {**stats.as_dict(), "scaled_limit": limit}
    if not stats.finite:
        return Gate(False, "non-finite values: model-level figures cannot be assessed", figures)
    failures = []
    within = (" (the noise floor's own scaled error)" if limit == floor_scaled else "")
    if stats.scaled_error > limit:
        failures.append(f"scaled error {stats.scaled_error:.3g} > {limit:.3g}{within}")
    if decision and floor is not None:
        gate = decision_gate(stats, floor)
        if not gate.passed:
            failures.append(gate.reason)
    if failures:
        return Gate(False, "; ".join(failures), figures)
    text = (f"scaled error {stats.scaled_error:.3g} ≤ {limit:.3g}{within}; row cosine "
            f"{stats.row_cosine:.6f}, floored relative error {stats.floored_rel_error:.3g}")
    if decision:
        text += f"; argmax agrees on {stats.decisions_agree} of {stats.decisions}"
    return Gate(True, text, figures)


INT8_SCALED_LIMIT = ROUNDINGS * 0.5 / 127
"""8 roundings of a symmetric int8 quantisation (half a step of 1/127 of the range)."""


def variant_scaled_limit(variant: str) -> float:
    """Scaled-error bound for a variant's outputs whose rows hold one element (a cosine of
    one number says only its sign): 8 roundings of the variant's own precision."""
    return scaled_limit("float16") if variant == "fp16" else INT8_SCALED_LIMIT


def variant_gate(stats: OutputStats, floor: Floor, decision: bool,
                 single_limit: float | None = None) -> Gate:
    """A variant (int8, fp16) against the fp32 model it replaces, on the same inputs: the
    model-level metric (row cosine, and mean-pooled cosine at rank ≥ 3, at least min(0.99,
    floor); with a decision task, argmax agreement as :func:`decision_gate`), the floor
    being ONNX Runtime's own sensitivity on the variant. Scaled and floored relative error
    are reported, not gated (docs/explanation/tolerances.md), except for outputs whose rows
    hold one element (``single_limit``: a regressor's [N, 1]), where the scaled error is
    the gate."""
    cosine = int8_cosine_gate(stats, floor)
    figures = {**cosine.figures, "floored_rel_error": stats.floored_rel_error,
               "decisions_agree": stats.decisions_agree, "decisions": stats.decisions}
    failures = [] if cosine.passed else [cosine.reason]
    texts = [cosine.reason] if cosine.passed else []
    if single_limit is not None and stats.finite:
        # Rows of one element: the cosine only compares signs, the scaled error is gated.
        limit = max(single_limit, floor.scaled_error)
        figures.update(scaled_limit=limit)
        text = (f"scaled error {stats.scaled_error:.3g} "
                f"{'≤' if stats.scaled_error <= limit else '>'} {limit:.3g} (rows of one "
                "element: a cosine only compares their signs)")
        (texts if stats.scaled_error <= limit else failures).append(text)
    if decision:
        gate = decision_gate(stats, floor)
        figures.update(floor_agree=gate.figures["floor_agree"])
        (texts if gate.passed else failures).append(gate.reason)
    tail = (f" (scaled error {stats.scaled_error:.3g}, floored relative error "
            f"{stats.floored_rel_error:.3g}, not gated)") if stats.finite else ""
    if single_limit is not None and stats.finite:
        tail = f" (floored relative error {stats.floored_rel_error:.3g}, not gated)"
    if not floor.measured:
        tail += ("; the noise floor was not measured: " + (
            "this gate passes without one, and a floor can only lower it" if stats.finite
            else "no floor makes a non-finite output assessable"))
    if failures:
        return Gate(False, "; ".join(failures) + tail, figures)
    return Gate(True, "; ".join(texts) + tail, figures)
