"""The store changed underneath a reader (an explorer left open) by real ``gero``
processes: compactions and gc, and what killed writers leave behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_fault_injection import gero

from gero.query.source import open_source

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
