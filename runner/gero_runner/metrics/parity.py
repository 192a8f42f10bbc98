"""Task-aware parity metrics: how far a runtime's output is from a reference, by output kind.

The metrics of the PyTorch-parity seed, for any two tensors (no PyTorch needed here):

- dense / logits: MAE, max diff, relative error % (MAE / mean |reference| × 100) and an
  ``allclose`` verdict at ``|a − r| ≤ atol + rtol·|r|``; logits add top-1 agreement (a figure).
- confidence: confidence MAE and max deviation, judged against ``conf_tol`` alone (the same
  verdict as element-wise rtol=0, atol=conf_tol).
- rotation: geodesic angle in degrees between R_ref and R_act (3×3, or the rotation block of
  3×4 / 4×4 extrinsics); translation: Euclidean distance between 3-vectors.
- keypoints: one-to-one correspondences within ``coord_tol`` found through a k-d tree (SciPy's
  cKDTree when installed, an exact NumPy search otherwise), with match ratio, coordinate MAE /
  max over matched pairs and confidence deviation.

``evaluate_output`` dispatches on the kind and returns every figure plus a verdict with the
reasons it failed; callers (``gero parity``, user models with ``--output-kind``) turn that
into a result class. NaN never passes: any NaN makes the verdict non-finite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from gero_runner.errors import GeroError

DENSE: Final = "dense"
CONFIDENCE: Final = "confidence"
ROTATION: Final = "rotation"
TRANSLATION: Final = "translation"
KEYPOINTS: Final = "keypoints"
LOGITS: Final = "logits"
OUTPUT_KINDS: Final = (DENSE, CONFIDENCE, ROTATION, TRANSLATION, KEYPOINTS, LOGITS)

_KD_CHUNK = 1024
"""Rows per block of the NumPy fallback's distance matrix (bounds its memory)."""


@dataclass(frozen=True)
class ParityTolerances:
    """The stated tolerances of a parity check (``gero parity``'s defaults unless its
    --rtol, --atol, --coord-tol or --conf-tol say otherwise)."""

    rtol: float = 1e-3
    atol: float = 1e-4
    coord_tol: float = 1e-2
    """Radius (in coordinate units, e.g. pixels) within which two keypoints correspond."""
    conf_tol: float = 1e-2
    """Largest allowed |Δ confidence| (confidence outputs and matched keypoints)."""

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "coord_tol", "conf_tol"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value >= 0 and math.isfinite(value)):
                raise GeroError(f"{name} must be a finite non-negative number, got {value!r}")


def parse_output_kinds(items: Iterable[str]) -> dict[str, str]:
    """``["depth=dense", "R=rotation"]`` -> ``{"depth": "dense", "R": "rotation"}``."""
    kinds: dict[str, str] = {}
    for item in items:
        name, sep, kind = item.partition("=")
        name, kind = name.strip(), kind.strip()
        if not sep or not name:
            raise GeroError(f"bad output kind {item!r}: expected NAME=KIND with KIND in "
                            f"{'|'.join(OUTPUT_KINDS)}")
        if kind not in OUTPUT_KINDS:
            raise GeroError(f"unknown output kind {kind!r} in {item!r}; choose from "
                            f"{', '.join(OUTPUT_KINDS)}")
        if name in kinds and kinds[name] != kind:
            raise GeroError(f"output {name!r} given two kinds: {kinds[name]} and {kind}")
        kinds[name] = kind
    return kinds


# --- dense ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DenseMetrics:
    """The dense figures (MAE, max diff, relative error %), over finite pairs; NaN counts kept
    apart."""

    element_count: int
    mae: float
    max_diff: float
    relative_error_pct: float
    """MAE / mean |reference| × 100; 0 when both are 0, inf when only the reference is 0."""
    mean_abs_reference: float
    allclose: bool
    """Every element within atol + rtol·|r|; NaN anywhere fails, equal infinities match."""
    nan_reference: int
    nan_actual: int


def _check_shapes(reference: np.ndarray, actual: np.ndarray, what: str) -> None:
    if reference.shape != actual.shape:
        raise GeroError(f"{what}: shapes differ, reference {list(reference.shape)} vs "
                        f"actual {list(actual.shape)}")


def _f64(x: Any) -> np.ndarray:
    array = np.asarray(x)
    if array.dtype.kind not in "fiub":
        raise GeroError(f"cannot compute parity metrics on dtype {array.dtype}")
    return array.astype(np.float64)


