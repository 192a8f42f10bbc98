"""The parity metric library: dense, confidence, pose and keypoint figures, and verdicts."""

from __future__ import annotations

import math
import sys

import numpy as np
import numpy.typing as npt
import pytest

from gero_runner.errors import GeroError
from gero_runner.metrics.parity import (
    OUTPUT_KINDS,
    ParityTolerances,
    confidence_metrics,
    dense_metrics,
    evaluate_output,
    keypoint_metrics,
    parse_output_kinds,
    rotation_errors_deg,
    rotation_metrics,
    top1_agreement,
    translation_errors,
)


def rot_z(deg: float) -> np.ndarray:
    t = math.radians(deg)
    return np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])


def rot_axis(axis: npt.ArrayLike, deg: float) -> np.ndarray:
    """Rodrigues' formula, written independently of the library."""
    k = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    t = math.radians(deg)
    rotation: np.ndarray = np.eye(3) + math.sin(t) * kx + (1 - math.cos(t)) * kx @ kx
    return rotation


@pytest.fixture(params=["scipy", "numpy"])
def kd_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run keypoint tests with SciPy's cKDTree and with the NumPy fallback (SciPy hidden)."""
    if request.param == "scipy":
        pytest.importorskip("scipy.spatial", reason="SciPy not installed (gero[torch] extra)")
        return "scipy.cKDTree"
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)
    return "numpy"


# --- dense ---


def test_dense_figures_follow_the_seed_formulas() -> None:
    ref = np.array([1.0, -2.0, 4.0, 0.0], dtype=np.float32)
    act = np.array([1.1, -2.0, 3.8, 0.1], dtype=np.float32)
    m = dense_metrics(ref, act, rtol=1e-3, atol=1e-4)
    diff = np.abs(act.astype(np.float64) - ref.astype(np.float64))
    assert m.mae == pytest.approx(diff.mean())
    assert m.max_diff == pytest.approx(0.2, rel=1e-6)
    assert m.mean_abs_reference == pytest.approx(7.0 / 4)
    assert m.relative_error_pct == pytest.approx(diff.mean() / (7.0 / 4) * 100)
    assert not m.allclose
    assert m.element_count == 4


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("values", [[0.0, -0.0], [1e-30, -1e-30], [65504.0, -65504.0],
                                    [np.inf, -np.inf], [1.0, 3.0]])
def test_dense_identical_inputs_pass_with_zero_error(dtype: type, values: list[float]) -> None:
    x: np.ndarray = np.array(values, dtype=dtype)
    m = dense_metrics(x, x.copy(), rtol=0.0, atol=0.0)
    assert m.allclose
    finite = np.isfinite(x)
    if finite.any():
        assert m.mae == 0.0 and m.max_diff == 0.0
        assert m.relative_error_pct == 0.0


def test_dense_relative_error_on_zero_reference() -> None:
    zero = np.zeros(3)
    assert dense_metrics(zero, zero, 1e-3, 1e-4).relative_error_pct == 0.0
    assert dense_metrics(zero, zero + 1e-3, 1e-3, 1e-4).relative_error_pct == math.inf


def test_dense_tolerance_boundary_is_inclusive() -> None:
    ref = np.array([1.0])
    assert dense_metrics(ref, ref + 0.5, rtol=0.25, atol=0.25).allclose
    assert not dense_metrics(ref, ref + 0.5000001, rtol=0.25, atol=0.25).allclose


def test_dense_nan_never_passes() -> None:
    x = np.array([1.0, np.nan])
    m = dense_metrics(x, x.copy(), 1.0, 1.0)
    assert not m.allclose
    assert m.nan_reference == 1 and m.nan_actual == 1
    assert m.mae == 0.0  # over the finite pair


def test_dense_shape_mismatch_is_a_gero_error() -> None:
    with pytest.raises(GeroError, match=r"shapes differ.*\[2\].*\[3\]"):
        dense_metrics(np.zeros(2), np.zeros(3), 1e-3, 1e-4)


def test_top1_agreement() -> None:
    ref = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    act = ref.copy()
    act[1] = [0.2, 0.8]
    assert top1_agreement(ref, act) == 0.75


def test_confidence_metrics() -> None:
    ref = np.array([0.5, 0.9, 0.1])
    act = np.array([0.5, 0.95, 0.07])
    m = confidence_metrics(ref, act)
    assert m.conf_mae == pytest.approx((0.05 + 0.03) / 3)
    assert m.conf_max_diff == pytest.approx(0.05)


# --- pose ---


@pytest.mark.parametrize("deg", [0.0, 1e-6, 1e-3, 0.5, 10.0, 90.0, 179.0, 180.0])
def test_rotation_error_equals_the_rotation_angle(deg: float) -> None:
    axis = np.array([1.0, 2.0, -0.5])
    base = rot_axis([0.3, -1.0, 0.2], 37.0)
    perturbed = rot_axis(axis, deg) @ base
    err = float(rotation_errors_deg(base, perturbed))
    assert err == pytest.approx(deg, abs=1e-9 + 1e-9 * deg)


