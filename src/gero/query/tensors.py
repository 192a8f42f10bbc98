"""An observation's tensors read from its evidence directory, and their element-wise picture.

Headless and runner-free at run time: arrays are read with ``load_array`` (no pickles) from
the directory ``resolve_artifact`` allows (never outside the data root). The figures here are
per element (a histogram, the worst elements, the masks the side-by-side view marks); the
per-observation figures the runner measured are never recomputed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.errors import ArtifactError
from gero_runner.metrics.compare import ulp_distance
from gero_runner.storage.artifacts import has_member, load_array, resolve_artifact

EXACT_DIR = "outputs/numpy-float64-exact"
WORST_COUNT = 20
_OUTPUT_INDEX = re.compile(r"output_(\d+)\.npy$")


@dataclass(frozen=True)
class Evidence:
    """The two compared tensors of one observation (and the float64 value where kept)."""

    directory: Path
    actual: np.ndarray
    reference: np.ndarray
    exact: np.ndarray | None
    actual_file: str
    reference_file: str
    rtol: float
    atol: float


@dataclass(frozen=True)
class Bin:
    """One histogram bar: ``label`` covers values in [low, high)."""

    label: str
    low: float
    high: float
    count: int
    log10_low: float = -math.inf
    """log10 of ``low`` for decade bins (exact even where 10**low underflows to 0)."""


@dataclass(frozen=True)
class WorstElement:
    index: tuple[int, ...]
    actual: float
    reference: float
    exact: float | None
    abs_error: float
    ulp: float
    within: bool


@dataclass(frozen=True)
class ElementAnalysis:
    """The element-wise picture of one comparison, under the tolerance the runner used.

    Only figures are kept (no tensor-sized masks): the side-by-side view asks
    :func:`element_status` for the few cells it shows.
    """

    element_count: int
    zero_error: int
    """Finite pairs with |a − r| = 0 (no bar on a log scale)."""
    abs_bins: tuple[Bin, ...]
    """log10 |a − r| by decade over finite pairs with a non-zero difference."""
    ulp_bins: tuple[Bin, ...]
    """ULP distance over finite pairs: 0, 1, then by decade."""
    tolerance_log10: float
    """log10 of the bound atol + rtol·median|r| (median over ≤ 65,536 evenly strided
    elements): where the tolerance line is drawn."""
    out_of_tolerance: int
    nan_mismatch: int
    """Positions with NaN on either side (never a pass)."""
    inf_mismatch: int
    """Positions with ±inf on either side that are not the same infinity."""
    worst: tuple[WorstElement, ...]
    worst_excess: tuple[int, ...] | None = None
    """The element furthest outside its tolerance (|a − r| − (atol + rtol·|r|), a
    non-finite mismatch first); None when every element is within. Not always the
    largest |a − r|: that one can be inside a tolerance that grows with |r|."""


@dataclass(frozen=True)
class CaseInput:
    """One input tensor of an observation's case, as the runner fed it to every path."""

    name: str
    array: np.ndarray
    file: str


def load_inputs(data_root: Path, row: dict[str, Any]) -> tuple[CaseInput, ...]:
    """Every input tensor of the row's case (from its evidence directory's case.json), in
    the model's order. ArtifactError when the directory or a tensor is missing or unsafe."""
    import json

    artifact = row.get("artifact_path") or ""
    if not artifact:
        raise ArtifactError("this observation kept no evidence directory: no inputs to show")
    directory = resolve_artifact(data_root, artifact)
    record_path = directory / "case.json"
    try:
        record = json.loads(record_path.read_text())
        files = dict(record["inputs"])
    except FileNotFoundError as e:
        raise ArtifactError(f"{record_path} is missing: no inputs recorded") from e
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{record_path}: no inputs recorded ({e})") from e
    return tuple(CaseInput(str(name), load_array(directory, str(rel)), str(rel))
                 for name, rel in files.items())


def output_index(relative: str) -> int | None:
    match = _OUTPUT_INDEX.search(relative)
    return int(match.group(1)) if match else None