def dense_metrics(reference: Any, actual: Any, rtol: float, atol: float) -> DenseMetrics:
    """MAE, max diff, relative error % and the allclose verdict of ``actual`` vs ``reference``."""
    r, a = _f64(reference), _f64(actual)
    _check_shapes(r, a, "dense metrics")
    nan_r, nan_a = int(np.isnan(r).sum()), int(np.isnan(a).sum())
    if r.size == 0:
        return DenseMetrics(0, 0.0, 0.0, 0.0, 0.0, True, 0, 0)
    finite = np.isfinite(r) & np.isfinite(a)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a[finite] - r[finite])
    mae = float(diff.mean()) if diff.size else math.nan
    max_diff = float(diff.max()) if diff.size else math.nan
    mean_ref = float(np.abs(r[finite]).mean()) if diff.size else math.nan
    if mean_ref > 0:
        rel = mae / mean_ref * 100.0
    elif diff.size:
        rel = 0.0 if mae == 0 else math.inf
    else:
        rel = math.nan
    ok = bool(np.allclose(a, r, rtol=rtol, atol=atol, equal_nan=False))
    return DenseMetrics(int(r.size), mae, max_diff, rel, mean_ref, ok, nan_r, nan_a)


def top1_agreement(reference: Any, actual: Any) -> float:
    """Fraction of rows (over the last axis) whose argmax is the same on both sides."""
    r, a = _f64(reference), _f64(actual)
    _check_shapes(r, a, "top-1 agreement")
    if r.ndim == 0 or r.shape[-1] == 0:
        return 1.0
    rows = r.reshape(-1, r.shape[-1])
    if rows.shape[0] == 0:
        return 1.0
    same = np.argmax(rows, axis=-1) == np.argmax(a.reshape(rows.shape), axis=-1)
    return float(same.mean())


# --- confidence -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfidenceMetrics:
    element_count: int
    conf_mae: float
    conf_max_diff: float


def confidence_metrics(reference: Any, actual: Any) -> ConfidenceMetrics:
    """Conf MAE = mean |c_ref − c_act| (and its max) over finite pairs."""
    r, a = _f64(reference), _f64(actual)
    _check_shapes(r, a, "confidence metrics")
    finite = np.isfinite(r) & np.isfinite(a)
    diff = np.abs(a[finite] - r[finite])
    if r.size == 0:
        return ConfidenceMetrics(0, 0.0, 0.0)
    if not diff.size:
        return ConfidenceMetrics(int(r.size), math.nan, math.nan)
    return ConfidenceMetrics(int(r.size), float(diff.mean()), float(diff.max()))


# --- pose -----------------------------------------------------------------------------------


def _rotation_block(x: np.ndarray, what: str) -> np.ndarray:
    if x.ndim < 2 or x.shape[-2:] not in ((3, 3), (3, 4), (4, 4)):
        raise GeroError(f"{what}: expected rotations of shape (..., 3, 3) or extrinsics "
                        f"(..., 3, 4) / (..., 4, 4), got {list(x.shape)}")
    return x[..., :3, :3]


def rotation_errors_deg(reference: Any, actual: Any) -> np.ndarray:
    """Geodesic angle in degrees between each pair of rotations, shape (...)

    θ = arccos((tr(R_ref R_actᵀ) − 1) / 2), evaluated as atan2(sin θ, cos θ) with
    sin θ = |vee(M − Mᵀ)| / 2: the same angle for rotation matrices, but exact near 0°
    where arccos loses half the digits (arccos(1 − ε) ≈ √(2ε)).
    """
    r = _rotation_block(_f64(reference), "rotation error")
    a = _rotation_block(_f64(actual), "rotation error")
    _check_shapes(r, a, "rotation error")
    m = r @ np.swapaxes(a, -1, -2)
    cos = (np.trace(m, axis1=-2, axis2=-1) - 1.0) / 2.0
    skew = np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                     m[..., 1, 0] - m[..., 0, 1]], axis=-1)
    sin = np.linalg.norm(skew, axis=-1) / 2.0
    angles: np.ndarray = np.degrees(np.arctan2(sin, cos))
    return angles


def translation_errors(reference: Any, actual: Any) -> np.ndarray:
    """Euclidean distance ‖t_ref − t_act‖₂ over the last axis (size 3), shape (...)."""
    r, a = _f64(reference), _f64(actual)
    if r.ndim < 1 or r.shape[-1] != 3:
        raise GeroError(f"translation error: expected vectors of shape (..., 3), "
                        f"got {list(r.shape)}")
    _check_shapes(r, a, "translation error")
    distances: np.ndarray = np.linalg.norm(a - r, axis=-1)
    return distances


