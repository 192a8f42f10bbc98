"""``gero`` as a real process whose ``localize`` stops at a known point, for the tests that
kill it there (test_round4_explain.py).

GERO_TEST_STOP says where: ``child`` stops the child that runs the paths again inside its
work (its work folder and a tract copy of a graph made as the real ones are, in the child's
temporary directory); ``staging`` stops the parent while it writes the ``-o`` repro (its
region run and its staging folder beside ``-o`` made). The stopped process writes its pid
to GERO_TEST_READY and waits for the file GERO_TEST_GATE; every other step runs as usual.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gero_cli import console
from gero_runner.evidence import repro
from gero_runner.evidence.localize import observation

STOP = os.environ.get("GERO_TEST_STOP", "")
READY = os.environ.get("GERO_TEST_READY", "")
GATE = os.environ.get("GERO_TEST_GATE", "")


def _stop_here() -> None:
    Path(READY).write_text(str(os.getpid()))
    while not os.path.exists(GATE):
        time.sleep(0.02)


_localize_case = observation.localize_case


def _gated_case(directory: Path, row: dict[str, Any]) -> Any:
    with tempfile.TemporaryDirectory(prefix="gero-localize-"):
        fd, path = tempfile.mkstemp(suffix=".onnx", prefix="gero-tract-")
        _stop_here()
        os.close(fd)
        os.unlink(path)
    return _localize_case(directory, row)


class _GatedShutil:
    """``shutil`` for the repro writer, stopping where it copies into its staging folder."""

    def __getattr__(self, name: str) -> Any:
        return getattr(shutil, name)

    @staticmethod
    def copytree(*args: Any, **kwargs: Any) -> Any:
        _stop_here()
        return shutil.copytree(*args, **kwargs)


if STOP == "child":
    observation.localize_case = _gated_case  # the name the child's function calls
elif STOP == "staging":
    setattr(repro, "shutil", _GatedShutil())  # noqa: B010 (the module's own name for it)

if __name__ == "__main__":
    sys.exit(console())
