"""One call in a child process, bounded in time: for backend work outside the worker pool.

A user's model can loop for ever or crash inside a kernel; the float64 shadow that ``gero
run --model`` computes while collecting cases, a replay and a parity export run such code
too. Here the call runs in a child (see ``start_method``) that dies with its caller and
is killed when it runs past its time; the caller gets the value, or an
``IsolatedFailure`` saying what happened in one sentence.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from gero_runner.process import start_method
from gero_runner.process.lifetime import exit_with_parent

T = TypeVar("T")


RAISED, CRASHED, KILLED, TIMED_OUT, CANCELLED = (
    "raised", "crashed", "killed", "timed-out", "cancelled")
"""How an isolated call failed (``IsolatedFailure.kind``): it raised (``raised`` holds the
exception's class), its process crashed on a signal or ended without an answer, was killed
(SIGKILL: the kernel's out-of-memory killer, or a person), ran out of its time, or its
caller cancelled it."""


class IsolatedFailure(Exception):
    """The isolated call raised, crashed or ran out of time (the message says which, and
    ``kind`` as data)."""

    def __init__(self, message: str, timed_out: bool = False, kind: str = RAISED,
                 raised: type[BaseException] | None = None) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.kind = TIMED_OUT if timed_out else kind
        self.raised = raised
        """The class of the exception the call raised (None: another kind, or a class that
        cannot travel back), for the caller to tell bad input from a failure."""


def _child(conn: Connection, parent: int, fn: Callable[..., Any], args: tuple[Any, ...],
           client: tuple[int, dict[str, str], str] | None = None) -> None:
    if client is None:
        exit_with_parent(parent)
    else:  # a fork server's child: its parent is the server
        exit_with_parent(os.getppid())
        start_method.adopt(client)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C does
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        value = fn(*args)
        payload = pickle.dumps((True, value), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # reported to the parent, which decides
        payload = pickle.dumps((False, f"{type(e).__name__}: {str(e)[:500]}"
                                if str(e) else traceback.format_exc(limit=4), _class_of(e)))
    conn.send_bytes(payload)
    conn.close()


def call_isolated(fn: Callable[..., T], *args: Any, timeout_s: float,
                  cancelled: Callable[[], bool] | None = None) -> T:
    """``fn(*args)`` in a child process; raises ``IsolatedFailure`` past ``timeout_s``.

    ``cancelled`` is polled a few times a second: when it says so, the child is killed
    (the explorer's replay uses it when the user leaves).
    """
    if threading.active_count() > 1:
        # Forking a process whose other threads hold locks (the explorer's workers, DuckDB)
        # can crash or hang the child: a fresh interpreter runs the call instead.
        return _call_in_interpreter(fn, args, timeout_s, cancelled)
    # Forked from the gero command; from the fork server for any other caller, whose
    # native threads (a runtime run in-process) a forked child could inherit mid-change.
    ctx = start_method.context()
    reader, writer = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, daemon=True, args=(
        writer, os.getpid(), fn, args, start_method.client_of(ctx)))
    start_method.start(process)
    writer.close()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise IsolatedFailure(f"timed out after {timeout_s:g} s", timed_out=True)
            if cancelled is not None and cancelled():
                raise IsolatedFailure("cancelled", kind=CANCELLED)
            ready = wait([reader, process.sentinel], timeout=min(left, 0.2))
            if reader in ready:
                try:
                    ok, value, *raised = pickle.loads(reader.recv_bytes())
                except (EOFError, OSError):
                    ok, value, raised = None, None, []
                if ok is None:
                    process.join(timeout=5)
                    raise _ended(process.exitcode)
                if not ok:
                    raise IsolatedFailure(str(value), raised=raised[0] if raised else None)
                result: T = value
                return result
            if process.sentinel in ready:
                process.join(timeout=5)
                raise _ended(process.exitcode)
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
        reader.close()


READY = b"\x01"
"""The new interpreter's first byte: it has the call and what it needs imported."""
STARTUP_S = 120.0
"""How long a new interpreter may take to start, beyond the call's own time."""


def _class_of(e: BaseException) -> type[BaseException] | None:
    """The exception's class, where it can be pickled (by reference: a class of a module
    the caller can import too)."""
    try:
        pickle.dumps(type(e))
    except Exception:  # a class defined where the caller cannot find it
        return None
    return type(e)


def _ended(exitcode: int | None) -> IsolatedFailure:
    """The failure of a child that ended without an answer."""
    if exitcode == -signal.SIGKILL:
        return IsolatedFailure("was killed (SIGKILL: out of memory, or killed by someone)",
                               kind=KILLED)
    return IsolatedFailure(_exit_message(exitcode), kind=CRASHED)


def _exit_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"crashed with {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"crashed with signal {-exitcode}"
    return f"exited with code {exitcode}"


def _call_in_interpreter(fn: Callable[..., T], args: tuple[Any, ...], timeout_s: float,
                         cancelled: Callable[[], bool] | None) -> T:
    """``fn(*args)`` in a new Python process (``python -m gero_runner.process.isolate``):
    the call and its result travel pickled over the child's stdin and stdout."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.Popen([sys.executable, "-m", "gero_runner.process.isolate",
                              str(os.getpid())], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    output: list[bytes] = []
    ready = threading.Event()

    def collect() -> None:
        assert child.stdout is not None
        if child.stdout.read(1) == READY:
            ready.set()
        output.append(child.stdout.read())

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    # The call's time starts once the new interpreter has imported what it calls: a budget
    # of a second or two is the call's, not Python's start-up on a loaded machine.
    started, deadline = time.monotonic(), None
    try:
        assert child.stdin is not None
        try:
            child.stdin.write(pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL))
            child.stdin.close()
        except BrokenPipeError:
            pass
        while child.poll() is None:
            now = time.monotonic()
            if deadline is None and ready.is_set():
                deadline = now + timeout_s
            if now > (deadline if deadline is not None else started + timeout_s + STARTUP_S):
                raise IsolatedFailure(f"timed out after {timeout_s:g} s", timed_out=True)
            if cancelled is not None and cancelled():
                raise IsolatedFailure("cancelled", kind=CANCELLED)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0.2)
        collector.join(timeout=30)
        answer: tuple[Any, ...] | None = None
        with contextlib.suppress(pickle.UnpicklingError, EOFError, ValueError, IndexError):
            answer = pickle.loads(output[0])
        if answer is None:
            raise _ended(child.returncode)
        if not answer[0]:
            raise IsolatedFailure(str(answer[1]), raised=answer[2] if len(answer) > 2 else None)
        result: T = answer[1]
        return result
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=5)


def _interpreter_main() -> None:
    parent = int(sys.argv[1])
    exit_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fn, args = pickle.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    try:
        payload = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # reported to the parent, which decides
        payload = pickle.dumps((False, f"{type(e).__name__}: {str(e)[:500]}", _class_of(e)))
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _interpreter_main()