@dataclass(frozen=True)
class PoseMetrics:
    count: int
    mean: float
    max: float


def _pose_summary(errors: np.ndarray) -> PoseMetrics:
    flat = errors.reshape(-1)
    if flat.size == 0:
        return PoseMetrics(0, 0.0, 0.0)
    if np.isnan(flat).any():
        return PoseMetrics(int(flat.size), math.nan, math.nan)
    return PoseMetrics(int(flat.size), float(flat.mean()), float(flat.max()))


def rotation_metrics(reference: Any, actual: Any) -> PoseMetrics:
    """Mean and max geodesic rotation error in degrees."""
    return _pose_summary(rotation_errors_deg(reference, actual))


def translation_metrics(reference: Any, actual: Any) -> PoseMetrics:
    """Mean and max translation error (units of the translation)."""
    return _pose_summary(translation_errors(reference, actual))


# --- keypoints ------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeypointMetrics:
    """Correspondence of two point sets within a radius.

    ``count_ratio`` is ``min(N_ref, N_act) / max(N_ref, N_act)``; ``match_ratio``
    is the stricter ``matched / max(N_ref, N_act)``: it is 1 only when every point has a
    one-to-one partner within ``coord_tol``, so a shifted point lowers it even when counts agree.
    """

    n_reference: int
    n_actual: int
    matched: int
    count_ratio: float
    match_ratio: float
    coord_mae: float
    """Mean |Δ coordinate| over matched pairs (all coordinate components)."""
    coord_max: float
    conf_mae: float
    """Mean |Δ confidence| over matched pairs (NaN when no confidences were given)."""
    conf_max: float
    search: str
    """"scipy.cKDTree" or "numpy" (the fallback used when SciPy is absent)."""
    pairs: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(
        (0, 2), dtype=np.int64))
    """Matched (reference index, actual index) pairs, by increasing distance."""


def _points(x: Any, what: str) -> np.ndarray:
    p = _f64(x)
    if p.ndim == 1:
        p = p.reshape(-1, 1) if p.size else p.reshape(0, 1)
    if p.ndim != 2:
        raise GeroError(f"{what}: expected points of shape (N, D), got {list(p.shape)}")
    return p


