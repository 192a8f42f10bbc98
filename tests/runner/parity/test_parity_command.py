"""`gero parity` end to end on small modules: pass, divergence, NaN, export failure, evidence."""

from __future__ import annotations

import json
import math
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed; the parity tests need: pip install 'gero[torch]'")

import onnx  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from gero_cli import main  # noqa: E402
from gero_runner.evidence.replay import replay_artifact  # noqa: E402
from gero_runner.storage.artifacts import has_member, load_array, verify_manifest  # noqa: E402

HELPERS = Path(__file__).with_name("parity_modules.py")
LEVELS = ["disable_all", "basic", "extended", "all"]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's directory holding parity_modules.py; gero runs from there (not on sys.path)."""
    shutil.copy(HELPERS, tmp_path / "parity_modules.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "parity_modules", raising=False)
    yield tmp_path
    sys.modules.pop("parity_modules", None)


def parity(workdir: Path, *args: str) -> int:
    return main(["parity", "--data-dir", str(workdir / "data"), "--repeats", "1", *args])


def stored_rows(workdir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((workdir / "data" / "runs").glob("*/observations.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def details(row: dict[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(row["details"])
    return parsed


def export_model(workdir: Path, factory: str, input_arg: str) -> onnx.ModelProto:
    """The ONNX graph gero exported for a module (read back from its evidence)."""
    data = workdir / "export-data"
    assert main(["parity", "--data-dir", str(data), "--repeats", "1", "--module",
                 f"parity_modules:{factory}", "--input", input_arg]) in (0, 1)
    run = next((data / "runs").glob("*/observations.parquet"))
    artifact = pq.read_table(run).to_pylist()[0]["artifact_path"]
    return onnx.load(str(data / artifact / "model.onnx"))


def set_initializer(model: onnx.ModelProto, name: str, value: np.ndarray) -> None:
    for i, init in enumerate(model.graph.initializer):
        if init.name == name:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, name))
            return
    raise AssertionError(f"no initializer {name}")


@pytest.mark.parametrize("factory,input_arg", [("make_mlp", "x=2x8"),
                                               ("make_convnet", "x=2x3x16x16")])
@pytest.mark.slow
def test_dense_modules_pass_with_evidence(workdir: Path, factory: str, input_arg: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    report = workdir / "report.md"
    assert parity(workdir, "--module", f"parity_modules:{factory}", "--input", input_arg,
                  "--output-file", str(report)) == 0
    out = capsys.readouterr().out
    assert "Within contract                4" in out
    rows = stored_rows(workdir)
    assert [r["optimization"] for r in rows] == LEVELS
    for row in rows:
        assert row["suite"] == "parity" and row["result"] == "passed"
        assert row["backend"] == "onnxruntime" and row["reference"] == "pytorch"
        assert row["reference_version"] == torch.__version__
        assert row["check"] == "expected" and row["rtol"] == 1e-3 and row["atol"] == 1e-4
        d = details(row)
        assert d["kind"] == "dense" and d["allclose"] is True
        assert 0 <= d["max_diff"] < 1e-4 and d["relative_error_pct"] < 0.1
    run = json.loads(next((workdir / "data" / "runs").glob("*/run.json")).read_text())
    assert run["suite"] == "parity" and run["counts"]["passed"] == 4
    artifact = workdir / "data" / rows[0]["artifact_path"]
    verify_manifest(artifact)
    for name in ("model.onnx", "inputs/input_0.npy", "outputs/pytorch/output_0.npy",
                 "outputs/ort-all/output_0.npy", "case.json"):
        assert has_member(artifact, name)
    model = onnx.load(str(artifact / "model.onnx"))
    assert model.opset_import[0].version == 17
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert len(model.graph.initializer) > 0  # weights embedded
    x = load_array(artifact, "inputs/input_0.npy")
    np.testing.assert_array_equal(x, np.random.default_rng(0).standard_normal(x.shape)
                                  .astype(np.float32))
    text = report.read_text()
    assert f"# Parity report: `parity_modules:{factory}`" in text
    assert "Verdict: **PASS**" in text and text.count("| PASS |") == 4
    replay = replay_artifact(artifact)
    assert replay.reproduced and replay.counts()["bit_exact"] == 4


@pytest.mark.slow
def test_rotation_error_of_a_perturbed_export_is_the_hand_computed_angle(
        workdir: Path) -> None:
    model = export_model(workdir, "make_pose", "angle=4")
    delta = math.radians(1.0)  # R_ort = Rz(a + 0.25 + δ), R_pt = Rz(a + 0.25): θ = δ = 1°
    set_initializer(model, "offset", np.array(0.25 + delta, dtype=np.float32))
    onnx.save(model, str(workdir / "pose.onnx"))
    assert parity(workdir, "--module", "parity_modules:make_pose", "--input", "angle=4",
                  "--onnx", str(workdir / "pose.onnx"), "--output-kind", "rotation=rotation",
                  "--output-kind", "translation=translation") == 1
    rows = stored_rows(workdir)
    rotation = [r for r in rows if r["output_name"] == "rotation"]
    translation = [r for r in rows if r["output_name"] == "translation"]
    assert len(rotation) == len(translation) == 4
    for row in rotation:
        d = details(row)
        assert row["result"] == "divergence" and "geodesic error up to 1°" in row["reason"]
        assert d["rotation_error_deg_max"] == pytest.approx(1.0, abs=1e-4)
        assert d["rotation_error_deg_mean"] == pytest.approx(1.0, abs=1e-4)
    for row in translation:
        assert row["result"] == "passed" and details(row)["translation_error_max"] == 0.0


@pytest.mark.slow
def test_unperturbed_pose_passes_with_near_zero_angle(workdir: Path) -> None:
    assert parity(workdir, "--module", "parity_modules:make_pose", "--input", "angle=3",
                  "--output-kind", "rotation=rotation",
                  "--output-kind", "translation=translation") == 0
    rotation = [r for r in stored_rows(workdir) if r["output_name"] == "rotation"]
    assert all(details(r)["rotation_error_deg_max"] < 1e-3 for r in rotation)


@pytest.mark.slow
def test_perturbed_keypoints_lower_the_match_ratio(workdir: Path) -> None:
    model = export_model(workdir, "make_keypoints", "feats=1x12x5")
    shift = np.zeros((12, 4), dtype=np.float32)
    shift[:3] = 0.5  # three of twelve points move beyond coord_tol 0.01
    set_initializer(model, "shift", shift)
    onnx.save(model, str(workdir / "kp.onnx"))
    assert parity(workdir, "--module", "parity_modules:make_keypoints", "--input",
                  "feats=1x12x5", "--onnx", str(workdir / "kp.onnx"), "--output-kind",
                  "output_0=keypoints", "--output-kind", "output_1=confidence") == 1
    rows = stored_rows(workdir)
    points = [r for r in rows if r["output_name"] == "output_0"]
    conf = [r for r in rows if r["output_name"] == "output_1"]
    for row in points:
        d = details(row)
        assert row["check"] == "parity:keypoints" and row["result"] == "divergence"
        assert d["match_ratio"] == pytest.approx(0.75) and d["matched"] == 9
        assert d["count_ratio"] == 1.0 and d["confidence_output"] == "output_1"
        assert "match ratio 0.75 < 1" in row["reason"]
    assert all(r["result"] == "passed" and r["atol"] == 1e-2 for r in conf)


@pytest.mark.slow
def test_export_divergence_is_reported(workdir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    report = workdir / "gate.md"
    assert parity(workdir, "--module", "parity_modules:make_gate", "--input", "x=3x8",
                  "--output-file", str(report)) == 1
    rows = stored_rows(workdir)
    assert {r["result"] for r in rows} == {"divergence"}
    assert all("not allclose" in r["reason"] and details(r)["max_diff"] > 1e-2 for r in rows)
    text = report.read_text()
    assert "Verdict: **FAIL**" in text and "## Findings" in text
    assert "FAIL (divergence)" in capsys.readouterr().out


@pytest.mark.slow
def test_export_failure_is_an_execution_observation(
        workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parity(workdir, "--module", "parity_modules:make_unexportable", "--input",
                  "x=2x3x3") == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "Torch IR graph" not in captured.out
    (row,) = stored_rows(workdir)
    assert row["result"] == "execution" and row["backend"] == "torch.onnx.export"
    assert "linalg_eigvalsh" in row["reason"] and "not supported" in row["reason"]
    verify_manifest(workdir / "data" / row["artifact_path"])
    assert has_member(workdir / "data" / row["artifact_path"], "outputs/pytorch/output_0.npy")


@pytest.mark.slow
def test_nan_outputs_are_contract_issues(workdir: Path) -> None:
    assert parity(workdir, "--module", "parity_modules:make_lognet", "--input", "x=2x5") == 1
    rows = stored_rows(workdir)
    assert {r["result"] for r in rows} == {"contract_issue"}
    assert all("NaN never passes" in r["reason"] and r["nan_reference"] > 0 for r in rows)


@pytest.mark.slow
def test_output_shape_mismatch_is_a_divergence(workdir: Path) -> None:
    wide = export_model(workdir, "make_wide_mlp", "x=2x8")
    onnx.save(wide, str(workdir / "wide.onnx"))
    assert parity(workdir, "--module", "parity_modules:make_mlp", "--input", "x=2x8",
                  "--onnx", str(workdir / "wide.onnx")) == 1
    rows = stored_rows(workdir)
    assert {r["result"] for r in rows} == {"divergence"}
    assert all("shape [2, 5] differs from PyTorch [2, 4]" in r["reason"] for r in rows)


@pytest.mark.slow
def test_checkpoint_and_samples(workdir: Path) -> None:
    import importlib

    sys.path.insert(0, str(workdir))  # sys.path is restored by the fixture
    helpers = importlib.import_module("parity_modules")
    torch.manual_seed(7)
    state = {k: torch.randn_like(v) for k, v in helpers.make_mlp().state_dict().items()}
    torch.save({"state_dict": state}, workdir / "w.pt")
    assert parity(workdir, "--module", "parity_modules:make_mlp", "--input", "x=2x8",
                  "--checkpoint", str(workdir / "w.pt"), "--max-pairs", "2", "--seed", "5") == 0
    rows = stored_rows(workdir)
    assert len(rows) == 8 and sorted({r["seed"] for r in rows}) == [5, 6]
    artifact = workdir / "data" / rows[0]["artifact_path"]
    weights = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(str(artifact / "model.onnx")).graph.initializer}
    assert any(np.array_equal(w, state["2.bias"].numpy()) for w in weights.values())


@pytest.mark.parametrize("args,message", [
    (["--module", "nowhere_module:make", "--input", "x=2x8"], "cannot import 'nowhere_module'"),
    (["--module", "parity_modules:missing", "--input", "x=2x8"], "has no attribute 'missing'"),
    (["--module", "parity_modules:not_a_module", "--input", "x=2x8"], "not a torch.nn.Module"),
    (["--module", "parity_modules:make_mlp", "--input", "x=2x7"], "PyTorch module failed"),
    (["--module", "parity_modules:make_mlp", "--input", "x=2x8", "--output-kind",
      "logits=logits"], "unknown output(s) logits; the module's outputs are output"),
    (["--module", "parity_modules:make_mlp", "--input", "x=2x8", "--output-kind",
      "output=rotation"], "does not fit kind 'rotation'"),
    (["--module", "parity_modules:make_mlp", "--input", "x=2x8", "--opset", "12"],
     "choose from 17, 18, 19"),
    (["--module", "parity_modules:make_mlp", "--input", "y=2x8", "--onnx", "missing.onnx"],
     "no such file"),
    (["--module", "parity_modules:make_mlp", "--input", "x=2x8", "--checkpoint", "nope.pt"],
     "no such file"),
])
@pytest.mark.slow
def test_bad_input_is_one_line_error(workdir: Path, capsys: pytest.CaptureFixture[str],
                                     args: list[str], message: str) -> None:
    assert parity(workdir, *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
