"""Cases on an existing Dask distributed cluster (``gero run --executor dask``).

The client sends batches of cases; each Dask worker thread runs its batches in a
``pool.WorkerPool`` of one child process that it keeps between batches (the imports and
caches of a child are paid once), so a case that crashes or hangs kills that child, not
the Dask worker: the pool's per-case timeout and crash handling apply on the worker, and
the case becomes an ``execution`` observation exactly as in a local run. Dask never sees
a worker die for a case, so it never retries one; a Dask worker lost for another reason
(the machine went away) ends as ``KilledWorker`` after the scheduler's own retries, and
the cases of that batch become ``execution`` observations.

Workers may join after the run started (with another gero or runtime installed): every
batch checks the versions where it runs, and one that differs from the client's is sent
back unrun (``Refused``); its cases go to the other workers, and the run stops with one
sentence when no worker is left that matches.

Workers need not share a file system with the client: a case's evidence files come back
with its rows (``RunSettings.evidence_inline``), and the client publishes them into its
data root under the same content address, so the data root holds exactly what a local
run of the same cases writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import multiprocessing as mp
import os
import pickle
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from gero_runner import backends
from gero_runner.case import CaseInstance
from gero_runner.errors import GeroError
from gero_runner.execution.context import CaseResult, RunSettings
from gero_runner.execution.evaluate import execution_rows
from gero_runner.execution.pool import TICK_S, Outcome, Task, WorkerPool
from gero_runner.process import start_method
from gero_runner.storage.artifacts import publish

SCHEDULER_ENV = "GERO_DASK_SCHEDULER"
INSTALL_HINT = "pip install 'gero[dask]'"
BATCH_SECONDS = 1.0
"""A batch holds about this much work once case times are known: long enough that the
round trip to the scheduler is a small part of it, short enough that a Ctrl-C loses little
and the last batches spread over every worker."""
FIRST_BATCH = 4
"""Cases per batch before any case time is known."""
MAX_BATCH = 256
BATCH_BYTES = 32 * 1024 * 1024
"""A batch's pickled cases stay under this (a case larger than it goes alone)."""
CONNECT_S = 30.0
"""How long to wait for the scheduler, and for its first worker."""
PROBE_S = 5.0
"""How long the address may take to answer as a Dask scheduler before it is refused (a
server that is not Dask would hold the client's handshake forever)."""


def scheduler_address(option: str | None) -> str:
    """The scheduler to use: the option, else ``GERO_DASK_SCHEDULER``; one must be set."""
    address = option or os.environ.get(SCHEDULER_ENV, "")
    if not address:
        raise GeroError(f"--executor dask needs the scheduler's address: give --scheduler "
                        f"tcp://HOST:PORT or set {SCHEDULER_ENV}")
    return address


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise GeroError(f"--executor dask needs Dask distributed, which is not installed "
                        f"({e.name}): {INSTALL_HINT}") from None
    return distributed


# ---- on the worker -------------------------------------------------------------------

_POOLS: list[tuple[str, WorkerPool]] = []
"""Idle pools of this Dask worker process, by their settings and task (``repr``)."""
_POOLS_LOCK = threading.Lock()


def _pool_context() -> Any:
    """A fork server that has imported the evaluation once: children fork from it, never
    from the Dask worker (whose threads could leave a forked child holding a lock).

    Dask's nanny starts worker processes as daemons (``distributed.worker.daemon``), and
    multiprocessing refuses children to a daemon; the children here die with their
    worker anyway (``exit_with_parent``), which is what the flag is for, so it is lifted.
    """
    mp.current_process()._config.pop("daemon", None)  # type: ignore[attr-defined]
    return start_method.fork_server()


