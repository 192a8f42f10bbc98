"""A case asked for whose outcome the executor never gives is said, never a silent
``complete`` run (a ``--model`` run once recorded 0 cases with status complete, exit 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_fault_injection import ENV, FOUND, WAIT_S, gero, record

LOSING_GERO = Path(__file__).with_name("losing_gero.py")
OPS = ["--ops", "Exp,Relu", "--dtypes", "float32", "--repeats", "1", "--jobs", "1"]


def test_a_lost_case_stops_the_run_as_interrupted_and_resume_runs_it(tmp_path: Path) -> None:
    root = tmp_path / "data"
    lost = subprocess.run(
        [sys.executable, str(LOSING_GERO), "run", "--data-dir", str(root), *OPS,
         "--run-id", "lossy"], cwd=tmp_path, text=True, capture_output=True,
        timeout=WAIT_S, env={**ENV, "GERO_TEST_LOSE": "Relu"})
    assert lost.returncode == 1, lost.stderr
    kept = record(root, "lossy")
    cases = (root / "runs" / "lossy" / "cases.txt").read_text().splitlines()
    assert kept["status"] == "interrupted"
    assert cases and all(c.split("/")[1] == "Exp" for c in cases)
    assert kept["case_count"] == len(cases)
    (line,) = lost.stderr.strip().splitlines()
    assert line.startswith("gero: error: gero lost ")
    assert "/Relu/" in line and "no outcome was recorded" in line
    assert "gero run --resume lossy" in line

    # The plain gero finishes it: the lost cases run, the Exp cases are not run twice.
    resumed = gero("run", "--data-dir", str(root), "--resume", "lossy", cwd=tmp_path,
                   check=FOUND)
    assert "gero lost" not in resumed.stderr
    done = record(root, "lossy")
    assert done["status"] == "complete"
    every = (root / "runs" / "lossy" / "cases.txt").read_text().splitlines()
    assert every[:len(cases)] == cases
    rest = every[len(cases):]
    assert rest and all(c.split("/")[1].startswith("Relu") for c in rest)
    assert sorted(c for c in rest if f" {c}" in line or f"({c}" in line) == sorted(rest)
    assert len(every) == done["case_count"]
