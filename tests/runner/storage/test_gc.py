"""`gero gc`: lists evidence nobody references, removes it only when asked and safe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gero_runner.storage import gc
from gero_runner.storage.locks import RunLock
from gero_runner.storage.store import DataRoot
from gero_tui.cli import main


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    # In a fresh process: workers forked from a test process that has run threads may crash.
    subprocess.run([sys.executable, "-m", "gero_tui", "run", "--data-dir", str(tmp_path),
                    "--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
                    "--no-contracts", "--run-id", "one"], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return tmp_path


def _orphans(root: Path) -> list[Path]:
    made = [root / "artifacts" / "zz" / "0123456789abcdef01234567",
            root / "artifacts" / "zz" / ".tmp-killed"]
    for d in made:
        d.mkdir(parents=True)
        (d / "model.onnx").write_bytes(b"x" * 100)
    return made


def test_gc_is_a_dry_run_that_lists_only_unreferenced_evidence(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = sorted(p for p in (root / "artifacts").glob("*/*"))
    orphans = _orphans(root)
    assert main(["gc", "--data-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert "artifacts/zz/0123456789abcdef01234567" in out and ".tmp-killed" in out
    assert "dry run: 2 directories" in out
    assert all(d.is_dir() for d in orphans)  # nothing removed
    assert main(["gc", "--data-dir", str(root), "--delete"]) == 0
    assert "removed 2 directories" in capsys.readouterr().out
    assert not any(d.exists() for d in orphans)
    assert sorted(p for p in (root / "artifacts").glob("*/*")) == kept
    assert kept  # the run's own evidence is referenced and stays


def test_gc_removes_nothing_while_a_run_is_running(root: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    orphans = _orphans(root)
    lock = RunLock(DataRoot(root).run_dir("one"))
    try:
        assert main(["gc", "--data-dir", str(root), "--delete"]) == 1
    finally:
        lock.release()
    captured = capsys.readouterr()
    assert "run one is running" in captured.err and "nothing removed" in captured.out
    assert all(d.is_dir() for d in orphans)
    assert len(gc.plan(DataRoot(root)).garbage) == 2