@contextlib.contextmanager
def _borrow_pool(settings: RunSettings, task: Task) -> Iterator[WorkerPool]:
    """A pool for these settings and task (one per running batch of this worker, kept when
    idle); the pools of others (an earlier run's) are closed when a new one is made."""
    key = repr((settings, task))
    with _POOLS_LOCK:
        found = next((i for i, (k, _) in enumerate(_POOLS) if k == key), None)
        if found is not None:
            stale, pool = [], _POOLS.pop(found)[1]
        else:
            stale = [p for k, p in _POOLS if k != key]
            _POOLS[:] = [(k, p) for k, p in _POOLS if k == key]
            pool = WorkerPool(settings, 1, _pool_context(), task=task)
    for old in stale:
        old.close()
    try:
        yield pool
    except BaseException:
        pool.close()
        raise
    with _POOLS_LOCK:
        _POOLS.append((key, pool))


@dataclass(frozen=True)
class Refused:
    """A batch a worker did not run: its versions differ from the client's."""

    worker: str
    differences: dict[str, tuple[str, str]]
    """name -> (the client's version, this worker's)."""

    def sentence(self) -> str:
        return ", ".join(f"{name} {theirs} (this machine {ours})"
                         for name, (ours, theirs) in sorted(self.differences.items()))


def run_batch(payload: bytes, settings: RunSettings, timeout_s: float, task: Task,
              expected: dict[str, str] | None = None
              ) -> list[tuple[int, CaseResult]] | Refused:
    """Run a batch of pickled ``(index, case)`` pairs on this worker (the Dask task), as
    ``task`` says (the client's, sent with the batch: ``checks.task`` for gero run); each
    result carries its evidence files (``CaseResult.evidence``) for the client. A worker
    whose versions differ from ``expected`` (a worker that joined late, set up otherwise)
    runs nothing and says so."""
    if expected:
        theirs = worker_versions()
        differences = {name: (version, theirs.get(name, "not installed"))
                       for name, version in expected.items() if theirs.get(name) != version}
        if differences:
            return Refused(_worker_address(), differences)
    batch: list[tuple[int, CaseInstance]] = pickle.loads(payload)
    # The client's data root may not exist here: the evidence travels with the rows.
    settings = replace(settings, data_root="", evidence_inline=True)
    with _borrow_pool(settings, task) as pool:
        return [(batch[outcome.index][0], outcome.result)
                for outcome in pool.run([case for _, case in batch], timeout_s)]


def dask_setup(worker: Any) -> None:
    """``dask worker --preload gero_runner.execution.cluster``: the fork server of the
    case processes starts with the worker (its imports done before the first batch)."""
    from multiprocessing import forkserver

    _pool_context()
    forkserver.ensure_running()


def _worker_address() -> str:
    try:
        return str(_distributed().get_worker().address)
    except (ValueError, GeroError):
        return "?"


@cache
def worker_versions() -> dict[str, str]:
    """What decides a worker's observation ids: gero's and each runtime's version."""
    import gero_runner

    versions = {"gero": gero_runner.__version__}
    for name in backends.installed_runtimes():
        versions[name] = backends.get(name).version()
    versions[backends.REFERENCE] = backends.get(backends.REFERENCE).version()
    return versions


# ---- on the client -------------------------------------------------------------------


class _Batcher:
    """Cuts the pending cases into batches of about ``BATCH_SECONDS`` of work."""

    def __init__(self, cases: Sequence[CaseInstance]) -> None:
        self.pending = deque(range(len(cases)))
        self.cases = cases
        self.case_seconds: float | None = None

    def learn(self, results: list[tuple[int, CaseResult]]) -> None:
        if results:
            mean = sum(r.total_seconds for _, r in results) / len(results)
            self.case_seconds = (mean if self.case_seconds is None
                                 else 0.5 * self.case_seconds + 0.5 * mean)

    def next(self, slots: int) -> tuple[list[int], bytes]:
        if self.case_seconds is None:
            size = FIRST_BATCH
        else:
            size = round(BATCH_SECONDS / max(self.case_seconds, 1e-4))
        # The tail is spread over every worker thread rather than left to a few.
        size = max(1, min(size, MAX_BATCH, math.ceil(len(self.pending) / max(1, slots))))
        indices: list[int] = []
        parts: list[tuple[int, CaseInstance]] = []
        nbytes = 0
        while self.pending and len(indices) < size:
            index = self.pending[0]
            nbytes += len(self.cases[index].model)
            if indices and nbytes > BATCH_BYTES:
                break
            indices.append(self.pending.popleft())
            parts.append((index, self.cases[index]))
        return indices, pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)