def test_rotation_error_matches_arccos_formula_away_from_zero() -> None:
    r_pt, r_ort = rot_z(30.0), rot_axis([1, 1, 0], 12.0) @ rot_z(30.0)
    seed = math.degrees(math.acos((np.trace(r_pt @ r_ort.T) - 1) / 2))
    assert float(rotation_errors_deg(r_pt, r_ort)) == pytest.approx(seed, rel=1e-12)


def test_rotation_metrics_batched_and_extrinsics() -> None:
    ref = np.stack([np.eye(3), rot_z(5.0)])
    act = np.stack([rot_z(2.0), rot_z(5.0)])
    m = rotation_metrics(ref, act)
    assert m.count == 2
    assert m.max == pytest.approx(2.0)
    assert m.mean == pytest.approx(1.0)
    pose = np.zeros((3, 4))
    pose[:, :3] = rot_z(7.0)
    assert float(rotation_errors_deg(pose, np.hstack([np.eye(3), np.ones((3, 1))]))) == \
        pytest.approx(7.0)


def test_rotation_rejects_wrong_shape() -> None:
    with pytest.raises(GeroError, match=r"\(\.\.\., 3, 3\)"):
        rotation_errors_deg(np.zeros((2, 4)), np.zeros((2, 4)))


def test_translation_error_is_euclidean() -> None:
    ref = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    act = np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 3.0]])
    np.testing.assert_allclose(translation_errors(ref, act), [5.0, 0.0])
    with pytest.raises(GeroError, match=r"\(\.\.\., 3\)"):
        translation_errors(np.zeros((2, 2)), np.zeros((2, 2)))


# --- keypoints ---


def test_keypoints_identical_sets_match_fully(kd_backend: str) -> None:
    pts = np.random.default_rng(0).uniform(0, 100, size=(50, 4))
    perm = np.random.default_rng(1).permutation(50)
    m = keypoint_metrics(pts, pts[perm], coord_tol=1e-2)
    assert m.search == kd_backend
    assert m.matched == 50 and m.match_ratio == 1.0 and m.count_ratio == 1.0
    assert m.coord_mae == 0.0 and m.coord_max == 0.0
    # every pair found maps a reference point to its permuted copy
    assert (perm[m.pairs[:, 1]] == m.pairs[:, 0]).all()


def test_keypoints_shifted_points_lower_the_match_ratio(kd_backend: str) -> None:
    pts = np.random.default_rng(2).uniform(0, 100, size=(20, 2))
    moved = pts.copy()
    moved[:5] += 0.5  # beyond coord_tol
    moved[5:10] += 0.001  # within coord_tol
    conf_r = np.linspace(0.1, 0.9, 20)
    conf_a = conf_r + 0.002
    m = keypoint_metrics(pts, moved, coord_tol=1e-2, reference_conf=conf_r,
                         actual_conf=conf_a)
    assert m.count_ratio == 1.0
    assert m.matched == 15
    assert m.match_ratio == pytest.approx(0.75)
    assert m.coord_max == pytest.approx(0.001, rel=1e-6)
    assert m.coord_mae == pytest.approx(5 * 2 * 0.001 / (15 * 2), rel=1e-6)
    assert m.conf_mae == pytest.approx(0.002) and m.conf_max == pytest.approx(0.002)


def test_keypoints_count_ratio_follows_the_seed(kd_backend: str) -> None:
    pts = np.arange(20, dtype=np.float64).reshape(10, 2)
    m = keypoint_metrics(pts, pts[:8], coord_tol=1e-2)
    assert m.count_ratio == pytest.approx(0.8)
    assert m.match_ratio == pytest.approx(0.8)
    assert m.matched == 8


def test_keypoints_one_to_one_and_nonfinite_points(kd_backend: str) -> None:
    ref = np.array([[0.0, 0.0], [0.004, 0.0], [np.nan, 1.0]])
    act = np.array([[0.001, 0.0], [50.0, 50.0], [np.nan, 1.0]])
    m = keypoint_metrics(ref, act, coord_tol=1e-2)
    # two reference points are within reach of one actual point: only one may take it
    assert m.matched == 1
    assert m.pairs.tolist() == [[0, 0]]


@pytest.mark.parametrize("n_ref,n_act", [(0, 0), (0, 3), (3, 0)])
def test_keypoints_empty_sets(kd_backend: str, n_ref: int, n_act: int) -> None:
    m = keypoint_metrics(np.ones((n_ref, 2)), np.ones((n_act, 2)), coord_tol=1e-2)
    assert m.matched == 0
    assert m.match_ratio == (1.0 if n_ref == n_act == 0 else 0.0)


