"""Hostile evidence: a manifest proves every file it covers, links are refused, a forged
tensor header or a bundle that expands enormously is refused before anything is allocated,
and a case that never ends is stopped by the replay's timeout."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
from evidence_helpers import artifact_dirs, small_run
from shared_helpers import never_ending_model

from gero_runner.errors import ArtifactError
from gero_runner.evidence import bundle
from gero_runner.evidence.replay import ReplayFailed, replay_artifact
from gero_runner.evidence.rows import OBSERVATIONS_JSON, rows_for_artifact, write_rows_json
from gero_runner.storage.artifacts import MANIFEST, load_array, verify_manifest
from gero_runner.storage.hashing import load_npy, npy_bytes, sha256
from gero_runner.storage.store import DataRoot


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    return small_run(tmp_path_factory.mktemp("hostile-evidence"))


def _copy(root: DataRoot, tmp_path: Path) -> Path:
    source = artifact_dirs(root)[0]
    target = tmp_path / "case"
    shutil.copytree(source, target)
    write_rows_json(target / OBSERVATIONS_JSON, rows_for_artifact(root, source))
    _sign(target)
    return target


def _sign(directory: Path) -> None:
    """Re-sign every file, as a forger who can write the manifest would."""
    manifest = json.loads((directory / MANIFEST).read_text())
    manifest["files"] = {p.relative_to(directory).as_posix(): sha256(p.read_bytes())
                         for p in sorted(directory.rglob("*"))
                         if p.is_file() and not p.is_symlink() and p.name != MANIFEST}
    (directory / MANIFEST).write_text(json.dumps(manifest))


def test_an_empty_manifest_proves_nothing(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    manifest = json.loads((copy / MANIFEST).read_text())
    (copy / MANIFEST).write_text(json.dumps({**manifest, "files": {}}))
    with pytest.raises(ArtifactError, match="lists no files, so it proves nothing"):
        verify_manifest(copy)


def test_a_file_the_manifest_does_not_list_is_refused(root: DataRoot, tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    manifest = json.loads((copy / MANIFEST).read_text())
    del manifest["files"]["case.json"]
    (copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=r"case\.json: in .* but not in its manifest"):
        replay_artifact(copy)


@pytest.mark.parametrize("member", ["case.json", "tensors.npz"])
def test_a_member_that_is_a_link_is_refused(root: DataRoot, tmp_path: Path,
                                            member: str) -> None:
    copy = _copy(root, tmp_path)
    outside = tmp_path / f"outside-{member}"
    shutil.move(copy / member, outside)
    os.symlink(outside, copy / member)
    with pytest.raises(ArtifactError, match=f"{member}: a symbolic link"):
        replay_artifact(copy)


def test_a_forged_tensor_header_is_refused_before_allocating() -> None:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        stream, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    forged = stream.getvalue() + bytes(16)  # claims 4 TB, holds 16 bytes
    with pytest.raises(ValueError, match="header claims 4000000000000 bytes"):
        load_npy(forged)
    assert load_npy(npy_bytes(np.zeros(4, np.float32))).shape == (4,)


def test_a_bundle_that_expands_too_far_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "MAX_EXPANDED_BYTES", 10_000)
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for i in range(3):
            info = tarfile.TarInfo(f"case/zeros-{i}")
            info.size = 6_000
            tar.addfile(info, io.BytesIO(bytes(6_000)))
    with pytest.raises(ArtifactError, match="expands to more than"):
        bundle.extract_bundle(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "case" / "zeros-1").exists()


def test_a_case_that_never_ends_is_stopped_by_the_replay_timeout(root: DataRoot,
                                                                  tmp_path: Path) -> None:
    copy = _copy(root, tmp_path)
    # Shaped like the case's own input: a model its inputs do not fit fails at once instead
    # (which artifact sorts first depends on the bytes NumPy writes, so on its version).
    (name, relative), = json.loads((copy / "case.json").read_text())["inputs"].items()
    x = load_array(copy, relative)
    (copy / "model.onnx").write_bytes(never_ending_model(name, str(x.dtype), x.shape))
    _sign(copy)
    start = time.monotonic()
    with pytest.raises(ReplayFailed, match="timed out after 1 s"):
        replay_artifact(copy, timeout_s=1.0)
    assert time.monotonic() - start < 30


def test_complex_inputs_are_refused_in_one_sentence(root: DataRoot, tmp_path: Path) -> None:
    import zipfile

    copy = _copy(root, tmp_path)
    with zipfile.ZipFile(copy / "tensors.npz") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    for name in members:
        if name.startswith("inputs/"):
            members[name] = npy_bytes(load_npy(members[name]).astype(np.complex128))
    with zipfile.ZipFile(copy / "tensors.npz", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest.pop("packed", None)
    (copy / MANIFEST).write_text(json.dumps(manifest))
    _sign(copy)
    with pytest.raises(ArtifactError, match="is complex128; gero replays real-valued cases"):
        replay_artifact(copy)