def load_evidence(data_root: Path, row: dict[str, Any]) -> Evidence:
    """Load the actual and reference tensors of an observation row (and its float64 value).

    Raises ArtifactError with the path when the evidence is missing, unreadable or unsafe.
    """
    artifact = row.get("artifact_path") or ""
    actual_file = row.get("actual_file") or ""
    reference_file = row.get("reference_file") or ""
    if not artifact or not actual_file or not reference_file:
        raise ArtifactError(_no_pair(row, artifact, actual_file, reference_file))
    directory = resolve_artifact(data_root, artifact)
    if not directory.is_dir():
        raise ArtifactError(f"evidence directory {directory} is missing")
    actual = load_array(directory, actual_file)
    reference = load_array(directory, reference_file)
    return Evidence(directory, actual, reference, _exact(directory, actual_file, actual),
                    actual_file, reference_file, _number(row.get("rtol")),
                    _number(row.get("atol")))


def _no_pair(row: dict[str, Any], artifact: str, actual_file: str, reference_file: str) -> str:
    """Why a row has no two tensors to take differences of, from what it kept: one output
    (a law over repeated runs, which compares output hashes: nothing failed), or none (a
    path failed, or ran out of time, before producing output)."""
    files = (f"artifact_path={artifact!r}, actual_file={actual_file!r}, "
             f"reference_file={reference_file!r}")
    if artifact and actual_file:
        check = row.get("check") or "its check"
        against = f" against {row['reference']}" if row.get("reference") else ""
        return (f"this observation keeps one output, not a pair: {check}{against} compares "
                f"output hashes, not elements, so there is no difference to draw ({files})")
    return f"this observation kept no tensors (a path failed before producing output): {files}"


def _exact(directory: Path, actual_file: str, actual: np.ndarray) -> np.ndarray | None:
    index = output_index(actual_file)
    if index is None:
        return None
    if not has_member(directory, f"{EXACT_DIR}/output_{index}.npy"):
        return None
    exact = load_array(directory, f"{EXACT_DIR}/output_{index}.npy")
    return exact if exact.shape == actual.shape else None


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else number


def _float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind not in "fiub":
        raise ArtifactError(f"cannot compare tensors of dtype {x.dtype}")
    return x.astype(np.float64, copy=False)


