"""Element-wise picture of one observation: histogram bins, NaN/inf mismatches, worst
elements, and the safe reading of evidence files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gero.query.tensors import Evidence, _ulp, analyse, element_status, load_evidence
from gero_runner.errors import ArtifactError
from gero_runner.metrics.compare import ulp_distance
from gero_runner.storage.artifacts import EvidenceWriter


def _ev(a: np.ndarray, r: np.ndarray, rtol: float = 5e-3, atol: float = 5e-4,
        exact: np.ndarray | None = None) -> Evidence:
    return Evidence(Path("."), a, r, exact, "outputs/x/output_0.npy",
                    "outputs/y/output_0.npy", rtol, atol)


def test_bins_counts_and_worst_first() -> None:
    r = np.full((3, 4), 0.5, dtype=np.float16)
    a = r.copy()
    a[0, 1] = np.float16(0.52)       # 0.02 away: out of tolerance
    a[2, 3] = np.nextafter(r[2, 3], np.float16(1))  # 1 ULP: within
    an = analyse(_ev(a, r))
    assert an.element_count == 12 and an.out_of_tolerance == 1
    assert an.zero_error == 10
    assert sum(b.count for b in an.abs_bins) == 2
    assert an.worst[0].index == (0, 1) and not an.worst[0].within
    assert an.worst[1].index == (2, 3) and an.worst[1].within and an.worst[1].ulp == 1
    assert {b.label: b.count for b in an.ulp_bins}["1"] == 1
    _, mismatch, _ = element_status(a, r, 5e-4, 5e-3)
    assert mismatch[0, 1] and not mismatch[2, 3]


@pytest.mark.parametrize("a_value,r_value,nan,inf,out", [
    (np.nan, 1.0, 1, 0, 1),
    (np.nan, np.nan, 1, 0, 1),      # NaN == NaN never passes
    (np.inf, np.inf, 0, 0, 0),      # equal infinities match
    (np.inf, -np.inf, 0, 1, 1),
    (-np.inf, 2.0, 0, 1, 1),
    (-0.0, 0.0, 0, 0, 0),           # signed zeros are equal
    (6e-8, 0.0, 0, 0, 0),           # float16 subnormal within atol
])
def test_non_finite_policy(a_value: float, r_value: float, nan: int, inf: int, out: int) -> None:
    a = np.array([a_value, 1.0], dtype=np.float16)
    r = np.array([r_value, 1.0], dtype=np.float16)
    an = analyse(_ev(a, r))
    assert (an.nan_mismatch, an.inf_mismatch, an.out_of_tolerance) == (nan, inf, out)
    if out:
        assert an.worst[0].index == (0,) and not an.worst[0].within


def test_tolerance_line_splits_its_decade() -> None:
    r = np.ones(1000, dtype=np.float32)
    a = r + np.linspace(0, 1e-4, 1000, dtype=np.float32)
    an = analyse(_ev(a, r, rtol=1e-5, atol=1e-6))
    edges = [b.low for b in an.abs_bins]
    assert any(abs(e - 1.1e-5) < 1e-9 for e in edges)  # atol + rtol·median|r|
    assert sum(b.count for b in an.abs_bins if b.low >= 1.1e-5 * (1 - 1e-9)) == \
        int(np.count_nonzero(np.abs(a.astype(np.float64) - 1) > 1.1e-5))


def test_zero_d_and_shape_mismatch() -> None:
    an = analyse(_ev(np.array(1.5, np.float32), np.array(1.0, np.float32)))
    assert an.worst[0].index == () and an.out_of_tolerance == 1
    with pytest.raises(ArtifactError, match="shape"):
        analyse(_ev(np.zeros(3, np.float32), np.zeros(4, np.float32)))


def _artifact(root: Path) -> str:
    w = EvidenceWriter()
    w.add_array("outputs/ort-all/output_0.npy", np.arange(4, dtype=np.float32))
    w.add_array("outputs/onnx-reference/output_0.npy", np.arange(4, dtype=np.float32))
    w.add_array("outputs/numpy-float64-exact/output_0.npy", np.arange(4, dtype=np.float64))
    return w.write(root)


def test_load_evidence_with_float64_value(tmp_path: Path) -> None:
    rel = _artifact(tmp_path)
    ev = load_evidence(tmp_path, {"artifact_path": rel, "rtol": 1e-5, "atol": 1e-6,
                                  "actual_file": "outputs/ort-all/output_0.npy",
                                  "reference_file": "outputs/onnx-reference/output_0.npy"})
    assert ev.exact is not None and ev.exact.dtype == np.float64
    assert analyse(ev).worst == ()


@pytest.mark.parametrize("row,message", [
    ({"artifact_path": "../../etc", "actual_file": "a.npy", "reference_file": "b.npy"},
     "outside the data root"),
    ({"artifact_path": "ART", "actual_file": "../../x.npy", "reference_file": "b.npy"},
     "outside the artifact directory"),
    ({"artifact_path": "", "actual_file": "", "reference_file": ""}, "kept no tensors"),
    ({"artifact_path": "artifacts/00/missing", "actual_file": "a.npy",
      "reference_file": "b.npy"}, "missing"),
])
def test_bad_evidence_is_a_clear_error(tmp_path: Path, row: dict[str, str],
                                       message: str) -> None:
    if row["artifact_path"] == "ART":
        row["artifact_path"] = _artifact(tmp_path)
    with pytest.raises(ArtifactError, match=message):
        load_evidence(tmp_path, row)


def test_pickled_array_is_refused(tmp_path: Path) -> None:
    rel = _artifact(tmp_path)
    obj = np.array([{"x": 1}], dtype=object)
    # A loose file shadows the packed tensor of the same name.
    target = tmp_path / rel / "outputs/ort-all/output_0.npy"
    target.parent.mkdir(parents=True, exist_ok=True)
    np.save(target, obj, allow_pickle=True)
    with pytest.raises(ArtifactError, match="cannot load"):
        load_evidence(tmp_path, {"artifact_path": rel, "rtol": 0, "atol": 0,
                                 "actual_file": "outputs/ort-all/output_0.npy",
                                 "reference_file": "outputs/onnx-reference/output_0.npy"})
    assert json.loads((tmp_path / rel / "manifest.json").read_text())["algorithm"] == "sha256"


def test_subnormal_differences_keep_exact_log10_edges() -> None:
    """float64 differences near 5e-324: 10**edge underflows to 0, the log10 edge does not."""
    r = np.zeros(3, dtype=np.float64)
    a = np.array([5e-324, 1e-320, 0.0])
    an = analyse(_ev(a, r, rtol=1e-12, atol=1e-13))
    assert an.abs_bins[0].log10_low == -324
    assert sum(b.count for b in an.abs_bins) == 2 and an.out_of_tolerance == 0


EDGES = [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1e-30, -1e-30, 3.4e38, -3.4e38, 1e-45, -1e-45,
         6e-8, -6e-8, 65504.0, -65504.0, 1.5, 2.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fast_ulp_matches_the_runner(dtype: type[np.floating]) -> None:
    """Every pair of edge values (signed zeros, subnormals, extremes, opposite signs):
    the detail view's ULP figures equal the runner's."""
    with np.errstate(over="ignore"):
        values = np.array(EDGES, dtype=np.float64).astype(dtype)
    a = np.repeat(values, values.size)
    r = np.tile(values, values.size)
    finite = np.isfinite(a) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a.astype(np.float64) - r.astype(np.float64))
    ours = _ulp(a, r, diff)
    np.testing.assert_array_equal(ours[finite], ulp_distance(a, r)[finite])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_counts_agree_with_element_status(dtype: type[np.floating]) -> None:
    """The whole-tensor counts equal what the per-cell marks of the side-by-side view add up
    to, non-finite values included."""
    rng = np.random.default_rng(3)
    r = rng.standard_normal((40, 50)).astype(dtype)
    a = (r.astype(np.float64) * (1 + rng.standard_normal(r.shape) * 1e-3)).astype(dtype)
    a[0, :4] = [np.nan, np.inf, -np.inf, np.inf]
    r[0, :4] = [np.nan, np.inf, np.inf, 1.0]
    r[1, 0] = np.nan
    an = analyse(_ev(a, r))
    diff, mismatch, _nonfinite = element_status(a, r, 5e-4, 5e-3)
    assert an.out_of_tolerance == int(np.count_nonzero(mismatch))
    assert an.nan_mismatch == 2 and an.inf_mismatch == 2
    assert an.zero_error == int(np.count_nonzero(diff == 0))
    assert sum(b.count for b in an.abs_bins) == int(np.count_nonzero(diff > 0))
    assert all(not w.within for w in an.worst[:4])
    assert {w.index for w in an.worst[:4]} == {(0, 0), (0, 2), (0, 3), (1, 0)}
