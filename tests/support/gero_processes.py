"""Real ``gero`` processes for the tests that need one: the command itself, and the
environment of one that registers runtimes from temporary modules ($GERO_RUNTIME_MODULES)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pythonpath(*first: Path) -> str:
    """The checkout's own packages ahead of whatever is installed (and of what the
    environment already put there)."""
    parts = [str(p) for p in (*first, ROOT / "runner", ROOT / "src")]
    return os.pathsep.join([*parts, os.environ.get("PYTHONPATH", "")])


def gero(*args: str, env: Mapping[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m gero_cli ARGS`` with its output captured as text (``env`` defaults to
    this process's, with the checkout's packages on PYTHONPATH)."""
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300,
                          env=dict(env) if env is not None else {**os.environ,
                                                                  "PYTHONPATH": _pythonpath()})


def runtime_modules_env(tmp: Path, modules: Mapping[str, str], **extra: str) -> dict[str, str]:
    """The environment of a gero that registers a runtime from each of ``modules`` (module
    name -> its source), written to ``tmp/modules``; ``extra`` are variables they read."""
    folder = tmp / "modules"
    folder.mkdir(exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(source)
    return {**os.environ, **extra, "GERO_RUNTIME_MODULES": ",".join(modules),
            "PYTHONPATH": _pythonpath(folder)}
