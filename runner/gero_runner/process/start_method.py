"""How child processes start (the worker pool's, an isolated call's), in a module of its
own so that the ``gero`` command sets it before importing anything heavy.

Fork is fast (a child has the parent's imports) and safe only from a process that holds no
threads of a backend: the ``gero`` command, which runs none in-process before its workers
start, says so with ``fresh_process()``. Any other caller (a notebook, a test suite, a Dask
worker) may have run ONNX Runtime, OpenVINO or DuckDB in-process, and a child forked from
it can inherit a lock or a thread pool mid-change: such children died with SIGSEGV on
their first case now and then in the test suite. Their workers start from a fork server.

Neither the fork server nor its children import the caller's ``__main__``: they run
gero's own functions only, and a script without ``if __name__ == "__main__":`` would
otherwise run again in each of them (starting runs of its own).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import threading
from multiprocessing import forkserver, spawn
from typing import Any

from gero_runner.process.lifetime import exit_with_process

START_METHOD: str | None = None
"""``"fork"``, or None for a fork server. Tests whose workers must see a substitute made
in the parent (a fake evaluator) set ``"fork"`` too."""


def fresh_process() -> None:
    """The caller's process has run no backend and started no threads of one: fork."""
    global START_METHOD
    START_METHOD = "fork"


PRELOAD = ("onnxruntime", "onnx.reference.ops", "numpy.random",
           "gero_runner.execution.evaluate", "gero_runner.checks.task",
           "gero_runner.checks.contracts.run", "gero_runner.checks.variants.run",
           "gero_runner.cases.synthetic.registry")
"""What the fork server imports once (a missing name costs only time: its import then
happens in each child, on its first case)."""


_NO_FORK_ONCE_LOADED: set[str] = set()
"""Modules of runtimes whose threads do not survive a fork (``Backend.survives_fork``)."""


def no_fork_once_loaded(module: str) -> None:
    """A runtime says (as its backend class is made) that once ``module`` is loaded in a
    process, that process's children must not be forked (this layer imports no backend)."""
    _NO_FORK_ONCE_LOADED.add(module)


def context() -> Any:
    """Fork when the caller said its process is fresh, unless a runtime whose threads do
    not survive a fork has been loaded since (``no_fork_once_loaded``: OpenVINO's thread
    pool, whose forked child hangs on its first inference). Otherwise a fork server that
    has imported the evaluation once."""
    if START_METHOD == "fork" and not any(m in sys.modules for m in _NO_FORK_ONCE_LOADED):
        return mp.get_context("fork")
    return fork_server()


def fork_server() -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


_starting = threading.local()
"""Set while this thread starts one of gero's processes (``start``)."""
_preparation_data = spawn.get_preparation_data


def _without_callers_main(name: str) -> dict[str, Any]:
    """What a fork server (or its child) is told to prepare: without the caller's main
    module while gero starts its own process."""
    data: dict[str, Any] = _preparation_data(name)
    if getattr(_starting, "active", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


spawn.get_preparation_data = _without_callers_main  # looked up by name at each start


def start(process: Any) -> None:
    """Start one of gero's processes (a worker, an isolated call): the fork server it may
    start first, and the child, never import the caller's ``__main__``."""
    _starting.active = True
    try:
        process.start()
    finally:
        _starting.active = False


def client_of(ctx: Any) -> tuple[int, dict[str, str], str] | None:
    """What a fork server's child needs of the process it works for (see ``adopt``);
    None for a forked child, which has it already."""
    if ctx.get_start_method() == "fork":
        return None
    return os.getpid(), dict(os.environ), os.getcwd()


def adopt(client: tuple[int, dict[str, str], str]) -> None:
    """In a fork server's child: end with the process it works for (not only with the
    server), and take that process's environment and directory as they are now (the
    server has those of when it started: a variable set since, a relative data root)."""
    pid, environment, directory = client
    exit_with_process(pid)
    os.environ.clear()
    os.environ.update(environment)
    with contextlib.suppress(OSError):
        os.chdir(directory)


def _forget_fork_server() -> None:
    """In a forked child: a fork server the parent started is not this process's (asking
    it fails with ChildProcessError, and holding its keep-alive pipe keeps it alive); this
    process starts its own when it needs one."""
    server = getattr(forkserver, "_forkserver", None)
    if getattr(server, "_forkserver_pid", None) is None:
        return
    alive = server._forkserver_alive_fd  # type: ignore[union-attr]
    server._forkserver_pid = server._forkserver_address = None  # type: ignore[union-attr]
    server._forkserver_alive_fd = None  # type: ignore[union-attr]
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)


os.register_at_fork(after_in_child=_forget_fork_server)