def test_keypoints_numpy_fallback_agrees_with_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("scipy.spatial", reason="SciPy not installed (gero[torch] extra)")
    rng = np.random.default_rng(3)
    ref = rng.uniform(0, 10, size=(300, 4))
    act = ref + rng.normal(0, 0.004, size=ref.shape)
    with_scipy = keypoint_metrics(ref, act, coord_tol=1e-2)
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)
    with_numpy = keypoint_metrics(ref, act, coord_tol=1e-2)
    assert with_numpy.search == "numpy" and with_scipy.search == "scipy.cKDTree"
    assert with_numpy.pairs.tolist() == with_scipy.pairs.tolist()
    assert with_numpy.coord_mae == pytest.approx(with_scipy.coord_mae, rel=1e-12)


def test_keypoint_dimension_mismatch() -> None:
    with pytest.raises(GeroError, match="coordinate dimensions differ"):
        keypoint_metrics(np.zeros((3, 2)), np.zeros((3, 4)), 1e-2)


# --- verdicts ---


TOL = ParityTolerances(rtol=1e-3, atol=1e-4, coord_tol=1e-2, conf_tol=1e-2)


@pytest.mark.parametrize("kind", [k for k in OUTPUT_KINDS if k != "keypoints"])
def test_identical_outputs_pass_every_kind(kind: str) -> None:
    x = {"rotation": np.stack([rot_z(10.0), rot_z(20.0)]),
         "translation": np.ones((2, 3))}.get(kind, np.linspace(0.01, 0.99, 12).reshape(3, 4))
    v = evaluate_output(kind, x, x.copy(), TOL)
    assert v.passed, v.failures
    assert v.figures["kind"] == kind and v.figures["mae"] == 0.0


def test_rotation_verdict_names_the_angle() -> None:
    v = evaluate_output("rotation", rot_z(0.0), rot_z(1.0), TOL)
    assert not v.passed
    assert v.figures["rotation_error_deg_max"] == pytest.approx(1.0)
    assert "geodesic error up to 1°" in v.failures[0]


def test_confidence_verdict_uses_conf_tol() -> None:
    ref = np.full(4, 0.5)
    # 0.005 is far outside rtol/atol, but a confidence is judged by conf_tol alone
    within = evaluate_output("confidence", ref, ref + 0.005, TOL)
    assert within.passed and within.figures["allclose"] is False
    v = evaluate_output("confidence", ref, ref + 0.02, TOL)
    assert not v.passed and v.figures["conf_mae"] == pytest.approx(0.02)
    assert any("conf_tol 0.01" in f for f in v.failures)


def test_logits_verdict_reports_top1() -> None:
    ref = np.array([[1.0, 2.0], [3.0, 0.0]])
    act = np.array([[1.0, 2.0], [0.0, 3.0]])
    v = evaluate_output("logits", ref, act, TOL)
    assert v.figures["top1_agreement"] == 0.5
    assert not v.passed and "top-1 agreement 50.0%" in v.failures[0]
    near = ref + np.array([[0.0, 0.0], [0.0, 1e-6]])
    assert evaluate_output("logits", ref, near, TOL).passed  # verdict is allclose


def test_keypoint_verdict_batched() -> None:
    ref = np.random.default_rng(4).uniform(0, 50, size=(2, 6, 2))
    act = ref.copy()
    act[1, 0] += 1.0
    v = evaluate_output("keypoints", ref, act, TOL)
    assert v.figures["matched"] == 11 and v.figures["match_ratio"] == pytest.approx(11 / 12)
    assert not v.passed and "match ratio" in v.failures[0]


def test_nan_output_is_not_assessable() -> None:
    ref = np.array([1.0, 2.0])
    v = evaluate_output("dense", ref, np.array([1.0, np.nan]), TOL)
    assert not v.passed
    assert "NaN" in v.nonfinite and v.failures == []


def test_parse_output_kinds() -> None:
    assert parse_output_kinds(["depth=dense", " R = rotation"]) == {"depth": "dense",
                                                                    "R": "rotation"}
    with pytest.raises(GeroError, match="choose from dense, confidence"):
        parse_output_kinds(["depth=depthmap"])
    with pytest.raises(GeroError, match="NAME=KIND"):
        parse_output_kinds(["depth"])
    with pytest.raises(GeroError, match="two kinds"):
        parse_output_kinds(["a=dense", "a=logits"])


@pytest.mark.parametrize("field_name,value", [("rtol", -1.0), ("atol", math.nan),
                                              ("coord_tol", math.inf)])
def test_tolerances_reject_bad_values(field_name: str, value: float) -> None:
    with pytest.raises(GeroError, match=field_name):
        ParityTolerances(**{field_name: value})

