"""Compaction beside real runs, in real processes: a run that starts while the store is
being compacted, and a compaction while a run is running, lose nothing."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from test_fault_injection import ENV, WAIT_S, gero, record, start_gated, stored_ids, wait_for

from gero_runner.storage.index import read_index
from gero_runner.storage.reader import sighted_ids

GATED_COMPACT = Path(__file__).with_name("gated_compact.py")
EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1"]
EXP_RELU = ["--ops", "Exp,Relu", "--dtypes", "float32", "--repeats", "1", "--jobs", "1"]

pytestmark = pytest.mark.slow


def test_a_run_started_during_compaction_waits_and_loses_nothing(tmp_path: Path) -> None:
    root, gate, holding = tmp_path / "data", tmp_path / "gate", tmp_path / "holding"
    gero("run", "--data-dir", str(root), *EXP, "--run-id", "first", cwd=tmp_path)
    compacting = subprocess.Popen(
        [sys.executable, str(GATED_COMPACT), "compact", "--data-dir", str(root)],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**ENV, "GERO_TEST_GATE": str(gate), "GERO_TEST_HOLDING": str(holding)})
    wait_for(holding.exists, "the compaction to hold the lock with its store file written")
    during = subprocess.Popen([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(root),
                               *EXP, "--run-id", "during"], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    with contextlib.suppress(subprocess.TimeoutExpired):
        during.wait(timeout=2.0)  # it waits for the lock the compaction holds
    assert during.returncode is None and not (root / "runs" / "during").exists()
    gate.touch()
    out, err = compacting.communicate(timeout=WAIT_S)
    assert compacting.returncode == 0, err
    assert "merged 1 runs" in out
    _, err = during.communicate(timeout=WAIT_S)
    assert during.returncode == 0, err
    assert record(root, "during").get("status") == "complete"
    # The run sighted every observation again (by the keys compaction kept) and stored none.
    assert sorted(sighted_ids(root, "during")) == sorted(sighted_ids(root, "first"))
    assert record(root, "during").get("new_observation_count") == 0
    ids = stored_ids(root)
    assert len(ids) == len(set(ids)) == len(sighted_ids(root, "first"))
    assert read_index(root).compacted == {"first"}


def test_a_compaction_beside_a_running_run_leaves_it_be(tmp_path: Path) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    gero("run", "--data-dir", str(root), *EXP, "--run-id", "first", cwd=tmp_path)
    running = start_gated("run", "--data-dir", str(root), *EXP_RELU, "--run-id", "running",
                          cwd=tmp_path, gate=gate, gated="Relu")
    cases = root / "runs" / "running" / "cases.txt"
    wait_for(lambda: cases.is_file() and cases.read_text().strip() != "", "a save of the run")
    done = gero("compact", "--data-dir", str(root), cwd=tmp_path)
    assert "merged 1 runs" in done.stdout and "left loose: running: running" in done.stderr
    gate.touch()
    _, err = running.communicate(timeout=WAIT_S)
    assert running.returncode in (0, 1), err
    first, later = set(sighted_ids(root, "first")), set(sighted_ids(root, "running"))
    assert first < later and len(later) == record(root, "running")["observation_count"]
    ids = stored_ids(root)
    assert len(ids) == len(set(ids)) and set(ids) == later
    assert "merged 1 runs" in gero("compact", "--data-dir", str(root), cwd=tmp_path).stdout
    assert set(stored_ids(root)) == later == set(sighted_ids(root, "running"))
