"""The laws themselves, on plain arrays: each takes the two sides of a law and says whether
it holds, with the figure that decides it.

Nothing here runs a backend, so every law can be tested on hand-made arrays. A law returns
a ``LawResult``: the result class (passed or contract_issue), a reason that names the law
and the figure, the tolerance used, the two sides (for the evidence files) and the figures
for the row's ``details``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gero_runner.metrics.compare import Comparison, compare
from gero_runner.schema import CONTRACT_ISSUE, PASSED


@dataclass
class LawResult:
    law: str
    result: str
    reason: str
    rtol: float
    atol: float
    actual: np.ndarray
    """The side the law constrains (e.g. concat(parts), the row sums)."""
    reference: np.ndarray
    """What the law says it must equal (e.g. the full batch, ones)."""
    cmp: Comparison | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return self.result == PASSED


def unit_roundoff(dtype: np.dtype[Any] | str) -> float:
    """u = eps / 2 of a float dtype (0 for exact types)."""
    dt = np.dtype(dtype)
    return float(np.finfo(dt).eps) / 2 if dt.kind == "f" else 0.0


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _unit(actual: np.ndarray, reference: np.ndarray) -> np.dtype[Any]:
    """The dtype whose ULPs a law's figures count: the output's, not float64's."""
    for x in (reference, actual):
        if x.dtype.kind == "f" and x.dtype != np.float64:
            return x.dtype
    return actual.dtype


def _nonfinite_clauses(cmp: Comparison, actual_label: str, reference_label: str) -> list[str]:
    """NaN on both sides and non-finite values on one side, as reason clauses."""
    out = []
    if cmp.nan_both:
        out.append(f"NaN on both sides at {cmp.nan_both} of {cmp.element_count} elements "
                   "(NaN == NaN never passes)")
    out += [g.describe(cmp.element_count, actual_label, reference_label) for g in cmp.nonfinite]
    return out


def compare_law(law: str, actual: np.ndarray, reference: np.ndarray, rtol: float, atol: float,
                *, actual_label: str = "actual", reference_label: str = "reference") -> LawResult:
    """Two sides that must agree within ``atol + rtol·|reference|``.

    NaN at the same position on both sides breaks the law as it breaks every comparison
    (NaN == NaN is never a pass): the law cannot be assessed there. The counts are recorded.
    """
    a, r = np.asarray(actual), np.asarray(reference)
    label = f"{law}: |{reference_label} − {actual_label}|"
    if a.shape != r.shape:
        return LawResult(law, CONTRACT_ISSUE,
                         f"{law}: shape {list(a.shape)} of {actual_label} differs from "
                         f"{list(r.shape)} of {reference_label}", rtol, atol, a, r)
    cmp = compare(a, r, rtol, atol)
    details: dict[str, Any] = {"law": law, "bit_exact": cmp.bit_exact,
                               "nan_both": cmp.nan_both,
                               "nonfinite_mismatch": cmp.nonfinite_mismatch,
                               "max_abs_error": cmp.max_abs_error,
                               "elements": cmp.element_count}
    if cmp.within_tolerance:
        if cmp.bit_exact:
            reason = f"{law}: {actual_label} bit-exact with {reference_label}"
        else:
            reason = (f"{law}: max {label[len(law) + 2:]} = {_fmt(cmp.max_abs_error)} within "
                      f"atol={atol:g} + rtol={rtol:g}·|r| (not bit-exact)")
        return LawResult(law, PASSED, reason, rtol, atol, a, r, cmp, details)
    clauses = _nonfinite_clauses(cmp, actual_label, reference_label)
    if cmp.dtype_mismatch:
        clauses.append(f"dtype {cmp.actual_dtype} of {actual_label} differs from "
                       f"{cmp.reference_dtype} of {reference_label}")
    if cmp.finite_mismatch:
        a64, r64 = a.astype(np.float64), r.astype(np.float64)
        finite = np.isfinite(a64) & np.isfinite(r64)
        with np.errstate(invalid="ignore", over="ignore"):
            excess = np.where(finite, np.abs(a64 - r64) - (atol + rtol * np.abs(r64)), -np.inf)
        k = int(np.argmax(excess))
        err = float(abs(a64.flat[k] - r64.flat[k]))
        tol = atol + rtol * abs(float(r64.flat[k]))
        clauses.append(f"|{reference_label} − {actual_label}| = {_fmt(err)} > tol {_fmt(tol)} "
                       f"at {cmp.finite_mismatch} of {cmp.element_count} elements")
        details.update(worst_index=k, worst_error=err, worst_tol=tol)
    return LawResult(law, CONTRACT_ISSUE, f"{law}: " + "; ".join(clauses), rtol, atol, a, r,
                     cmp, details)


