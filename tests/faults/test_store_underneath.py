"""The store changed underneath a reader (an explorer left open) by real ``gero``
processes: compactions and gc, and what killed writers leave behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_fault_injection import ENV, WAIT_S, gero

from gero.query.source import open_source
from gero_runner.storage.reader import sighted_ids

EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
       "--no-contracts", "--limit", "2"]

pytestmark = pytest.mark.slow


def test_an_open_run_reads_on_after_two_compactions_and_a_gc(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for name in ("r1", "r2"):
        gero("run", "--data-dir", str(root), *EXP, "--run-id", name, cwd=tmp_path)
    source = open_source(root, "r2")  # what the explorer holds open
    try:
        count = source.query("SELECT count(*) FROM obs")[0][0]
        rows = source.query("SELECT count(*) FROM evals")[0][0]
        assert count == rows > 0
        table_cursor = source.cursor()  # made before: the evaluations table keeps its own
        for name in ("r3", "r4"):
            gero("run", "--data-dir", str(root), *EXP, "--run-id", name, cwd=tmp_path)
            gero("compact", "--data-dir", str(root), cwd=tmp_path)
        assert not (root / "runs" / "r2" / "observations.parquet").exists()
        assert source.query("SELECT count(*) FROM obs")[0][0] == count
        assert source.query("SELECT count(*) FROM evals")[0][0] == rows
        assert table_cursor.execute("SELECT count(*) FROM obs_numbered").fetchone() == (count,)
        store = sorted((root / "store").glob("*.parquet"))
        gero("gc", "--apply", "--keep-runs", "3", "--data-dir", str(root), cwd=tmp_path)
        assert not any(p.exists() for p in store)  # gc rewrote the store without r1
        assert source.query("SELECT count(*) FROM obs")[0][0] == count
    finally:
        source.close()


def test_temporary_files_of_killed_writers_are_removed_by_compact_and_gc(
        tmp_path: Path) -> None:
    """kill -9 during a store write leaves ``.gero-*.tmp`` files; nothing else removes
    them. A real writer is killed mid-write of a store file, then compact and gc run."""
    root = tmp_path / "data"
    gero("run", "--data-dir", str(root), *EXP, "--run-id", "one", cwd=tmp_path)
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys\n"
         "from gero_runner.storage import store\n"
         "def write(name):\n"
         "    open(name, 'wb').write(b'x' * 65536)\n"
         "    print('writing', flush=True)\n"
         "    os.kill(os.getpid(), 9)\n"
         "store.write_file(store.Path(sys.argv[1]), write)\n",
         str(root / "store" / "observations-000009.parquet")],
        env=ENV, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    writer.wait(timeout=WAIT_S)
    run_left = root / "runs" / "one" / ".gero-killed.tmp"
    run_left.write_bytes(b"y" * 1000)  # as a save killed mid-write of a run's table leaves
    (left,) = (root / "store").glob(".gero-*.tmp")
    done = gero("gc", "--data-dir", str(root), cwd=tmp_path)
    assert f"store/{left.name}" in done.stdout and "runs/one/.gero-killed.tmp" in done.stdout
    done = gero("compact", "--data-dir", str(root), cwd=tmp_path)
    assert "merged 1 runs" in done.stdout and "2 replaced files removed" in done.stdout
    assert not left.exists() and not run_left.exists()
    ids = sighted_ids(root, "one")
    assert ids and len(ids) == len(set(ids))
    left.write_bytes(b"z")
    gero("gc", "--apply", "--data-dir", str(root), cwd=tmp_path)
    assert not left.exists()
