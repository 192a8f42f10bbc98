"""Replaying from the explorer a case that never ends, then quitting: the replay's child
process is killed and the explorer exits at once (it used to keep spinning after `q`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from conftest import gero_run, settle
from shared_helpers import never_ending_model, process_gone

from gero_runner.storage.artifacts import MANIFEST, load_array
from gero_runner.storage.hashing import sha256
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen

WAIT_S = 60.0


@pytest.fixture
def hanging_root(tmp_path: Path) -> Path:
    """A real one-case run whose evidence now holds a model that never ends (re-signed)."""
    root = tmp_path / "data"
    done = gero_run(root, "--ops", "Relu", "--dtypes", "float32", "--limit", "1",
                    "--no-contracts", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    (artifact,) = (p for p in (root / "artifacts").glob("*/*") if p.is_dir())
    (name, relative), = json.loads((artifact / "case.json").read_text())["inputs"].items()
    x = load_array(artifact, relative)
    (artifact / "model.onnx").write_bytes(never_ending_model(name, str(x.dtype), x.shape))
    manifest = json.loads((artifact / MANIFEST).read_text())
    manifest["files"]["model.onnx"] = sha256((artifact / "model.onnx").read_bytes())
    (artifact / MANIFEST).write_text(json.dumps(manifest))
    return root


def _replay_children() -> list[int]:
    """This process's children that run an isolated call (the replay's interpreter)."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"gero_runner.process.isolate" in cmdline:
                found.append(int(pid))
    return found


def _replaying() -> bool:
    """Some thread of this process is inside a replay (Textual's thread workers run in the
    event loop's executor, whose idle threads stay until the loop closes)."""
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_name == "replay_artifact":
                return True
            frame = frame.f_back  # type: ignore[assignment]
    return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.slow
async def test_replay_then_quit_kills_the_replay_and_exits(hanging_root: Path) -> None:
    app = GeroApp(hanging_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("r")  # opens the detail and replays the case: it never ends
        deadline = time.monotonic() + WAIT_S
        while not _replay_children():
            assert time.monotonic() < deadline, "the replay's child process never started"
            await pilot.pause(0.1)
        (child,) = _replay_children()
        assert isinstance(app.screen, DetailScreen)
        assert any(w.is_running and w.group == "detail-replay" for w in app.workers)
        quit_at = time.monotonic()
        await pilot.press("q")
    # The app has left run_test: its replay worker was cancelled and killed its child.
    deadline = time.monotonic() + 10
    while not process_gone(child):
        assert time.monotonic() < deadline, "the replay's child outlived the explorer"
        time.sleep(0.05)
    while _replaying():
        assert time.monotonic() < deadline, "the replay's thread is still waiting on it"
        time.sleep(0.05)
    assert time.monotonic() - quit_at < 10
    assert app.return_code in (0, None)
