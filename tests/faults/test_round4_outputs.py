"""Run order under real ``gero`` processes (issue 45).

Runs are ordered by the start time their records say, not by id (``ci-100`` after
``ci-99``): the default run, the previous-run baseline, the run picker and ``gc
--keep-runs``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_fault_injection import gero

from gero_runner.storage.runs import list_runs

pytestmark = pytest.mark.slow

EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
       "--no-contracts", "--limit", "1"]
"""A run of one case (about a second)."""


def _sentence(done: subprocess.CompletedProcess[str]) -> str:
    """The one line of stderr (warnings aside), with no traceback."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("gero: warning:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file of a data root but its lock and the findings cache (the store's own)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock" and "cache" not in p.relative_to(root).parts}


def _entries(root: Path) -> set[str]:
    """Every path in a data root (directories and empty files too) but its lock and cache."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.name != ".lock" and "cache" not in p.relative_to(root).parts}


# Run order ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ci-99`` then ``ci-100``: in string order ci-100 comes first."""
    root = tmp_path_factory.mktemp("ci") / "data"
    for run_id in ("ci-99", "ci-100"):
        gero("run", "--data-dir", str(root), *EXP, "--run-id", run_id, cwd=root.parent)
    return root


def _newest(root: Path, cwd: Path) -> tuple[str, str]:
    """(the run `gero summary` opens by default, the baseline `gero findings` takes)."""
    done = gero("summary", "--data-dir", str(root), "--format", "json", cwd=cwd, check=None)
    assert done.returncode in (0, 1), done.stderr
    findings = gero("findings", "--data-dir", str(root), "--format", "json", cwd=cwd,
                    check=None)
    assert findings.returncode in (0, 1), findings.stderr
    report = json.loads(findings.stdout)
    assert report["run_id"] == json.loads(done.stdout)["run"]["run_id"]
    return report["run_id"], report["baseline_run_id"]


def test_runs_are_ordered_by_their_start_not_by_their_id(tmp_path: Path,
                                                         ci_runs: Path) -> None:
    root = tmp_path / "data"
    shutil.copytree(ci_runs, root)
    assert _newest(root, tmp_path) == ("ci-100", "ci-99")
    assert [r.run_id for r in list_runs(root)] == ["ci-100", "ci-99"]  # the run picker
    done = gero("gc", "--data-dir", str(root), "--keep-runs", "1", "--apply", cwd=tmp_path)
    assert "runs/ci-99" in done.stdout and "runs/ci-100" not in done.stdout
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["ci-100"]
    assert _newest(root, tmp_path)[0] == "ci-100"


def test_runs_without_a_recorded_start_are_ordered_by_their_files(
        tmp_path: Path, ci_runs: Path) -> None:
    """A record without ``started_at`` (a gero before it, a hand-made run): its id's
    date when it has one, else the oldest modification time of its run's files."""
    root = tmp_path / "data"
    shutil.copytree(ci_runs, root)
    when = 1_700_000_000.0
    for offset, run_id in ((0.0, "ci-99"), (60.0, "ci-100")):
        record_file = root / "runs" / run_id / "run.json"
        record = json.loads(record_file.read_text())
        del record["started_at"]
        record_file.write_text(json.dumps(record))
        for path in (root / "runs" / run_id).iterdir():
            os.utime(path, (when + offset, when + offset))
    assert _newest(root, tmp_path)[0] == "ci-100"
    gero("gc", "--data-dir", str(root), "--keep-runs", "1", "--apply", cwd=tmp_path)
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["ci-100"]
