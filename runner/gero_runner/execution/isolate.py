"""One call in a child process, bounded in time: for backend work outside the worker pool.

A user's model can loop for ever or crash inside a kernel; the float64 shadow that ``gero
run --model`` computes while collecting cases, a replay and a parity export run such code
too. Here the call runs in a forked child that dies with its parent, and is killed when
it runs past its time; the caller gets the value, or an ``IsolatedFailure`` saying what
happened in one sentence.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
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

T = TypeVar("T")


def exit_with_parent(parent: int) -> None:
    """End this worker when the parent dies, however it dies (kill -9 included).

    A forked worker holds copies of the parent's ends of every pipe made before it, so it
    would never see end-of-file. Linux kills it on the parent's death (PR_SET_PDEATHSIG);
    elsewhere a thread watches the parent's pid.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="gero-parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1


class IsolatedFailure(Exception):
    """The isolated call raised, crashed or ran out of time (the message says which)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def _child(conn: Connection, parent: int, fn: Callable[..., Any], args: tuple[Any, ...]
           ) -> None:
    exit_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C does
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        value = fn(*args)
        payload = pickle.dumps((True, value), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # reported to the parent, which decides
        payload = pickle.dumps((False, f"{type(e).__name__}: {str(e)[:500]}"
                                if str(e) else traceback.format_exc(limit=4)))
    conn.send_bytes(payload)
    conn.close()


def call_isolated(fn: Callable[..., T], *args: Any, timeout_s: float,
                  cancelled: Callable[[], bool] | None = None) -> T:
    """``fn(*args)`` in a child process; raises ``IsolatedFailure`` past ``timeout_s``.

    ``cancelled`` is polled a few times a second: when it says so, the child is killed
    (the explorer's replay uses it when the user leaves).
    """
    ctx = mp.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(writer, os.getpid(), fn, args), daemon=True)
    process.start()
    writer.close()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise IsolatedFailure(f"timed out after {timeout_s:g} s", timed_out=True)
            if cancelled is not None and cancelled():
                raise IsolatedFailure("cancelled")
            ready = wait([reader, process.sentinel], timeout=min(left, 0.2))
            if reader in ready:
                try:
                    ok, value = pickle.loads(reader.recv_bytes())
                except (EOFError, OSError):
                    ok, value = None, None
                if ok is None:
                    process.join(timeout=5)
                    raise IsolatedFailure(_exit_message(process.exitcode))
                if not ok:
                    raise IsolatedFailure(str(value))
                result: T = value
                return result
            if process.sentinel in ready:
                process.join(timeout=5)
                raise IsolatedFailure(_exit_message(process.exitcode))
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
        reader.close()


def _exit_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"crashed with {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"crashed with signal {-exitcode}"
    return f"exited with code {exitcode}"
