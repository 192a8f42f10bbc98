"""``gero`` as a real process that notes each worker process its pool starts.

Every ``gero_runner.execution.pool._Worker`` is one child process: this wrapper appends
``worker:PID`` to the file GERO_TEST_WORKER_LOG for each one started, and ``unit:N`` for
each case or part sent to a worker, then runs the ``gero`` command as usual (its workers
forked from it), so a test counts the workers a run started against the units it ran.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gero_cli import console
from gero_runner.execution import pool

LOG = os.environ["GERO_TEST_WORKER_LOG"]
_init = pool._Worker.__init__
_submit = pool._Worker.submit


def _note(line: str) -> None:
    with open(LOG, "a") as f:
        f.write(line + "\n")


def _counted_init(self: pool._Worker, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    _note(f"worker:{self.process.pid}")


def _counted_submit(self: pool._Worker, unit: Any, message: bytes,
                    blobs: dict[str, bytes] | None = None) -> bool:
    sent = _submit(self, unit, message, blobs)
    if sent:
        _note(f"unit:{unit.case}")
    return sent


pool._Worker.__init__ = _counted_init  # type: ignore[method-assign]
pool._Worker.submit = _counted_submit  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(console())
