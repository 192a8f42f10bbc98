"""``gero run --resume`` of a run killed with kill -9, in real processes: only a run of the
root (by id or prefix), only with its own options and the versions that started it."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from test_fault_injection import (
    FOUND,
    OPS,
    WAIT_S,
    Baseline,
    baseline,  # noqa: F401 (the module's fixture)
    gero,
    record,
    snapshot,
    start_gated,
    stored_ids,
    wait_for,
)

from gero_runner.storage.reader import sighted_ids

pytestmark = pytest.mark.slow


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file()}


def _files(root: Path) -> dict[str, bytes]:
    """The stopped run's files but its lock file (a refused resume may take and drop it)."""
    return {k: v for k, v in snapshot(root, "stopped-run").items() if k != ".running"}


def _one_sentence(done: object) -> str:
    stderr = getattr(done, "stderr", "")
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    return str(line)


def test_resume_takes_a_run_of_the_root_its_options_and_versions(
        tmp_path: Path, baseline: Baseline) -> None:  # noqa: F811
    root, gate = tmp_path / "data", tmp_path / "gate"
    run = start_gated("run", "--data-dir", str(root), *OPS, "--run-id", "stopped-run",
                      cwd=tmp_path, gate=gate, gated="Relu")
    wait_for(lambda: record(root, "stopped-run").get("case_count") == baseline.exp_cases,
             "the finished cases to be saved")
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=WAIT_S)
    assert record(root, "stopped-run")["gero_version"]

    # A copy of the run outside the root: `--resume ../../outside` must not write there.
    outside = tmp_path / "outside"
    shutil.copytree(root / "runs" / "stopped-run", outside)
    before_outside = _tree(outside)
    before_run = _files(root)
    for path in ("../../outside", str(outside), "../stopped-run"):
        done = gero("run", "--data-dir", str(root), "--resume", path, cwd=tmp_path, check=2)
        assert "not a path" in _one_sentence(done)
    assert _tree(outside) == before_outside

    # New options would be ignored: refused, naming them.
    done = gero("run", "--data-dir", str(root), "--resume", "stopped-run", "--ops", "Abs",
                "--seed", "3", "--rtol", "float32=1e-3", cwd=tmp_path, check=2)
    line = _one_sentence(done)
    assert "ops (--ops)" in line and "seed (--seed)" in line and "rtol (--rtol)" in line
    assert "would be ignored" in line

    # Another gero (or runtime) started it: refused, naming the versions.
    run_json = root / "runs" / "stopped-run" / "run.json"
    original = run_json.read_text()
    run_json.write_text(json.dumps({**json.loads(original), "gero_version": "0.0.1"}))
    done = gero("run", "--data-dir", str(root), "--resume", "stopped-run", cwd=tmp_path,
                check=2)
    assert "started with gero 0.0.1 (now " in _one_sentence(done)
    run_json.write_text(original)
    assert _files(root) == before_run

    # A unique id prefix, like every other command's --run.
    done = gero("run", "--data-dir", str(root), "--resume", "stopped", cwd=tmp_path,
                check=FOUND)
    assert "run stopped-run: " in done.stdout
    assert record(root, "stopped-run")["status"] == "complete"
    assert set(sighted_ids(root, "stopped-run")) == baseline.ids
    ids = stored_ids(root)
    assert len(ids) == len(set(ids)) == len(baseline.ids)
    assert _tree(outside) == before_outside