def _probe(address: str) -> None:
    """One sentence within seconds when nothing at ``address`` answers as a Dask scheduler
    (refused, unknown host, a server of something else)."""
    from distributed.comm import connect

    async def identity() -> Any:
        comm = await connect(address, timeout=PROBE_S)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), PROBE_S))
    except (OSError, TimeoutError) as e:
        why = str(e).splitlines()[0][:200] if str(e) else "no answer"
        raise GeroError(f"no Dask scheduler answers at {address} ({why}); check "
                        f"--scheduler or {SCHEDULER_ENV}") from None
    except Exception as e:  # a server of another protocol: whatever its bytes decode to
        raise GeroError(f"no Dask scheduler answers at {address} ({type(e).__name__}); "
                        f"check --scheduler or {SCHEDULER_ENV}") from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise GeroError(f"{address} answers, but not as a Dask scheduler; check --scheduler "
                        f"or {SCHEDULER_ENV}")


class DaskCluster:
    """A connection to a Dask distributed cluster that runs cases (a context manager).

    ``scheduler`` is ``tcp://HOST:PORT`` (default: ``$GERO_DASK_SCHEDULER``); connecting
    waits for the scheduler and for one worker, and says in one sentence what is missing.
    """

    def __init__(self, scheduler: str | None) -> None:
        address = scheduler_address(scheduler)
        self.distributed = _distributed()
        if "://" not in address or any(c.isspace() for c in address):
            raise GeroError(f"bad Dask scheduler address {address!r}: expected "
                            "tcp://HOST:PORT")
        try:  # before a client exists: one made for a bad address lingers on its way out
            from distributed.comm import parse_address
            from distributed.comm.registry import get_backend

            get_backend(parse_address(address)[0])
        except ValueError as e:
            raise GeroError(f"bad Dask scheduler address {address!r}: {e}") from None
        _probe(address)
        # The client's own logs (reconnection attempts, with tracebacks) would bury the one
        # sentence gero says about a scheduler that went away.
        for name in ("distributed.client", "distributed.comm", "distributed.core",
                     "distributed.utils", "distributed.batched"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            self.client = self.distributed.Client(address, timeout=CONNECT_S,
                                                  set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise GeroError(f"cannot reach the Dask scheduler at {address} ({e}); check "
                            f"--scheduler or {SCHEDULER_ENV}") from None
        except ValueError as e:
            raise GeroError(f"bad Dask scheduler address {address!r}: {e}") from None
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_S)
        except TimeoutError:
            self.client.close()
            raise GeroError(f"the Dask scheduler at {address} has no workers; start some "
                            f"with `dask worker {address}` on each machine") from None
        self.address = address

    def __enter__(self) -> DaskCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def check_workers(self, runtimes: Sequence[str]) -> None:
        """Every worker must compute what this machine would: the same gero and runtimes
        (they are in every observation's id)."""
        here = worker_versions()
        try:
            answers = self.client.run(worker_versions)
        except Exception as e:  # an import error on a worker comes back as itself
            raise GeroError(f"a Dask worker cannot run gero ({type(e).__name__}: {e}); "
                            f"install the same gero and runtimes on every worker") from None
        for address, theirs in sorted(answers.items()):
            for name in ["gero", *runtimes, backends.REFERENCE]:
                if theirs.get(name) != here.get(name):
                    raise GeroError(
                        f"Dask worker {address} has {name} "
                        f"{theirs.get(name, 'not installed')} but this machine "
                        f"{here.get(name, 'not installed')}: observation ids would differ; "
                        f"install the same versions on every worker")

    def _matching(self, refused: dict[str, Refused]) -> list[str] | None:
        """The workers a batch may go to: any (None) until one refused a batch, then those
        that did not; none left is the end of the run."""
        if not refused:
            return None
        workers = [w for w in self.client.scheduler_info()["workers"] if w not in refused]
        if not workers:
            why = "; ".join(f"{r.worker} has {r.sentence()}" for r in refused.values())
            raise GeroError(f"no Dask worker left with this machine's versions ({why}): "
                            "install the same versions on every worker, then finish the run "
                            "with --resume")
        return workers

    def _slots(self) -> int:
        """Worker threads in the cluster now (workers may join or leave)."""
        threads: dict[str, int] = self.client.nthreads()
        return max(1, sum(threads.values()))

    def run_cases(self, cases: Sequence[CaseInstance], settings: RunSettings,
                  timeout_s: float, on_done: Callable[[Outcome], None] | None = None,
                  tick: Callable[[], None] | None = None,
                  warn: Callable[[str], None] | None = None, *,
                  task: Task) -> Iterator[Outcome]:
        """``pool.run_cases`` on the cluster: one Outcome per case, in completion order,
        with its evidence already published in ``settings.data_root``. Leaving early
        (Ctrl-C, an error) cancels the batches not yet finished."""
        client, distributed = self.client, self.distributed
        here = worker_versions()
        expected = {name: here.get(name, "not installed")
                    for name in ("gero", *settings.backends, backends.REFERENCE)}
        refused: dict[str, Refused] = {}
        """Workers that sent a batch back, by address: no batch goes to them again."""
        futures: dict[Any, list[int]] = {}
        batcher = _Batcher(cases)
        prefix = f"gero-batch-{uuid.uuid4().hex[:12]}"
        numbers = itertools.count()
        slots = self._slots()
        recount = time.monotonic() + 5.0

        def refill() -> None:
            # Two batches per worker thread: one running, one queued to follow at once.
            while batcher.pending and len(futures) < 2 * slots:
                allowed = self._matching(refused)
                indices, payload = batcher.next(slots)
                future = client.submit(run_batch, payload, settings, timeout_s, task, expected,
                                       key=f"{prefix}-{next(numbers)}", pure=False,
                                       retries=0, workers=allowed,
                                       allow_other_workers=False)
                futures[future] = indices

        try:
            refill()
            while futures:
                try:
                    with client.as_current():
                        done, _ = distributed.wait(list(futures), timeout=TICK_S,
                                                   return_when="FIRST_COMPLETED")
                except TimeoutError:
                    done = set()
                except (Exception, asyncio.CancelledError) as e:
                    # The scheduler went away (killed, its machine gone): Dask cancels
                    # every future, and the run ends with what it kept.
                    futures.clear()
                    raise GeroError(f"lost the Dask scheduler at {self.address} mid-run "
                                    f"({type(e).__name__})") from None
                if tick is not None:
                    tick()
                if time.monotonic() > recount:
                    slots, recount = self._slots(), time.monotonic() + 5.0
                for future in done:
                    indices = futures.pop(future)
                    results = _batch_results(future, indices, cases, distributed)
                    if isinstance(results, Refused):
                        if results.worker not in refused and warn is not None:
                            warn(f"Dask worker {results.worker} has {results.sentence()}: "
                                 "its cases run on the other workers")
                        refused[results.worker] = results
                        batcher.pending.extendleft(reversed(indices))
                        refill()
                        continue
                    batcher.learn(results)
                    refill()
                    for index, result in results:
                        for relative, files in (result.evidence or {}).items():
                            publish(settings.data_root, relative, files)
                        outcome = Outcome(index, replace(result, evidence=None))
                        if on_done is not None:
                            on_done(outcome)
                        yield outcome
        finally:
            if futures:
                client.cancel(list(futures))


def _batch_results(future: Any, indices: list[int], cases: Sequence[CaseInstance],
                   distributed: Any) -> list[tuple[int, CaseResult]] | Refused:
    """A finished batch's results; a batch whose Dask worker died is ``execution`` rows."""
    try:
        results: list[tuple[int, CaseResult]] | Refused = future.result()
    except distributed.KilledWorker:
        message = ("the Dask worker running this case's batch died, and the scheduler gave "
                   "up on it (KilledWorker); gero does not run it again")
        return [(i, CaseResult(execution_rows(cases[i], message), 0.0, 0.0)) for i in indices]
    except Exception as e:
        raise GeroError(f"a Dask worker failed a batch: {type(e).__name__}: {e}") from None
    return results
