"""mypy --strict holds on the modules pyproject's [tool.mypy] names (runner, explorer, tests).

The default cache (.mypy_cache, git-ignored) makes a rerun take a second or two; a cold run
(CI's fresh clone) needs about 35 s of CPU, the tests about 5 s of it, PyTorch's sources
being skipped.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_strict_passes() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra)")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
