"""One bounded call in a child: its value, its error, its timeout, its cancellation, with
and without other threads in the caller (then a fresh interpreter runs it, not a fork), from
the gero command (forked) and from any other caller (the fork server's child)."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from shared_helpers import FORKING

from gero_runner.process import start_method
from gero_runner.process.isolate import IsolatedFailure, call_isolated


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _fail() -> None:
    raise ValueError("bad case")


@pytest.fixture(params=[pytest.param("fork", marks=[pytest.mark.filterwarnings(FORKING),
                                                   pytest.mark.forks]),
                        "fork server", "interpreter"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "fork":  # as from the gero command
        monkeypatch.setattr(start_method, "START_METHOD", "fork")
    if request.param != "interpreter":  # one thread: a child process
        yield request.param
        return
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # a caller with threads
    other.start()
    yield "interpreter"
    stop.set()
    other.join()


@pytest.mark.slow
def test_value_error_timeout_and_cancel(mode: str) -> None:
    assert call_isolated(_sleep, 0.0, timeout_s=60) != os.getpid()
    with pytest.raises(IsolatedFailure, match="ValueError: bad case"):
        call_isolated(_fail, timeout_s=60)
    start = time.monotonic()
    with pytest.raises(IsolatedFailure, match=r"timed out after 0\.5 s") as caught:
        call_isolated(_sleep, 600.0, timeout_s=0.5)
    assert caught.value.timed_out and time.monotonic() - start < 30
    with pytest.raises(IsolatedFailure, match="cancelled"):
        call_isolated(_sleep, 600.0, timeout_s=600, cancelled=lambda: True)


def _isolated_call_answers(conn: Any) -> None:
    conn.send(call_isolated(_sleep, 0.0, timeout_s=60) != os.getpid())


@pytest.mark.filterwarnings(FORKING)
@pytest.mark.forks
@pytest.mark.slow
def test_a_forked_child_of_a_caller_with_a_fork_server_starts_its_own() -> None:
    # This process's fork server is running; a child forked from it cannot use it (Python
    # answers ChildProcessError) and must not keep it alive.
    call_isolated(_sleep, 0.0, timeout_s=60)
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_isolated_call_answers, args=(send,))
    child.start()
    try:
        assert receive.poll(60), "the child's isolated call gave no answer"
        assert receive.recv() is True
    finally:
        child.join(10)
    assert child.exitcode == 0


def _gero_error() -> None:
    from gero_runner.errors import ArtifactError

    raise ArtifactError("a tampered file")


def _abort() -> None:
    os.abort()


def _killed() -> None:
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
def test_how_a_call_failed_is_data(mode: str) -> None:
    """What the caller tells apart (gero localize: a GeroError is bad input, exit 2; a crash
    is exit 1)."""
    from gero_runner.errors import ArtifactError
    from gero_runner.process import isolate

    for fn, kind, raised, said in [
            (_fail, isolate.RAISED, ValueError, "ValueError: bad case"),
            (_gero_error, isolate.RAISED, ArtifactError, "ArtifactError: a tampered file"),
            (_abort, isolate.CRASHED, None, "crashed with SIGABRT"),
            (_killed, isolate.KILLED, None, "was killed (SIGKILL")]:
        with pytest.raises(IsolatedFailure) as caught:
            call_isolated(fn, timeout_s=60)
        failure = caught.value
        assert (failure.kind, failure.raised, str(failure)[:len(said)]) == (kind, raised,
                                                                          said), mode
    with pytest.raises(IsolatedFailure) as caught:
        call_isolated(_sleep, 600.0, timeout_s=0.2)
    assert caught.value.kind == isolate.TIMED_OUT
    with pytest.raises(IsolatedFailure) as caught:
        call_isolated(_sleep, 600.0, timeout_s=600, cancelled=lambda: True)
    assert caught.value.kind == isolate.CANCELLED