def candidate_pairs(reference: np.ndarray, actual: np.ndarray,
                    radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Every (i, j) with ‖ref_i − act_j‖₂ ≤ radius, and the distances; non-finite rows skipped."""
    ri = np.flatnonzero(np.isfinite(reference).all(axis=1))
    ai = np.flatnonzero(np.isfinite(actual).all(axis=1))
    empty = np.zeros(0, dtype=np.int64)
    try:
        from scipy.spatial import cKDTree
    except ImportError:
        cKDTree = None  # the NumPy search below is exact, only slower
    if ri.size == 0 or ai.size == 0:
        return empty, empty, np.zeros(0), "scipy.cKDTree" if cKDTree else "numpy"
    if cKDTree is not None:
        tree_r, tree_a = cKDTree(reference[ri]), cKDTree(actual[ai])
        # "ndarray" output keeps zero distances (a sparse matrix would drop them).
        hits = tree_r.sparse_distance_matrix(tree_a, radius, output_type="ndarray")
        return (ri[hits["i"].astype(np.int64)], ai[hits["j"].astype(np.int64)],
                hits["v"].astype(np.float64), "scipy.cKDTree")
    rows, cols, dists = [], [], []
    act = actual[ai]
    for start in range(0, ri.size, _KD_CHUNK):
        block = reference[ri[start:start + _KD_CHUNK]]
        d = np.sqrt(((block[:, None, :] - act[None, :, :]) ** 2).sum(axis=-1))
        i, j = np.nonzero(d <= radius)
        rows.append(ri[start + i])
        cols.append(ai[j])
        dists.append(d[i, j])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(dists), "numpy"


def match_points(reference: Any, actual: Any, radius: float) -> tuple[np.ndarray, str]:
    """One-to-one correspondences within ``radius``: greedy by increasing distance.

    Greedy nearest-first is optimal whenever points are farther apart than 2·radius (the
    parity case: tolerance far below point spacing); ties break by index, so it is stable.
    """
    r, a = _points(reference, "keypoints"), _points(actual, "keypoints")
    if r.shape[1] != a.shape[1]:
        raise GeroError(f"keypoints: coordinate dimensions differ, reference {r.shape[1]} vs "
                        f"actual {a.shape[1]}")
    i, j, d, search = candidate_pairs(r, a, radius)
    order = np.lexsort((j, i, d))
    used_r: set[int] = set()
    used_a: set[int] = set()
    pairs = []
    for k in order:
        ii, jj = int(i[k]), int(j[k])
        if ii in used_r or jj in used_a:
            continue
        used_r.add(ii)
        used_a.add(jj)
        pairs.append((ii, jj))
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2), search


def keypoint_metrics(reference: Any, actual: Any, coord_tol: float,
                     reference_conf: Any = None, actual_conf: Any = None) -> KeypointMetrics:
    """Match ``reference`` (N, D) against ``actual`` (M, D) within ``coord_tol``; D = 2 or 4
    for (x, y) or (x0, y0, x1, y1). Confidences, when given, are (N,) and (M,)."""
    r, a = _points(reference, "keypoints"), _points(actual, "keypoints")
    pairs, search = match_points(r, a, coord_tol)
    n_r, n_a = r.shape[0], a.shape[0]
    big = max(n_r, n_a)
    count_ratio = 1.0 if big == 0 else min(n_r, n_a) / big
    match_ratio = 1.0 if big == 0 else len(pairs) / big
    if len(pairs):
        delta = np.abs(r[pairs[:, 0]] - a[pairs[:, 1]])
        coord_mae, coord_max = float(delta.mean()), float(delta.max())
    else:
        coord_mae = coord_max = math.nan if big else 0.0
    conf_mae = conf_max = math.nan
    if reference_conf is not None and actual_conf is not None:
        rc = _f64(reference_conf).reshape(-1)
        ac = _f64(actual_conf).reshape(-1)
        if rc.size != n_r or ac.size != n_a:
            raise GeroError(f"keypoint confidences: expected {n_r} and {n_a} values, got "
                            f"{rc.size} and {ac.size}")
        if len(pairs):
            dc = np.abs(rc[pairs[:, 0]] - ac[pairs[:, 1]])
            conf_mae, conf_max = float(dc.mean()), float(dc.max())
        elif not big:
            conf_mae = conf_max = 0.0
    return KeypointMetrics(n_r, n_a, len(pairs), count_ratio, match_ratio, coord_mae,
                           coord_max, conf_mae, conf_max, search, pairs)


# --- one output, any kind -------------------------------------------------------------------


@dataclass(frozen=True)
class OutputVerdict:
    """Every figure of one output's comparison, and whether it is within the tolerances."""

    kind: str
    figures: dict[str, Any]
    """JSON-ready numbers (NaN/inf kept as floats), for an observation's ``details``."""
    failures: list[str]
    """One sentence per violated tolerance, naming the figure and the bound."""
    nonfinite: str = ""
    """Non-empty when NaN appears on either side: the verdict cannot be assessed."""

    @property
    def passed(self) -> bool:
        return not self.failures and not self.nonfinite


def _nan_note(r: np.ndarray, a: np.ndarray) -> str:
    nr = int(np.isnan(r).sum()) if r.dtype.kind == "f" else 0
    na = int(np.isnan(a).sum()) if a.dtype.kind == "f" else 0
    if not (nr or na):
        return ""
    return f"NaN in the output: {nr} in the reference, {na} in the actual of {r.size} elements"


def evaluate_output(kind: str, reference: Any, actual: Any, tol: ParityTolerances,
                    reference_conf: Any = None, actual_conf: Any = None) -> OutputVerdict:
    """Figures and verdict of one output of ``kind`` (see OUTPUT_KINDS).

    Every kind also reports the dense figures (MAE, max diff, relative error %, allclose) so
    rows stay comparable across kinds. Keypoints accept (N, D) or batched (B, N, D) sets,
    matched per batch item; their confidences (same leading shape) are optional.
    Shapes must agree except for keypoint counts; a mismatch raises GeroError.
    """
    if kind not in OUTPUT_KINDS:
        raise GeroError(f"unknown output kind {kind!r}; choose from {', '.join(OUTPUT_KINDS)}")
    r, a = np.asarray(reference), np.asarray(actual)
    figures: dict[str, Any] = {"kind": kind}
    failures: list[str] = []
    nonfinite = _nan_note(r, a)
    if kind == KEYPOINTS:
        _keypoints(r, a, tol, reference_conf, actual_conf, figures, failures)
        return OutputVerdict(kind, figures, failures, nonfinite)

    dense = dense_metrics(r, a, tol.rtol, tol.atol)
    figures.update(mae=dense.mae, max_diff=dense.max_diff,
                   relative_error_pct=dense.relative_error_pct,
                   mean_abs_reference=dense.mean_abs_reference, allclose=dense.allclose,
                   rtol=tol.rtol, atol=tol.atol)
    if kind == CONFIDENCE:
        conf = confidence_metrics(r, a)
        figures.update(conf_mae=conf.conf_mae, conf_max_diff=conf.conf_max_diff,
                       conf_tol=tol.conf_tol)
        if not conf.conf_max_diff <= tol.conf_tol and not nonfinite:
            failures.append(f"confidence max |Δ| {conf.conf_max_diff:.3g} > conf_tol "
                            f"{tol.conf_tol:g} (conf MAE {conf.conf_mae:.3g})")
        return OutputVerdict(kind, figures, failures, nonfinite)
    if kind == ROTATION:
        rot = rotation_metrics(r, a)
        figures.update(rotation_error_deg_mean=rot.mean, rotation_error_deg_max=rot.max,
                       rotations=rot.count)
    elif kind == TRANSLATION:
        tr = translation_metrics(r, a)
        figures.update(translation_error_mean=tr.mean, translation_error_max=tr.max,
                       translations=tr.count)
    elif kind == LOGITS:
        # A figure, not a second verdict: the verdict stays element-wise (allclose), so the
        # row's class is what `gero replay` recomputes from its rtol/atol.
        figures["top1_agreement"] = top1_agreement(r, a)
    if not dense.allclose and not nonfinite:
        extra = ""
        if kind == ROTATION:
            extra = f", geodesic error up to {figures['rotation_error_deg_max']:.3g}°"
        elif kind == TRANSLATION:
            extra = f", translation error up to {figures['translation_error_max']:.3g}"
        elif kind == LOGITS:
            extra = f", top-1 agreement {figures['top1_agreement']:.1%}"
        failures.insert(0, f"not allclose at rtol={tol.rtol:g}, atol={tol.atol:g}: MAE "
                           f"{dense.mae:.3g}, max diff {dense.max_diff:.3g}, relative error "
                           f"{dense.relative_error_pct:.3g}%{extra}")
    return OutputVerdict(kind, figures, failures, nonfinite)


def _keypoints(r: np.ndarray, a: np.ndarray, tol: ParityTolerances, rc: Any, ac: Any,
               figures: dict[str, Any], failures: list[str]) -> None:
    if r.ndim == 3 and a.ndim == 3 and r.shape[0] == a.shape[0]:
        sets = [(r[b], a[b], None if rc is None else np.asarray(rc)[b],
                 None if ac is None else np.asarray(ac)[b]) for b in range(r.shape[0])]
    elif r.ndim <= 2 and a.ndim <= 2:
        sets = [(r, a, rc, ac)]
    else:
        raise GeroError(f"keypoints: expected (N, D) or (B, N, D) on both sides, got "
                        f"{list(r.shape)} and {list(a.shape)}")
    per_set = [keypoint_metrics(sr, sa, tol.coord_tol, src, sac) for sr, sa, src, sac in sets]
    n_r = sum(m.n_reference for m in per_set)
    n_a = sum(m.n_actual for m in per_set)
    matched = sum(m.matched for m in per_set)
    big = sum(max(m.n_reference, m.n_actual) for m in per_set)
    small = sum(min(m.n_reference, m.n_actual) for m in per_set)
    match_ratio = 1.0 if big == 0 else matched / big
    coord_mae = _weighted([(m.coord_mae, m.matched) for m in per_set])
    conf_mae = _weighted([(m.conf_mae, m.matched) for m in per_set])
    coord_max = _nanmax([m.coord_max for m in per_set])
    conf_max = _nanmax([m.conf_max for m in per_set])
    figures.update(n_reference=n_r, n_actual=n_a, matched=matched,
                   count_ratio=1.0 if big == 0 else small / big, match_ratio=match_ratio,
                   coord_mae=coord_mae, coord_max=coord_max, conf_mae=conf_mae,
                   conf_max=conf_max, coord_tol=tol.coord_tol, conf_tol=tol.conf_tol,
                   search=per_set[0].search if per_set else "-")
    if match_ratio < 1.0:
        failures.append(f"match ratio {match_ratio:.4g} < 1: {matched} of {big} keypoints have "
                        f"a partner within coord_tol {tol.coord_tol:g} "
                        f"({n_r} reference, {n_a} actual)")
    if conf_max > tol.conf_tol:
        failures.append(f"keypoint confidence max |Δ| {conf_max:.3g} > conf_tol "
                        f"{tol.conf_tol:g}")


def _weighted(values: list[tuple[float, int]]) -> float:
    total = sum(n for v, n in values if n and not math.isnan(v))
    if not total:
        return math.nan
    return sum(v * n for v, n in values if n and not math.isnan(v)) / total


def _nanmax(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else math.nan
