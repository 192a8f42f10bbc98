"""``openvino==VERSION`` (issue 42): an OpenVINO release runs in a worker of its own
interpreter as ONNX Runtime's do. Here the interpreter named with ``--env`` is this one
(its installed OpenVINO): every releases row is bit-identical, with the paths the worker's
plugin default precision gives."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from shared_helpers import rows_of

from gero_runner.backends.openvino import default_precision


@pytest.mark.slow
def test_an_openvino_release_runs_in_its_worker(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    release = f"openvino=={metadata.version('openvino')}"
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Relu",
         "--dtypes", "float32", "--backends", f"{release},openvino",
         "--env", f"{release}={sys.executable}", "--no-contracts", "--jobs", "1",
         "--run-id", "ov", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: the suite's own findings
    rows = rows_of(tmp_path, "ov")
    releases = [r for r in rows if r["check"] == "releases"]
    default = default_precision()
    settings = {"f32"} if default == "f32" else {"f32", f"{default}-default"}
    assert {r["optimization"] for r in releases} == settings
    assert {(r["backend"], r["reference"]) for r in releases} == {
        ("openvino", f"{release}:{r['optimization']}") for r in releases}
    assert {r["result"] for r in releases} == {"passed"}  # the same build: the same bits
    # the release's own paths are checked as any runtime's
    ran = [r for r in rows if r["backend"] == release]
    assert {r["optimization"] for r in ran} == settings
    assert not [r for r in ran if r["result"] == "execution"]