# ---------------------------------------------------------------- reductions across the batch

SUM_LIKE = {"ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceMean"}
EXTREMA = {"ReduceMax": np.maximum, "ReduceMin": np.minimum}


def combine_partials(op_type: str, parts: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Combine per-part reductions into the reduction of the whole, in float64."""
    p = [np.asarray(x, dtype=np.float64) for x in parts]
    out: np.ndarray  # numpy's stubs type these reductions over a list as Any
    with np.errstate(all="ignore"):
        if op_type in ("ReduceSum", "ReduceSumSquare", "ReduceL1"):
            out = np.sum(p, axis=0)
        elif op_type == "ReduceMean":
            out = np.sum([x * n for x, n in zip(p, sizes, strict=True)], axis=0) / sum(sizes)
        elif op_type in EXTREMA:
            out = EXTREMA[op_type].reduce(p)
        elif op_type == "ReduceProd":
            out = np.prod(p, axis=0)
        elif op_type == "ReduceL2":
            out = np.sqrt(np.sum(np.square(p), axis=0))
        elif op_type == "ReduceLogSumExp":
            out = np.logaddexp.reduce(p, axis=0)
        else:
            raise ValueError(f"no partial-reduction rule for {op_type}; known: "
                             f"{', '.join(sorted(REDUCTION_RULES))}")
    return out


REDUCTION_RULES = (*SUM_LIKE, *EXTREMA, "ReduceProd", "ReduceL2", "ReduceLogSumExp")


def reduction_bound(op_type: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool,
                    dtype: np.dtype[Any] | str, atol: float, rtol: float,
                    reference: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Per-element bound on |full − combined partials| for a reduction of length n.

    Two summation orders of n terms each err by at most γ_n·Σ|term| (Higham), so the bound
    is ``atol + 2·n·u·Σ|term|`` for sums (divided by n for the mean); maxima and minima are
    exact. Other reductions get ``atol + (rtol + 2·n·u)·|reference|``. Returns the bound,
    its relative factor and n.
    """
    n = int(np.prod([x.shape[a] for a in axes])) if axes else int(x.size)
    u = unit_roundoff(dtype)
    factor = 2 * n * u
    x64 = np.asarray(x, dtype=np.float64)
    ref = np.abs(np.asarray(reference, dtype=np.float64))
    with np.errstate(all="ignore"):
        if op_type in EXTREMA:
            return np.zeros(ref.shape), 0.0, n
        if op_type in SUM_LIKE:
            terms = np.square(x64) if op_type == "ReduceSumSquare" else np.abs(x64)
            mass = np.sum(terms, axis=axes, keepdims=True)
            if not keepdims:  # a literal keepdims type-checks against every numpy, a bool not
                mass = np.squeeze(mass, axis=axes)
            if op_type == "ReduceMean":
                mass = mass / n
            return atol + factor * np.broadcast_to(mass, ref.shape), factor, n
        return atol + (rtol + factor) * ref, rtol + factor, n


def bounded_law(law: str, actual: np.ndarray, reference: np.ndarray, bound: np.ndarray,
                rtol: float, atol: float, *, actual_label: str,
                reference_label: str, figures: dict[str, Any]) -> LawResult:
    """|actual − reference| ≤ bound element-wise (bound 0 means exact, NaN must match)."""
    a64 = np.asarray(actual, dtype=np.float64)
    r64 = np.asarray(reference, dtype=np.float64)
    details = {"law": law, **figures}
    if a64.shape != r64.shape:
        return LawResult(law, CONTRACT_ISSUE,
                         f"{law}: shape {list(a64.shape)} of {actual_label} differs from "
                         f"{list(r64.shape)} of {reference_label}", rtol, atol, a64, r64,
                         None, details)
    # NaN at the same position on both sides is not a match (never a pass): infinitely far.
    same = a64 == r64
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(a64 - r64))
    err = np.where(np.isnan(err), np.inf, err)
    bad = err > bound
    cmp = compare(a64, r64, 0.0, 0.0, unit=_unit(np.asarray(actual), np.asarray(reference)))
    cmp = dataclasses.replace(cmp, mismatch_count=int(bad.sum()), bit_exact=bool(same.all()))
    details.update(bit_exact=bool(same.all()), nan_both=cmp.nan_both,
                   max_abs_error=float(err.max(initial=0.0)),
                   max_bound=float(np.max(bound, initial=0.0)))
    if not bad.any():
        reason = (f"{law}: {actual_label} bit-exact with {reference_label}" if same.all() else
                  f"{law}: max |{reference_label} − {actual_label}| = "
                  f"{_fmt(float(err.max()))} within the bound "
                  f"{_fmt(float(np.max(bound)))}")
        return LawResult(law, PASSED, reason, rtol, atol, a64, r64, cmp, details)
    clauses = _nonfinite_clauses(cmp, actual_label, reference_label)
    finite_bad = bad & np.isfinite(err)
    if finite_bad.any():
        k = int(np.argmax(np.where(finite_bad, err - bound, -np.inf)))
        kind = "exact" if float(np.max(bound, initial=0.0)) == 0 else "tol"
        clauses.append(f"|{reference_label} − {actual_label}| = {_fmt(float(err.flat[k]))} > "
                       f"{kind} {_fmt(float(bound.flat[k]))} at {int(finite_bad.sum())} of "
                       f"{bad.size} elements")
    return LawResult(law, CONTRACT_ISSUE, f"{law}: " + "; ".join(clauses), rtol, atol, a64,
                     r64, cmp, details)


