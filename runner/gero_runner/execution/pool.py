"""Worker processes that survive what the backends do: exceptions, segfaults and hangs.

Each case runs in a child process. A child that dies (e.g. SIGSEGV inside a kernel) or runs
past the per-case timeout is replaced, and its case becomes an ``execution`` observation
carrying what happened; the run goes on. Results are keyed by case index, so the rows do
not depend on the number of workers.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from gero_runner.cases.base import CaseInstance
from gero_runner.execution import evaluate
from gero_runner.execution.evaluate import CaseResult, RunSettings

DEFAULT_TIMEOUT_S = 120.0


@dataclass
class Outcome:
    index: int
    result: CaseResult


def _worker_main(conn: Connection, settings: RunSettings) -> None:
    # The parent handles Ctrl-C; a worker just finishes or is terminated. A crash is
    # recorded as an observation, so an inherited fault handler's dump would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.disable()
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, case = message
        try:
            # Looked up at call time so tests can substitute the evaluator before forking.
            result = evaluate.evaluate_case(case, settings)
            conn.send((index, result, None))
        except Exception:  # an evaluator bug must not take the run down
            conn.send((index, None, traceback.format_exc(limit=8)))


class _Worker:
    def __init__(self, ctx: Any, settings: RunSettings) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, settings), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None
        self.case: CaseInstance | None = None
        self.started = 0.0

    def submit(self, index: int, case: CaseInstance) -> None:
        self.index, self.case, self.started = index, case, time.monotonic()
        self.conn.send((index, case))

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


def _death_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"worker process crashed with {name} while running this case"
    return f"worker process exited with code {exitcode} while running this case"


def run_cases(cases: Sequence[CaseInstance], settings: RunSettings, jobs: int = 1,
              timeout_s: float = DEFAULT_TIMEOUT_S,
              on_done: Callable[[Outcome], None] | None = None) -> Iterator[Outcome]:
    """Yield one Outcome per case (in completion order), isolating each in a worker."""
    ctx = mp.get_context("fork")
    pending = list(enumerate(cases))
    pending.reverse()
    workers = [_Worker(ctx, settings) for _ in range(max(1, min(jobs, len(cases))))]

    def fallback(worker: _Worker, message: str) -> Outcome:
        assert worker.index is not None and worker.case is not None
        rows = evaluate.execution_rows(worker.case, message)
        return Outcome(worker.index, CaseResult(rows, 0.0, time.monotonic() - worker.started))

    try:
        for w in workers:
            if pending:
                w.submit(*pending.pop())
        while any(w.index is not None for w in workers):
            busy = [w for w in workers if w.index is not None]
            now = time.monotonic()
            wait_for = min(max(0.0, w.started + timeout_s - now) for w in busy)
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                         timeout=wait_for)
            for i, w in enumerate(workers):
                if w.index is None:
                    continue
                outcome: Outcome | None = None
                replace = True  # the worker died or hung: start a fresh one
                if w.conn in ready:
                    try:
                        index, result, error = w.conn.recv()
                    except (EOFError, OSError):
                        w.process.join(timeout=5)
                        outcome = fallback(w, _death_message(w.process.exitcode))
                    else:
                        replace = False
                        outcome = (Outcome(index, result) if error is None
                                   else fallback(w, f"evaluator raised: {error}"))
                elif w.process.sentinel in ready:
                    w.process.join(timeout=5)
                    outcome = fallback(w, _death_message(w.process.exitcode))
                elif time.monotonic() - w.started > timeout_s:
                    outcome = fallback(w, f"timed out after {timeout_s:g} s; worker killed")
                if outcome is None:
                    continue
                if replace:
                    w.kill()
                    workers[i] = w = _Worker(ctx, settings)
                w.index = w.case = None
                if on_done is not None:
                    on_done(outcome)
                yield outcome
                if pending:
                    w.submit(*pending.pop())
    finally:
        for w in workers:
            w.stop()
        for w in workers:
            w.process.join(timeout=2)
            w.kill()
