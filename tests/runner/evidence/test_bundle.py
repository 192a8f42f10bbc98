"""Bundles: self-contained, replayable without the data root, extracted safely."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from evidence_helpers import small_run

from gero_cli import main as gero
from gero_runner.errors import ArtifactError
from gero_runner.evidence.bundle import create_bundle, extract_bundle, opened
from gero_runner.evidence.replay import replay_artifact
from gero_runner.storage.reader import resolve_observation
from gero_runner.storage.store import DataRoot


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    return small_run(tmp_path_factory.mktemp("bundle-data"))


def _first_row(root: DataRoot) -> dict[str, object]:
    import pyarrow.parquet as pq

    oid = pq.read_table(root.observation_files()[0]).column("observation_id")[0].as_py()
    return resolve_observation(root, oid[:10])


def test_bundle_replays_without_the_data_root(root: DataRoot, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    row = _first_row(root)
    out = tmp_path / "share" / "case.tar.gz"
    assert gero(["bundle", str(row["observation_id"])[:10], "--data-dir", str(root.path),
                 "-o", str(out)]) == 0
    # The command as it runs from here: the bundle's directory included.
    assert f"gero replay {out}" in capsys.readouterr().out
    with tarfile.open(out) as tar:
        names = tar.getnames()
    folder = names[0].split("/")[0]
    for name in ("model.onnx", "manifest.json", "observations.json", "bundle.json",
                 "tensors.npz", "test_data_set_0/input_0.pb"):
        assert f"{folder}/{name}" in names
    # As the archive, and extracted somewhere unrelated to the data root.
    assert gero(["replay", str(out)]) == 0
    target = extract_bundle(out, tmp_path / "elsewhere")
    report = replay_artifact(target)
    assert report.reproduced
    assert row["observation_id"] in {o.observation_id for o in report.observations}


def test_row_pointing_outside_the_data_root_is_refused(root: DataRoot, tmp_path: Path) -> None:
    row = {**_first_row(root), "artifact_path": "../../etc"}
    with pytest.raises(ArtifactError, match="outside the data root"):
        create_bundle(root, row, tmp_path / "x.tar.gz")


def _archive(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        member.size = len(data) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


@pytest.mark.parametrize("name,kind", [
    ("../escape.txt", tarfile.REGTYPE),
    ("/tmp/absolute.txt", tarfile.REGTYPE),
    ("case/../../escape.txt", tarfile.REGTYPE),
    ("case/link", tarfile.SYMTYPE),
    ("case/hard", tarfile.LNKTYPE),
    ("case/fifo", tarfile.FIFOTYPE),
])
def test_unsafe_members_are_refused(tmp_path: Path, name: str, kind: bytes) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = "/etc/passwd"
    archive = _archive(tmp_path, member, b"x")
    with pytest.raises(ArtifactError, match="refusing member"), opened(archive):
        pass
    assert not (tmp_path.parent / "escape.txt").exists()


def test_not_a_bundle_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.tar.gz"
    path.write_bytes(b"not a tar file")
    with pytest.raises(ArtifactError, match="not a readable"), opened(path):
        pass