# ---------------------------------------------------------------- probabilities

def probability_law(y: np.ndarray, axis: int | None, rtol: float,
                    law: str = "probability") -> LawResult:
    """Finite, within [0, 1], and (when ``axis`` is given) each row sums to 1.

    The row-sum tolerance is ``rtol + L·u``: each of L outputs carries a rounding of at most
    u of its value, and rtol is the dtype's own allowance for the operator.
    """
    y = np.asarray(y)
    u = unit_roundoff(y.dtype)
    y64 = y.astype(np.float64)
    nan, inf = int(np.isnan(y64).sum()), int(np.isinf(y64).sum())
    with np.errstate(invalid="ignore"):
        below = int(np.sum(y64 < 0))
        above = int(np.sum(y64 > 1))
    details: dict[str, Any] = {"law": law, "nan": nan, "inf": inf, "below_0": below,
                               "above_1": above,
                               "min": float(np.nanmin(y64)) if y.size and nan < y.size else None,
                               "max": float(np.nanmax(y64)) if y.size and nan < y.size else None}
    if axis is not None:
        length = y.shape[axis]
        atol = length * u
        sums = y64.sum(axis=axis, keepdims=True)
        ones = np.ones_like(sums)
        dev = np.abs(sums - 1.0)
        with np.errstate(invalid="ignore"):
            bad_rows = int(np.sum(dev > atol + rtol))  # rows with NaN count as non-finite
        details.update(row_length=length, rows=int(sums.size), bad_rows=bad_rows,
                       nonfinite_rows=int(np.sum(~np.isfinite(sums))),
                       max_row_deviation=float(np.nanmax(dev)) if np.isfinite(dev).any()
                       else math.nan)
        actual, reference = sums, ones
    else:
        atol, bad_rows = 0.0, 0
        actual, reference = y64, np.clip(y64, 0.0, 1.0)
    cmp = compare(actual, reference, rtol, atol, unit=y.dtype)
    problems = []
    if nan or inf:
        problems.append(f"{nan + inf} non-finite value(s) (NaN {nan}, inf {inf})")
    if below or above:
        problems.append(f"{below + above} value(s) outside [0, 1] (min {details['min']:.9g}, "
                        f"max {details['max']:.9g})")
    if bad_rows:
        problems.append(f"row sum deviates from 1 by max {_fmt(details['max_row_deviation'])}"
                        f" > tol {_fmt(atol + rtol)} in {bad_rows} of {details['rows']} rows")
    if problems:
        return LawResult(law, CONTRACT_ISSUE, f"{law}: " + "; ".join(problems), rtol, atol,
                         actual, reference, cmp, details)
    what = "finite, within [0, 1]"
    if axis is not None:
        what += (f", row sums within {_fmt(atol + rtol)} of 1 (max deviation "
                 f"{_fmt(details['max_row_deviation'])})")
    return LawResult(law, PASSED, f"{law}: {what}", rtol, atol, actual, reference, cmp, details)


