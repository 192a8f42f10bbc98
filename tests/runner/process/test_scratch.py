"""Scratch directories named after their process (issue 45 item 17): removed however their
block ends, and what a killed process left is removed by the next one to make one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gero_runner.process import scratch


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_scratch_directory_is_removed_however_its_block_ends(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), scratch.directory("gero-x-", tmp_path) as work:
        assert work.parent == tmp_path and scratch.owner(work.name, "gero-x-") == os.getpid()
        (work / "inner").mkdir()
        (work / "inner" / "file").write_text("x")
        raise RuntimeError("the work failed")
    assert list(tmp_path.iterdir()) == []


def test_what_an_ended_process_left_is_swept_and_nothing_else(tmp_path: Path) -> None:
    gone = tmp_path / f"gero-x-{dead_pid()}-abc"
    (gone / "deep").mkdir(parents=True)
    alive = tmp_path / f"gero-x-{os.getppid()}-abc"  # a process that runs
    alive.mkdir()
    others = [tmp_path / f"gero-y-{dead_pid()}-abc", tmp_path / "gero-x-legacy",
              tmp_path / "gero-x-12"]
    for path in others:
        path.mkdir()
    linked = tmp_path / f"gero-x-{dead_pid()}-link"
    linked.symlink_to(alive, target_is_directory=True)
    made = scratch.make("gero-x-", tmp_path)
    assert not gone.exists()
    assert all(p.exists() for p in [alive, *others, linked, made])
    assert scratch.sweep("gero-x-", tmp_path) == []  # its own is not stale
