"""One bounded call in a child: its value, its error, its timeout, its cancellation, with
and without other threads in the caller (then a fresh interpreter runs it, not a fork)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from gero_runner.execution.isolate import IsolatedFailure, call_isolated


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _fail() -> None:
    raise ValueError("bad case")


@pytest.fixture(params=["fork", "interpreter"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "fork":
        yield "fork"
        return
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # a caller with threads
    other.start()
    yield "interpreter"
    stop.set()
    other.join()


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
