"""Replay: a fresh run reproduces bit-exact; tampering and bad evidence are refused."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from evidence_helpers import artifact_dirs, small_run

from gero_cli import main as gero
from gero_runner.errors import ArtifactError
from gero_runner.evidence.replay import BIT_EXACT, NOT_REPRODUCED, replay_artifact, stored_rows
from gero_runner.evidence.rows import OBSERVATIONS_JSON, rows_for_artifact, write_rows_json
from gero_runner.schema import Observation
from gero_runner.storage.artifacts import MANIFEST, PACKED, is_packed, load_array
from gero_runner.storage.hashing import npy_bytes, sha256
from gero_runner.storage.store import DataRoot


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    return small_run(tmp_path_factory.mktemp("replay-data"))


def _copy(root: DataRoot, tmp_path: Path) -> Path:
    """A copy of one artifact, outside the data root, carrying its rows as JSON."""
    source = artifact_dirs(root)[0]
    target = tmp_path / "case"
    shutil.copytree(source, target)
    write_rows_json(target / OBSERVATIONS_JSON, rows_for_artifact(root, source))
    # The manifest covers every file of a case, the rows included (as a bundle's does).
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["files"][OBSERVATIONS_JSON] = sha256((target / OBSERVATIONS_JSON).read_bytes())
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.mark.slow
def test_fresh_run_reproduces_bit_exact(root: DataRoot) -> None:
    for directory in artifact_dirs(root):
        report = replay_artifact(directory)
        assert report.reproduced, report
        assert report.observations
        assert {o.status for o in report.observations} == {BIT_EXACT}
        assert all(o.result_matches for o in report.observations)
        assert report.version_changes == ()


def test_cli_replay_exit_codes_and_json(root: DataRoot, capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    directory = artifact_dirs(root)[0]
    assert gero(["replay", str(directory), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reproduced"] is True
    assert data["counts"]["bit_exact"] == len(data["observations"]) > 0
    copy = _copy(root, tmp_path)
    (copy / "model.onnx").write_bytes(b"x" * 10)
    assert gero(["replay", str(copy)]) == 2
    assert "model.onnx" in capsys.readouterr().err


def _tamper_member(copy: Path, relative: str) -> tuple[str, str]:
    """Flip the last byte of a tensor inside tensors.npz, leaving the manifest alone;
    the member's hash before and after."""
    with zipfile.ZipFile(copy / PACKED) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = bytearray(members[relative])
    before = sha256(bytes(data))
    data[-1] ^= 1
    members[relative] = bytes(data)
    with zipfile.ZipFile(copy / PACKED, "w") as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    return before, sha256(bytes(data))


