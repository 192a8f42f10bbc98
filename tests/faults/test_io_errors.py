"""The file system says no, under real ``gero`` processes: a store file gone, a read-only
data root (a read-only bind mount: root ignores a directory's mode), a full disk during a
compaction. One sentence each, exit 2 where the input is at fault, nothing lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_fault_injection import gero, stored_ids

from gero_runner.storage.reader import sighted_ids

EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
       "--no-contracts"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs merged into the store and a third one loose."""
    root = tmp_path_factory.mktemp("history") / "data"
    for name, limit in (("one", "1"), ("two", "2")):
        gero("run", "--data-dir", str(root), *EXP, "--limit", limit, "--run-id", name,
             cwd=root.parent)
    gero("compact", "--data-dir", str(root), cwd=root.parent)
    gero("run", "--data-dir", str(root), "--ops", "Sigmoid", "--dtypes", "float32",
         "--repeats", "1", "--jobs", "1", "--no-contracts", "--limit", "2", "--run-id",
         "three", cwd=root.parent)
    return root


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file() and p.name != ".lock"}


def _sentence(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("gero: warning:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_missing_store_file_is_named_and_compaction_repairs_the_root(
        tmp_path: Path, history: Path) -> None:
    root = tmp_path / "data"
    shutil.copytree(history, root)
    (store_file,) = (root / "store").glob("observations-*.parquet")
    store_file.unlink()
    done = gero("summary", "--data-dir", str(root), "--run", "three", "--format", "json",
                cwd=tmp_path, check=None)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["run"]["observation_count"] > 0
    done = gero("summary", "--data-dir", str(root), "--run", "one", cwd=tmp_path, check=2)
    assert "none can be read" in _sentence(done)
    done = gero("compact", "--data-dir", str(root), cwd=tmp_path)
    assert "named by the store index is missing" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(sighted_ids(root, "three")) == sorted(sighted_ids(history, "three"))
    gero("run", "--data-dir", str(root), *EXP, "--limit", "1", "--run-id", "four",
         cwd=tmp_path)
    ids = stored_ids(root)
    assert len(ids) == len(set(ids))


@pytest.fixture
def read_only(tmp_path: Path, history: Path) -> Iterator[Path]:
    """``history`` copied, then seen through a read-only bind mount."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root on Linux for a read-only bind mount")
    source, view = tmp_path / "source", tmp_path / "data"
    shutil.copytree(history, source)
    view.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


def test_a_read_only_root_is_read_by_dry_runs_and_refused_by_writers(
        tmp_path: Path, read_only: Path) -> None:
    root = read_only
    before = _tree(root)
    done = gero("gc", "--data-dir", str(root), cwd=tmp_path)
    assert "dry run:" in done.stdout and "Traceback" not in done.stderr
    done = gero("compact", "--dry-run", "--data-dir", str(root), cwd=tmp_path)
    assert "dry run: would merge 1 runs" in done.stdout and "Traceback" not in done.stderr
    for command in (["gc", "--apply"], ["compact"],
                    ["run", *EXP, "--limit", "1", "--run-id", "new"]):
        done = gero(*command, "--data-dir", str(root), cwd=tmp_path, check=2)
        assert "cannot write in the data root" in _sentence(done), command
    done = gero("summary", "--data-dir", str(root), "--run", "three", "--format", "json",
                cwd=tmp_path, check=None)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    assert _tree(root) == before


def test_a_full_disk_during_compaction_leaves_the_store_as_it_was(
        tmp_path: Path, history: Path) -> None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root on Linux to mount a small tmpfs")
    used = sum(p.stat().st_size for p in history.rglob("*") if p.is_file())
    files = sum(1 for _ in history.rglob("*"))
    small = tmp_path / "small"
    small.mkdir()
    # Room for the root as it is (a page per file and directory) and a little more, not
    # for a second copy of its observations.
    size_kib = (used // 1024) + files * 4 + 256
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(small)],
                   check=True)
    try:
        root = small / "data"
        shutil.copytree(history, root)
        # What the compaction would remove first (freeing room) is gone already.
        for relative in json.loads((root / "store" / "index.json").read_text())["superseded"]:
            (root / relative).unlink()
        filler = small / "filler"
        try:  # fill what is left: no new store file fits
            with open(filler, "wb", buffering=0) as f:
                while True:
                    f.write(b"\0" * 4096)
        except OSError:
            pass
        before = _tree(root)
        done = gero("compact", "--data-dir", str(root), cwd=tmp_path, check=2)
        line = _sentence(done)
        assert "the disk is full" in line and "as they were" in line
        assert _tree(root) == before
        assert not list((root / "store").glob(".gero-*.tmp"))
        filler.unlink()
        gero("compact", "--data-dir", str(root), cwd=tmp_path)
        assert sorted(sighted_ids(root, "three")) == sorted(sighted_ids(history, "three"))
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)
