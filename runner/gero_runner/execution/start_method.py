"""How worker processes start (read by ``execution.pool``), in a module of its own so
that the ``gero`` command sets it before importing anything heavy.

Fork is fast (a child has the parent's imports) and safe only from a process that holds no
threads of a backend: the ``gero`` command, which runs none in-process before its workers
start, says so with ``fresh_process()``. Any other caller (a notebook, a test suite, a Dask
worker) may have run ONNX Runtime, OpenVINO or DuckDB in-process, and a child forked from
it can inherit a lock or a thread pool mid-change: such children died with SIGSEGV on
their first case now and then in the test suite. Their workers start from a fork server.
"""

from __future__ import annotations

START_METHOD: str | None = None
"""``"fork"``, or None for a fork server. Tests whose workers must see a substitute made
in the parent (a fake evaluator) set ``"fork"`` too."""


def fresh_process() -> None:
    """The caller's process has run no backend and started no threads of one: fork."""
    global START_METHOD
    START_METHOD = "fork"
