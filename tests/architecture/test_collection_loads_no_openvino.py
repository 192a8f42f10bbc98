"""Collecting the tests loads no runtime whose threads do not survive a fork (OpenVINO):
once it is in a process, that process's children start from a fork server, so every
``fork_workers`` test that xdist later runs in it loses the substitute it made (three such
tests failed in CI after a module-level ``pytest.importorskip("openvino")``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CODE = """
import sys, pytest
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"])
print("LOADED", "openvino" in sys.modules, int(code))
"""


def test_collecting_the_tests_does_not_load_openvino() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", CODE], cwd=root, capture_output=True,
                          text=True, timeout=300)
    last = done.stdout.strip().splitlines()[-1]
    assert last == "LOADED False 0", done.stdout[-2000:] + done.stderr[-2000:]