# ---------------------------------------------------------------- masked rows

def masked_rows_law(y: np.ndarray, keep: np.ndarray, axis: int, rtol: float) -> LawResult:
    """Masked keys get exactly 0, a fully masked row is exactly zero, and every row with a
    kept key is a probability row."""
    y = np.asarray(y)
    y64 = y.astype(np.float64)
    keep = np.broadcast_to(np.asarray(keep, dtype=bool), y.shape)
    full_masked = ~keep.any(axis=axis, keepdims=True)
    demanded = np.where(keep, y64, 0.0)
    rows_total = int(full_masked.size)
    n_masked_rows = int(full_masked.sum())
    masked_row_cells = np.broadcast_to(full_masked, y.shape)
    bad_masked_rows = int(np.sum(np.any((y64 != 0) & masked_row_cells, axis=axis)))
    nan_masked = int(np.sum(np.isnan(y64) & masked_row_cells))
    leaked = int(np.sum((y64 != 0) & ~keep & ~masked_row_cells))
    live = ~np.broadcast_to(full_masked, y.shape)
    u = unit_roundoff(y.dtype)
    length = y.shape[axis]
    atol = length * u
    sums = np.where(full_masked, 1.0, np.where(live, y64, 0.0).sum(axis=axis, keepdims=True))
    dev = np.abs(sums - 1.0)
    with np.errstate(invalid="ignore"):
        bad_live = int(np.sum(dev > atol + rtol))  # NaN rows are counted as non-finite
    nonfinite_live = int(np.sum(~np.isfinite(y64) & live))
    cmp = compare(y64, demanded, 0.0, 0.0, unit=y.dtype)
    details = {"law": "masked_rows", "rows": rows_total, "fully_masked_rows": n_masked_rows,
               "nonzero_masked_rows": bad_masked_rows, "nan_in_masked_rows": nan_masked,
               "masked_keys_not_zero": leaked, "live_rows_bad_sum": bad_live,
               "nonfinite_in_live_rows": nonfinite_live}
    problems = []
    if bad_masked_rows:
        worst = float(np.nanmax(np.abs(np.where(masked_row_cells, y64, 0.0)), initial=0.0))
        figures = [f"NaN in {nan_masked} element(s)"] if nan_masked else []
        if worst:
            figures.append(f"max |y| = {_fmt(worst)}")
        problems.append(f"{bad_masked_rows} of {n_masked_rows} fully masked row(s) not exactly "
                        f"zero ({', '.join(figures)})")
    if leaked:
        problems.append(f"{leaked} masked key(s) with non-zero probability")
    if nonfinite_live:
        problems.append(f"{nonfinite_live} non-finite value(s) in rows with kept keys")
    if bad_live:
        problems.append(f"{bad_live} row(s) with kept keys do not sum to 1 within "
                        f"{_fmt(atol + rtol)} (max deviation {_fmt(float(np.nanmax(dev)))})")
    if problems:
        return LawResult("masked_rows", CONTRACT_ISSUE, "masked_rows: " + "; ".join(problems),
                         0.0, 0.0, y64, demanded, cmp, details)
    if not n_masked_rows:
        reason = "masked_rows: no fully masked row in this input; masked keys exactly 0"
    else:
        reason = (f"masked_rows: {n_masked_rows} fully masked row(s) exactly zero, masked keys "
                  "exactly 0, other rows sum to 1")
    return LawResult("masked_rows", PASSED, reason, 0.0, 0.0, y64, demanded, cmp, details)


