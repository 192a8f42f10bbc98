"""``gero`` as a real process whose cases of some operators wait for a gate file.

The fault-injection tests start it to stop a run at a known point (kill -9, SIGTERM, two
runs at once) without sleeping: cases of the operators in GERO_TEST_GATED wait in their
worker until the file GERO_TEST_GATE exists; every other case runs as usual. With
GERO_TEST_LIBRARY set it runs as a library caller would (``main``, not the ``gero``
command): its workers start from a fork server, which imports this module again.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from gero_cli import console, main
from gero_runner.checks import task
from gero_runner.request import PATHS_NEEDED

GATED = set(filter(None, os.environ.get("GERO_TEST_GATED", "").split(",")))
GATE = os.environ.get("GERO_TEST_GATE", "")
_evaluate = task.evaluate_case


def _gated(case: Any, settings: Any, paths: str = PATHS_NEEDED) -> Any:
    if case.op_type in GATED:
        while not os.path.exists(GATE):
            time.sleep(0.02)
    return _evaluate(case, settings, paths)


task.evaluate_case = _gated

if __name__ == "__main__":
    sys.exit(main() if os.environ.get("GERO_TEST_LIBRARY") else console())
