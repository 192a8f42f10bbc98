"""``gero`` as a real process whose executor loses the outcome of some cases on purpose.

The cases whose operator is named in GERO_TEST_LOSE (comma-separated) run as usual, but
their outcome never reaches the run, as when a plan never assembled its case's result (a
``--model`` run once recorded 0 cases this way, status ``complete``, exit 0): a test
checks that the run says so instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from gero_cli import console
from gero_runner import run
from gero_runner.execution.pool import Outcome, run_cases

LOSE = set(filter(None, os.environ.get("GERO_TEST_LOSE", "").split(",")))


def _losing(cases: Sequence[Any], *args: Any, **kwargs: Any) -> Iterator[Outcome]:
    for outcome in run_cases(cases, *args, **kwargs):
        if cases[outcome.index].op_type not in LOSE:
            yield outcome


# The name run.py calls (imported there from the pool, not re-exported).
run.run_cases = _losing  # type: ignore[attr-defined]

if __name__ == "__main__":
    sys.exit(console())
