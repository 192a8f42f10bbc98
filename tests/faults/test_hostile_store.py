"""A data root someone else can write (a shared root, a CI cache): files in it that name
paths outside it, or contradict the runs, are refused in real ``gero`` processes; nothing
outside the root is touched, no evidence is lost on their word, no traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_fault_injection import gero, runs, stored_ids

from gero_runner.storage.index import read_index
from gero_runner.storage.reader import sighted_ids

EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
       "--no-contracts"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def compacted_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root of two runs, compacted into the store (an index that names a store file)."""
    root = tmp_path_factory.mktemp("compacted") / "data"
    for name in ("one", "two"):
        gero("run", "--data-dir", str(root), *EXP, "--limit", "2", "--run-id", name,
             cwd=root.parent)
    gero("compact", "--data-dir", str(root), cwd=root.parent)
    return root


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_an_index_naming_files_outside_the_root_deletes_nothing(
        tmp_path: Path, compacted_root: Path) -> None:
    root = tmp_path / "data"
    shutil.copytree(compacted_root, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = [outside / "absolute.txt", tmp_path / "dotdot.txt",
               outside / "observations.parquet"]
    for victim in victims:
        victim.write_text("precious")
    # A run directory that is a link out of the root: "its" observation file is outside.
    (root / "runs" / "linked").symlink_to(outside, target_is_directory=True)
    index_file = root / "store" / "index.json"
    index = json.loads(index_file.read_text())
    for superseded in ([str(victims[0])], ["../dotdot.txt"], ["store/../../dotdot.txt"]):
        index_file.write_text(json.dumps({**index, "superseded": superseded,
                                          "legacy": True}))
        before = _tree(root)
        for command in (["compact"], ["gc", "--apply"], ["gc"], ["compact", "--dry-run"]):
            done = gero(*command, "--data-dir", str(root), cwd=tmp_path, check=None)
            assert done.returncode == 2, (superseded, command, done.stderr)
            assert "Traceback" not in done.stderr
            (line,) = done.stderr.strip().splitlines()
            assert "outside the places a store index may name" in line, line
        # The automatic compaction at the end of a run (legacy: true) is never reached: the
        # run refuses to start on such an index.
        done = gero("run", "--data-dir", str(root), *EXP, "--limit", "1", cwd=tmp_path,
                    check=None)
        assert "Traceback" not in done.stderr
        assert done.returncode == 2, done.stderr
        assert "outside the places a store index may name" in done.stderr
        assert _tree(root) == before
        assert all(v.read_text() == "precious" for v in victims), superseded
    assert (outside / "observations.parquet").read_text() == "precious"
    assert sorted(sighted_ids(root, "one")) == sorted(sighted_ids(compacted_root, "one"))


def test_an_index_naming_a_linked_run_file_keeps_what_is_outside(
        tmp_path: Path, compacted_root: Path) -> None:
    """A superseded entry of the right shape behind a symbolic link: compaction and gc
    remove nothing outside the root, and the store is intact."""
    root = tmp_path / "data"
    shutil.copytree(compacted_root, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "observations.parquet").write_text("precious")
    (root / "runs" / "linked").symlink_to(outside, target_is_directory=True)
    index_file = root / "store" / "index.json"
    index = json.loads(index_file.read_text())
    index_file.write_text(json.dumps({**index, "superseded": [
        *index["superseded"], "runs/linked/observations.parquet"]}))
    gero("run", "--data-dir", str(root), *EXP, "--limit", "1", "--run-id", "three",
         cwd=tmp_path)
    done = gero("compact", "--data-dir", str(root), cwd=tmp_path)
    # The runs' own files it replaced go; the one behind the link stays.
    assert "merged 1 runs" in done.stdout and "2 replaced files removed" in done.stdout
    gero("gc", "--apply", "--keep-runs", "2", "--data-dir", str(root), cwd=tmp_path)
    assert (outside / "observations.parquet").read_text() == "precious"
    ids = stored_ids(root)
    assert len(ids) == len(set(ids))
    assert runs(root) == ["three", "two"]
    assert read_index(root).problem is None
    assert os.path.islink(root / "runs" / "linked")


def _evidence(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "artifacts").glob("*/*")}


def test_an_index_listing_a_loose_run_as_merged_is_an_error_and_gc_keeps_its_evidence(
        tmp_path: Path) -> None:
    root = tmp_path / "data"
    gero("run", "--data-dir", str(root), *EXP, "--limit", "1", "--run-id", "one",
         cwd=tmp_path)
    gero("run", "--data-dir", str(root), "--ops", "Relu", "--dtypes", "float32", "--repeats",
         "1", "--jobs", "1", "--limit", "2", "--run-id", "two", cwd=tmp_path)
    recorded = json.loads((root / "runs/two/run.json").read_text())["observation_count"]
    expected = sorted(sighted_ids(root, "two"))
    evidence = _evidence(root)
    assert evidence
    index_file = root / "store" / "index.json"
    index = json.loads(index_file.read_text())
    index_file.write_text(json.dumps({**index, "compacted": ["two"]}))

    done = gero("summary", "--data-dir", str(root), "--run", "two", cwd=tmp_path, check=2)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "lists two as merged into the store" in line and "gero compact" in line
    for command in (["gc"], ["gc", "--apply"], ["gc", "--apply", "--keep-runs", "1"]):
        done = gero(*command, "--data-dir", str(root), cwd=tmp_path, check=None)
        assert "Traceback" not in done.stderr
        assert "index contradicts the runs" in done.stderr
    assert _evidence(root) == evidence
    assert runs(root) == ["one", "two"]

    done = gero("compact", "--data-dir", str(root), cwd=tmp_path)
    assert "listed two as merged" in done.stderr
    summary = json.loads(gero("summary", "--data-dir", str(root), "--run", "two", "--format",
                              "json", cwd=tmp_path).stdout)
    assert summary["run"]["observation_count"] == recorded
    assert sorted(sighted_ids(root, "two")) == expected
    ids = stored_ids(root)
    assert len(ids) == len(set(ids))
    gero("gc", "--apply", "--data-dir", str(root), cwd=tmp_path)
    assert _evidence(root) == evidence


def test_a_truncated_index_loses_nothing_and_the_next_run_saves(
        tmp_path: Path, compacted_root: Path) -> None:
    """Half an index.json (a killed writer, a full disk): the runs read on, the next run is
    stored whole, and no traceback (it said 'observations.parquet is missing … run the
    suite again', and a run started then died at its first save)."""
    root = tmp_path / "data"
    shutil.copytree(compacted_root, root)
    index = root / "store" / "index.json"
    index.write_bytes(index.read_bytes()[:40])
    for name in ("one", "two"):
        summary = gero("summary", "--data-dir", str(root), "--run", name, cwd=tmp_path,
                       check=None)
        assert summary.returncode in (0, 1) and "Traceback" not in summary.stderr, (
            summary.stderr)
        assert "observations" in summary.stdout
    done = gero("run", "--data-dir", str(root), *EXP, "--limit", "2", "--run-id", "three",
                cwd=tmp_path, check=None)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert runs(root) == ["one", "three", "two"]
    for name in ("one", "two"):  # nothing lost: each run reads as it did before
        assert sorted(sighted_ids(root, name)) == sorted(sighted_ids(compacted_root, name))
    ids = sighted_ids(root, "three")
    assert ids and len(ids) == len(set(ids))