def test_one_tampered_input_byte_is_detected(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    before, after = _tamper_member(copy, "inputs/input_0.npy")
    with pytest.raises(ArtifactError) as info:
        replay_artifact(copy)
    message = str(info.value)
    assert "inputs/input_0.npy" in message and before in message and after in message


def test_a_tensor_missing_from_the_archive_is_named(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    with zipfile.ZipFile(copy / PACKED) as archive:
        members = {n: archive.read(n) for n in archive.namelist() if n != "inputs/input_0.npy"}
    with zipfile.ZipFile(copy / PACKED, "w") as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    with pytest.raises(ArtifactError, match=r"inputs/input_0\.npy: listed in the manifest"):
        replay_artifact(copy)


def test_a_corrupt_archive_is_named(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    (copy / PACKED).write_bytes(b"not a zip")
    with pytest.raises(ArtifactError, match=r"tensors\.npz: SHA-256 mismatch"):
        replay_artifact(copy)


def test_missing_file_is_named(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    (copy / "model.onnx").unlink()
    with pytest.raises(ArtifactError, match=r"model\.onnx"):
        replay_artifact(copy)


def test_copy_with_observations_json_replays_outside_the_data_root(
        root: DataRoot, tmp_path: Path) -> None:
    report = replay_artifact(_copy(root, tmp_path))
    assert report.reproduced
    assert report.rows_source == OBSERVATIONS_JSON


def test_copy_without_rows_is_a_clear_error(root: DataRoot, tmp_path: Path) -> None:
    target = tmp_path / "bare"
    shutil.copytree(artifact_dirs(root)[0], target)
    with pytest.raises(ArtifactError, match=r"no observations\.json"):
        replay_artifact(target)


def _rewrite(copy: Path, relative: str, data: bytes) -> None:
    """Change a file and its manifest entry consistently (a re-signed, different record)."""
    if is_packed(relative):
        # The tensor lives inside tensors.npz: rebuild the archive with the new member.
        with zipfile.ZipFile(copy / PACKED) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        members[relative] = data
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, member in members.items():
                archive.writestr(name, member)
        relative, data = PACKED, buffer.getvalue()
    (copy / relative).write_bytes(data)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["files"][relative] = sha256(data)
    (copy / MANIFEST).write_text(json.dumps(manifest))


def test_a_different_stored_output_does_not_reproduce(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    rows = json.loads((copy / OBSERVATIONS_JSON).read_text())
    row = next(r for r in rows if r["check"] == "agreement")
    stored = load_array(copy, row["actual_file"])
    shifted = (stored + np.asarray(1.0, dtype=stored.dtype)).astype(stored.dtype)
    _rewrite(copy, row["actual_file"], npy_bytes(shifted))
    # The record claims another output hash: replay must measure the difference.
    for r in rows:
        if r["actual_file"] == row["actual_file"]:
            r["actual_hash"] = "0" * 64
    _rewrite(copy, OBSERVATIONS_JSON, json.dumps(rows).encode())
    report = replay_artifact(copy)
    bad = [o for o in report.observations if o.status == NOT_REPRODUCED]
    assert bad and not report.reproduced
    assert all(o.max_abs_difference is not None and o.max_abs_difference >= 0.5 for o in bad), bad


def test_recorded_version_difference_is_reported(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    rows = json.loads((copy / OBSERVATIONS_JSON).read_text())
    for r in rows:
        if r["backend"] == "onnxruntime":
            r["backend_version"] = "0.0.1"
    _rewrite(copy, OBSERVATIONS_JSON, json.dumps(rows).encode())
    report = replay_artifact(copy)
    assert any("recorded 0.0.1" in change for change in report.version_changes)


def test_external_data_outside_the_directory_is_refused(root: DataRoot, tmp_path: Path) -> None:
    import onnx
    from onnx import numpy_helper

    copy = _copy(root, tmp_path)
    model = onnx.load(str(copy / "model.onnx"))
    weight = numpy_helper.from_array(np.ones(3, dtype=np.float32), name="w_external")
    weight.data_location = onnx.TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    model.graph.initializer.append(weight)
    _rewrite(copy, "model.onnx", model.SerializeToString())
    with pytest.raises(ArtifactError, match="outside the artifact directory"):
        replay_artifact(copy)


def test_pickled_npy_is_refused(root: DataRoot, tmp_path: Path) -> None:
    import io

    copy = _copy(root, tmp_path)
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    _rewrite(copy, "inputs/input_0.npy", buffer.getvalue())
    with pytest.raises(ArtifactError, match="cannot load tensor"):
        replay_artifact(copy)


def test_stored_rows_are_typed_and_a_row_lacking_a_column_is_named(root: DataRoot,
                                                                   tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    rows, source = stored_rows(copy)
    assert source == OBSERVATIONS_JSON and rows
    assert all(isinstance(r, Observation) for r in rows)
    # A column this gero does not know is dropped; one it needs is named (was a KeyError).
    data = json.loads((copy / OBSERVATIONS_JSON).read_text())
    data[0]["from_a_newer_gero"] = 1
    del data[-1]["backend_version"]
    _rewrite(copy, OBSERVATIONS_JSON, json.dumps(data).encode())
    with pytest.raises(ArtifactError, match=r"lacks the column\(s\) backend_version"):
        replay_artifact(copy)
