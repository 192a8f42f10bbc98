"""`gero gc`: lists evidence nobody references, removes it only when asked and safe."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from history_helpers import artifact, make_artifacts, oid, run_rows, write_with_writer

from gero_cli import main
from gero_runner.errors import GeroError
from gero_runner.storage import gc
from gero_runner.storage.locks import RunLock
from gero_runner.storage.reader import resolve_observation
from gero_runner.storage.store import DataRoot


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    # In a fresh process: workers forked from a test process that has run threads may crash.
    subprocess.run([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(tmp_path),
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- retention ---------------------------------------------------------------------------

NIGHTS = ["20250101-020000-000001", "20250102-020000-000002", "20250103-020000-000003"]
SIGHTED = {NIGHTS[0]: ["a.1", "b.1", "c.bad"], NIGHTS[1]: ["b.1", "c.bad", "d.1"],
           NIGHTS[2]: ["d.1", "e.nan"]}


def _history(root: Path) -> None:
    """Three nights, the second and third re-sighting what the night before stored."""
    make_artifacts(root, sorted({n for names in SIGHTED.values() for n in names}))
    for run_id, names in SIGHTED.items():
        write_with_writer(root, run_id, names)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def test_retention_dry_run_lists_old_runs_and_bytes_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _history(tmp_path)
    before = _files(tmp_path)
    assert main(["gc", "--data-dir", str(tmp_path), "--keep-runs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"runs/{NIGHTS[0]}  (an old run (retention))" in out and NIGHTS[1] in out
    assert f"{artifact('a.1')}  (no kept observation references it)" in out
    assert artifact("d.1") not in out  # sighted by the kept night
    assert "dry run: 2 runs, 3 directories, 3 stored observations no kept run sighted" in out
    assert "`gero gc --keep-runs 1 --apply` removes them" in out
    assert _files(tmp_path) == before


@pytest.mark.slow
def test_retention_keeps_every_artifact_and_row_of_kept_observations(tmp_path: Path) -> None:
    _history(tmp_path)
    kept = {r: run_rows(tmp_path, r) for r in NIGHTS[1:]}
    result = gc.apply(DataRoot(tmp_path), gc.Retention(keep_runs=2))
    assert result.runs == NIGHTS[:1] and result.observations == 1 and not result.blockers
    assert result.size_bytes > 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == NIGHTS[1:]
    # b.1 and c.bad were stored by the removed night; the kept night sighted them.
    assert {r: run_rows(tmp_path, r) for r in NIGHTS[1:]} == kept
    for name in ("b.1", "c.bad", "d.1", "e.nan"):
        assert (tmp_path / artifact(name) / "case.json").is_file(), name
    assert not (tmp_path / artifact("a.1")).exists()
    with pytest.raises(GeroError, match="no observation id starts with"):
        resolve_observation(tmp_path, oid("a.1")[:12])
    assert resolve_observation(tmp_path, oid("b.1")[:12])["observation_id"] == oid("b.1")
    # A later run still deduplicates against what is kept, and gc goes on.
    make_artifacts(tmp_path, ["f.1"])
    write_with_writer(tmp_path, "20250104-020000-000004", ["d.1", "f.1"])
    assert gc.apply(DataRoot(tmp_path), gc.Retention(keep_runs=1)).runs == NIGHTS[1:]
    assert run_rows(tmp_path, "20250104-020000-000004")[0][0] in (oid("d.1"), oid("f.1"))
    assert sorted(p.name for p in (tmp_path / "artifacts").glob("*/*")) == sorted(
        Path(artifact(n)).name for n in ("d.1", "f.1"))
    assert len(list((tmp_path / "store").glob("*.parquet"))) == 1


def test_older_than_counts_from_each_run_start(tmp_path: Path) -> None:
    _history(tmp_path)
    rule = gc.Retention(older_than_days=1.5)
    now = datetime(2025, 1, 4, 2, 0, tzinfo=UTC)
    assert rule.dropped(tmp_path, NIGHTS, now) == NIGHTS[:2]
    assert gc.Retention(older_than_days=0).dropped(tmp_path, NIGHTS, now) == NIGHTS
    with pytest.raises(GeroError, match="not both"):
        gc.Retention(keep_runs=1, older_than_days=1)
    with pytest.raises(GeroError, match="at least 1"):
        gc.Retention(keep_runs=0)


@pytest.mark.slow
def test_findings_kept_for_runs_that_are_gone_are_garbage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _history(tmp_path)
    for night in NIGHTS:  # each keeps its findings under cache/findings/<run>
        assert main(["findings", "--data-dir", str(tmp_path), "--run", night]) in (0, 1)
    cache = tmp_path / "cache" / "findings"
    assert sorted(p.name for p in cache.iterdir()) == NIGHTS
    (cache / "20240101-000000-gone").mkdir()  # a run deleted by hand
    # Without a rule, only the folder of the run that is gone.
    listed = [g.path.as_posix() for g in gc.plan(DataRoot(tmp_path)).garbage
              if g.path.parts[0] == "cache"]
    assert listed == ["cache/findings/20240101-000000-gone"]
    # With retention, the dropped runs' findings go with them.
    result = gc.apply(DataRoot(tmp_path), gc.Retention(keep_runs=1))
    assert not result.blockers
    assert sorted(p.name for p in cache.iterdir()) == NIGHTS[-1:]
    capsys.readouterr()
    assert main(["findings", "--data-dir", str(tmp_path)]) in (0, 1)  # reads its own again
    assert "Traceback" not in capsys.readouterr().err