def element_status(actual: np.ndarray, reference: np.ndarray, atol: float, rtol: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|a − r| in float64 with NaN where a pair is not finite, outside tolerance, either side
    non-finite) for two same-shaped arrays: the runner's policy (NaN never matches, equal
    infinities do). Meant for the cells on screen; :func:`analyse` counts the whole tensor."""
    a, r = _float64(np.asarray(actual)), _float64(np.asarray(reference))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - r)
        finite = np.isfinite(a) & np.isfinite(r)
        same_inf = ~finite & (a == r)  # NaN == NaN is False
        diff = np.where(finite, diff, np.nan)
        mismatch = np.where(finite, diff > atol + rtol * np.abs(r), ~same_inf)
    return diff, mismatch, ~finite


def element_ulp(actual: Any, reference: Any) -> float:
    """The ULP distance of one pair of float elements, in ``actual``'s dtype: the runner's
    ``ulp_distance``, which the side-by-side view shows for the element under its cursor."""
    return float(ulp_distance(np.asarray(actual), np.asarray(reference))[()])


def analyse(evidence: Evidence, worst_count: int = WORST_COUNT) -> ElementAnalysis:
    """Histogram, counts and worst elements of actual against reference (same policy as the
    runner: NaN never matches, equal infinities do).

    Written for 10^6+ elements: a handful of whole-tensor NumPy passes, and none of the
    non-finite bookkeeping when every difference is finite (the common case).
    """
    a_raw, r_raw = evidence.actual, evidence.reference
    if a_raw.shape != r_raw.shape:
        raise ArtifactError(
            f"actual shape {list(a_raw.shape)} differs from reference {list(r_raw.shape)}: "
            "no element-wise comparison"
        )
    a, r = _float64(a_raw).reshape(-1), _float64(r_raw).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - r)
    abs_r = np.abs(r)
    finite: np.ndarray | None = None  # None: every pair is finite
    nan_mismatch = inf_mismatch = 0
    score = diff  # what ranks the worst elements
    if not np.isfinite(diff).all():
        # A non-finite difference has a non-finite side (or, for float64, an overflow).
        finite = np.isfinite(a) & np.isfinite(r)
        nonfinite = ~finite
        either_nan = np.isnan(a) | np.isnan(r)
        same_inf = nonfinite & ~either_nan & (a == r)
        nan_mismatch = int(np.count_nonzero(either_nan))
        inf_mismatch = int(np.count_nonzero(nonfinite & ~either_nan & ~same_inf))
        diff[nonfinite] = np.nan
        # Non-finite mismatches rank above every finite error; equal infinities not at all.
        score = np.where(nonfinite, np.where(same_inf, -1.0, np.inf), diff)
    with np.errstate(invalid="ignore"):
        over = diff > evidence.atol + evidence.rtol * abs_r  # NaN compares False
    out_of_tolerance = int(np.count_nonzero(over)) + nan_mismatch + inf_mismatch

    zero = int(np.count_nonzero(diff == 0))
    positive = diff[diff > 0]
    if finite is not None:
        positive = positive[np.isfinite(positive)]
    median_r = _median(abs_r if finite is None else abs_r[np.isfinite(r)])
    tol = evidence.atol + evidence.rtol * median_r
    tol_log10 = math.log10(tol) if tol > 0 else -math.inf
    ulp = _ulp(a_raw.reshape(-1), r_raw.reshape(-1), diff)
    worst_excess = None
    if out_of_tolerance:
        with np.errstate(invalid="ignore", over="ignore"):
            excess = diff - (evidence.atol + evidence.rtol * abs_r)
        if finite is not None:
            excess = np.where(score == np.inf, np.inf, excess)
        excess = np.where(np.isnan(excess), -np.inf, excess)
        k = int(np.argmax(excess))
        shape = evidence.actual.shape
        worst_excess = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else ()
    return ElementAnalysis(
        worst_excess=worst_excess,
        element_count=int(a.size),
        zero_error=zero,
        abs_bins=_decade_bins(positive, tol_log10),
        ulp_bins=_ulp_bins(ulp if finite is None else ulp[finite]),
        tolerance_log10=tol_log10,
        out_of_tolerance=out_of_tolerance,
        nan_mismatch=nan_mismatch,
        inf_mismatch=inf_mismatch,
        worst=_worst(evidence, diff, score, over, ulp, worst_count),
    )


_ORDERED_INT: dict[np.dtype[Any], type[np.signedinteger[Any]]] = {
    np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32,
    np.dtype(np.float64): np.int64}


def _ulp(actual: np.ndarray, reference: np.ndarray, diff: np.ndarray) -> np.ndarray:
    """ULP distance in ``actual``'s float dtype (flat; |a − r| for integer tensors), the
    same figures as ``gero_runner.metrics.compare.ulp_distance`` in fewer passes.

    Same sign: the distance is the difference of the raw bit patterns (sign-magnitude).
    Opposite signs (rare) add the two magnitudes. Non-finite pairs are left to the caller.
    """
    int_type = _ORDERED_INT.get(actual.dtype)
    if int_type is None:
        return np.where(np.isnan(diff), 0.0, diff)
    ia = actual.view(int_type)
    ir = reference.astype(actual.dtype, copy=False).view(int_type)
    if int_type is not np.int64:
        ia, ir = ia.astype(np.int64), ir.astype(np.int64)
    with np.errstate(over="ignore"):
        ulp: np.ndarray[Any, np.dtype[np.float64]] = np.abs(ia - ir).astype(np.float64)
    opposite = np.flatnonzero((ia ^ ir) < 0)
    if opposite.size:
        mask = np.iinfo(int_type).max
        ulp[opposite] = ((ia[opposite] & mask).astype(np.float64)
                         + (ir[opposite] & mask).astype(np.float64))
    return ulp


def _median(values: np.ndarray, sample: int = 1 << 16) -> float:
    """Median (of an even stride through at most ``sample`` values: the line is a guide)."""
    if values.size == 0:
        return 0.0
    step = max(1, values.size // sample)
    picked = values[::step]
    half = picked.size // 2
    part = np.partition(picked, [half - 1, half] if picked.size % 2 == 0 else [half])
    return float(part[half] if picked.size % 2 else (part[half - 1] + part[half]) / 2)


def _decade_bins(values: np.ndarray, split: float) -> tuple[Bin, ...]:
    """Bars by decade of ``values`` (all > 0); the decade holding ``split`` is cut there, so
    the tolerance line falls between two bars."""
    if values.size == 0:
        return ()
    logs = np.log10(values)
    decades = np.floor(logs).astype(np.int64)
    low = int(decades.min())
    counts = np.bincount(decades - low)
    edges = [float(low + k) for k in range(counts.size + 1)]
    bins = [(edges[k], edges[k + 1], int(c)) for k, c in enumerate(counts)]
    if math.isfinite(split) and edges[0] < split < edges[-1] and not split.is_integer():
        # Cut the decade that holds the split in two (only its elements are looked at).
        k = math.floor(split) - low
        inside = logs[decades == low + k]
        above = int(np.count_nonzero(inside >= split))
        bins[k:k + 1] = [(edges[k], split, int(inside.size) - above),
                         (split, edges[k + 1], above)]
    return tuple(Bin(_edge_label(lo), 10.0 ** lo, 10.0 ** hi, c, lo) for lo, hi, c in bins)


def _edge_label(log10_value: float) -> str:
    if float(log10_value).is_integer():
        return f"1e{int(log10_value):+d}"
    return f"{10.0 ** log10_value:.1e}"


def _ulp_bins(values: np.ndarray) -> tuple[Bin, ...]:
    """0, 1, then by decade: (1, 10], (10, 100], … (at most ~20 bars even for float64)."""
    if values.size == 0:
        return ()
    bins = [Bin("0", 0.0, 0.0, int(np.count_nonzero(values == 0))),
            Bin("1", 1.0, 1.0, int(np.count_nonzero(values == 1)))]
    rest = values[values > 1]
    if rest.size:
        decades = np.ceil(np.log10(rest)).astype(np.int64)
        counts = np.bincount(decades)
        for k in range(1, counts.size):
            high = 10.0 ** k
            label = f"≤{int(high)}" if k < 5 else f"≤1e{k}"
            bins.append(Bin(label, high / 10, high, int(counts[k])))
    return tuple(bins)


def _worst(evidence: Evidence, diff: np.ndarray, score: np.ndarray, over: np.ndarray,
           ulp: np.ndarray, count: int) -> tuple[WorstElement, ...]:
    """The ``count`` highest ``score`` (|a − r|, +inf for a non-finite mismatch) first; pairs
    that agree are never listed. Every array is flat."""
    n = min(count, score.size)
    if n == 0:
        return ()
    top = np.argpartition(score, score.size - n)[-n:] if n < score.size else np.arange(n)
    top = top[np.argsort(-score[top], kind="stable")]
    top = top[score[top] > 0]
    a = evidence.actual.reshape(-1)
    r = evidence.reference.reshape(-1)
    e = evidence.exact.reshape(-1) if evidence.exact is not None else None
    shape = evidence.actual.shape
    return tuple(
        WorstElement(
            index=tuple(int(i) for i in np.unravel_index(int(k), shape)) if shape else (),
            actual=float(a[k]), reference=float(r[k]),
            exact=float(e[k]) if e is not None else None,
            abs_error=float(diff[k]), ulp=float(ulp[k]),
            within=not (bool(over[k]) or math.isinf(score[k])),
        )
        for k in top
    )
