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
from gero_runner.storage.artifacts import load_array, resolve_artifact, safe_member

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
    """The element-wise picture of one comparison, under the tolerance the runner used."""

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
    diff: np.ndarray
    """|a − r| in float64 (NaN where a pair is not finite), in the tensor's shape."""
    mismatch: np.ndarray
    """Element outside tolerance (non-finite mismatches included), in the tensor's shape."""
    nonfinite: np.ndarray
    """Either side is NaN or ±inf."""


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
        raise ArtifactError(
            "this observation kept no tensors (a path failed before producing output): "
            f"artifact_path={artifact!r}, actual_file={actual_file!r}, "
            f"reference_file={reference_file!r}"
        )
    directory = resolve_artifact(data_root, artifact)
    if not directory.is_dir():
        raise ArtifactError(f"evidence directory {directory} is missing")
    actual = load_array(directory, actual_file)
    reference = load_array(directory, reference_file)
    return Evidence(directory, actual, reference, _exact(directory, actual_file, actual),
                    actual_file, reference_file, _number(row.get("rtol")),
                    _number(row.get("atol")))


def _exact(directory: Path, actual_file: str, actual: np.ndarray) -> np.ndarray | None:
    index = output_index(actual_file)
    if index is None:
        return None
    path = safe_member(directory, f"{EXACT_DIR}/output_{index}.npy")
    if not path.is_file():
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


def analyse(evidence: Evidence, worst_count: int = WORST_COUNT) -> ElementAnalysis:
    """Histogram, counts and worst elements of actual against reference (same policy as the
    runner: NaN never matches, equal infinities do)."""
    a_raw, r_raw = evidence.actual, evidence.reference
    if a_raw.shape != r_raw.shape:
        raise ArtifactError(
            f"actual shape {list(a_raw.shape)} differs from reference {list(r_raw.shape)}: "
            "no element-wise comparison"
        )
    a, r = _float64(a_raw), _float64(r_raw)
    a_nan, r_nan = np.isnan(a), np.isnan(r)
    a_fin, r_fin = np.isfinite(a), np.isfinite(r)
    finite = a_fin & r_fin
    nonfinite = ~finite
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.array(np.abs(a - r), dtype=np.float64, ndmin=0)
    diff[nonfinite] = np.nan
    same_inf = nonfinite & ~a_nan & ~r_nan & (a == r)
    abs_r = np.abs(r)
    with np.errstate(invalid="ignore"):
        bound = evidence.atol + evidence.rtol * abs_r
        mismatch = np.asarray(np.where(finite, diff > bound, ~same_inf))

    finite_diff = diff[finite]
    zero = int(np.count_nonzero(finite_diff == 0))
    positive = finite_diff[finite_diff > 0]
    median_r = _median(abs_r[r_fin])
    tol = evidence.atol + evidence.rtol * median_r
    tol_log10 = math.log10(tol) if tol > 0 else -math.inf
    abs_bins = _decade_bins(positive, tol_log10)
    ulp = ulp_distance(a_raw, r_raw) if a_raw.dtype.kind == "f" else np.where(finite, diff, 0.0)
    ulp_bins = _ulp_bins(ulp[finite])
    return ElementAnalysis(
        element_count=int(a.size),
        zero_error=zero,
        abs_bins=abs_bins,
        ulp_bins=ulp_bins,
        tolerance_log10=tol_log10,
        out_of_tolerance=int(np.count_nonzero(mismatch)),
        nan_mismatch=int(np.count_nonzero(a_nan | r_nan)),
        inf_mismatch=int(np.count_nonzero(nonfinite & ~a_nan & ~r_nan & ~same_inf)),
        worst=_worst(evidence, diff, mismatch, ulp, worst_count),
        diff=diff,
        mismatch=mismatch,
        nonfinite=nonfinite,
    )


def _median(values: np.ndarray, sample: int = 1 << 16) -> float:
    """Median (of an even stride through at most ``sample`` values: the line is a guide)."""
    if values.size == 0:
        return 0.0
    step = max(1, values.size // sample)
    return float(np.median(values[::step]))


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


def _worst(evidence: Evidence, diff: np.ndarray, mismatch: np.ndarray, ulp: np.ndarray,
           count: int) -> tuple[WorstElement, ...]:
    """Largest |a − r| first; non-finite mismatches rank above every finite error."""
    flat_diff = diff.reshape(-1)
    score = np.where(np.isnan(flat_diff), np.inf, flat_diff)
    score = np.where(mismatch.reshape(-1) | (score > 0), score, -1.0)
    n = min(count, score.size)
    if n == 0:
        return ()
    top = np.argpartition(-score, n - 1)[:n] if n < score.size else np.arange(score.size)
    top = top[np.argsort(-score[top], kind="stable")]
    top = top[score[top] > 0]
    a = evidence.actual.reshape(-1)
    r = evidence.reference.reshape(-1)
    e = evidence.exact.reshape(-1) if evidence.exact is not None else None
    u = ulp.reshape(-1)
    m = mismatch.reshape(-1)
    shape = evidence.actual.shape
    return tuple(
        WorstElement(
            index=tuple(int(i) for i in np.unravel_index(int(k), shape)) if shape else (),
            actual=float(a[k]), reference=float(r[k]),
            exact=float(e[k]) if e is not None else None,
            abs_error=float(flat_diff[k]), ulp=float(u[k]), within=not bool(m[k]),
        )
        for k in top
    )