# ---------------------------------------------------------------- LayerNorm variance

def layernorm_variance_law(x: np.ndarray, y: np.ndarray, epsilon: float,
                           axes: tuple[int, ...], rtol: float, atol: float,
                           scale: np.ndarray | None = None,
                           bias: np.ndarray | None = None) -> LawResult:
    """Var(normalised) ≈ v / (v + ε) per row, v the row's variance of the input (float64).

    The normalised values are recovered from the output as (y − bias) / scale.
    """
    x64 = np.asarray(x, dtype=np.float64)
    z = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        if bias is not None:
            z = z - np.asarray(bias, dtype=np.float64)
        if scale is not None:
            z = z / np.asarray(scale, dtype=np.float64)
        v = x64.var(axis=axes, keepdims=True)
        expected = v / (v + epsilon)
        got = z.var(axis=axes, keepdims=True)
    nonfinite = int(np.sum(~np.isfinite(np.asarray(y, dtype=np.float64))))
    err = np.abs(got - expected)
    bound = atol + rtol * expected
    bad = ~(err <= bound)
    cmp = compare(got, expected, rtol, atol, unit=np.asarray(y).dtype)
    details: dict[str, Any] = {"law": "layernorm_variance", "epsilon": epsilon,
                               "rows": int(expected.size), "bad_rows": int(bad.sum()),
                               "nonfinite_outputs": nonfinite,
                               "row_variance": v.reshape(-1).tolist()[:64],
                               "expected_ratio": expected.reshape(-1).tolist()[:64],
                               "normalised_variance": got.reshape(-1).tolist()[:64]}
    if nonfinite:
        return LawResult("layernorm_variance", CONTRACT_ISSUE,
                         f"layernorm_variance: {nonfinite} non-finite output(s)", rtol, atol,
                         got, expected, cmp, details)
    if bad.any():
        k = int(np.argmax(np.where(bad, err - bound, -np.inf)))
        reason = (f"layernorm_variance: |Var(normalised) − v/(v+ε)| = "
                  f"{_fmt(float(err.flat[k]))} > tol {_fmt(float(bound.flat[k]))} in "
                  f"{int(bad.sum())} of {bad.size} rows (row {k}: v = "
                  f"{float(v.flat[k]):.3g}, Var = {float(got.flat[k]):.6g}, "
                  f"v/(v+ε) = {float(expected.flat[k]):.6g})")
        return LawResult("layernorm_variance", CONTRACT_ISSUE, reason, rtol, atol, got,
                         expected, cmp, details)
    return LawResult("layernorm_variance", PASSED,
                     f"layernorm_variance: Var(normalised) within tol of v/(v+ε) in all "
                     f"{bad.size} rows (max |Δ| = {_fmt(float(err.max(initial=0.0)))})",
                     rtol, atol, got, expected, cmp, details)
