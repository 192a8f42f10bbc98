"""Worker processes that survive what the backends do: exceptions, segfaults and hangs.

Each case runs in a child process, as the ``Task`` the layer above gives says (``gero
run``'s: ``checks.task``). A child that dies (e.g. SIGSEGV inside a kernel) or runs
past the per-case timeout is replaced, and its case becomes an ``execution`` observation
carrying what happened; the run goes on. Results are keyed by case index, so the rows do
not depend on the number of workers. A case the task splits (``Task.plan``: a model case)
runs as parts instead, each under its own budget on whichever worker is free; a part that
dies or runs out is told to its plan (``execution.plan``), which keeps the case's other
parts and assembles the case. A worker holds at most one case in reserve behind the
one it runs; when it dies, the case it was running is the first of its queue, and the one
in reserve goes back to the pending cases.

Workers are forked from the ``gero`` command and started from a fork server everywhere
else (see ``process.start_method``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import faulthandler
import hashlib
import io
import os
import pickle
import signal
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from gero_runner.errors import GeroError
from gero_runner.execution import paths
from gero_runner.execution.context import CaseResult
from gero_runner.execution.plan import Activity, Part, Plan, Running
from gero_runner.process import start_method
from gero_runner.process.lifetime import exit_with_parent
from gero_runner.request import DEFAULT_TIMEOUT_S
from gero_runner.schema import Observation
from gero_runner.storage.store import batch_bytes


@dataclass
class Outcome:
    index: int
    result: CaseResult


@dataclass(frozen=True)
class DiskFullReport:
    """A worker's answer when writing a case's evidence found the disk full."""

    filename: str


@dataclass(frozen=True)
class Refusal:
    """A worker's answer when the task refused its input (a ``GeroError``: the user's module
    does not import, its outputs do not fit the kinds given): the run stops and says so."""

    message: str


@dataclass(frozen=True)
class Task:
    """What workers do with each item, and the rows of an item whose worker died or hung.

    Each is a module-level function or a module-level class's instance (a fork server
    pickles them by name). ``evaluate`` runs
    in a worker; ``failed(item, settings, message, running)`` runs in the parent, with the
    path the worker was inside (``backend\toptimization``, empty if unknown). With
    ``refuses`` set, a ``GeroError`` from ``evaluate`` stops the run with its message
    instead of becoming the item's row. ``plan(item, settings, timeout_s)`` splits an item
    into parts (a ``Plan``), or returns None to run it whole; a part is run by its own
    ``run`` in the worker. The layer above makes the task: this one never names a case's
    checks or its plan.
    """

    evaluate: Callable[[Any, Any], CaseResult]
    failed: Callable[[Any, Any, str, str], list[Observation]]
    refuses: bool = False
    plan: Callable[[Any, Any, float], Plan | None] | None = None


TICK_S = 1.0
PREFETCH_BYTES = 48 * 1024
"""A worker is sent its next case while it still runs one, when that case pickles this
small: it starts at once instead of waiting for the parent's round trip. A larger case is
sent only to an idle worker, so the parent never blocks on a full pipe (and keeps watching
the other workers' timeouts)."""


RUNNING_BYTES = 128
"""Room for the running path's ``backend\toptimization`` in the worker's shared buffer."""

BLOB_BYTES = 1 << 20
"""A bytes object at least this large that a unit carries (a model's, a variant file's) goes
to each worker once, not inside every part of its case: the parts of one model case carried
the model each, so a 13.6 MB model was pickled and piped once per part (cProfile of an ORT-
only run: 1.05 s of the parent's, and as much unpickled in the workers)."""
_BLOB = b"\x00gero-blob\x00"
"""How a message that carries one such object begins (a pickle never begins with a zero)."""
_KEY_CHARS = 64


class _Blobs:
    """The parent's side: units pickled with their large bytes objects kept out, by key
    (the SHA-256 of their content, computed once per object of the last few)."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[bytes, str]] = {}

    def dumps(self, unit: Any) -> tuple[bytes, dict[str, bytes]]:
        """The unit's message and the objects it refers to, by key."""
        found: dict[str, bytes] = {}

        def persistent_id(obj: Any) -> str | None:
            if type(obj) is not bytes or len(obj) < BLOB_BYTES:
                return None
            known = self._keys.get(id(obj))
            if known is None or known[0] is not obj:
                known = (obj, hashlib.sha256(obj).hexdigest())
                self._keys[id(obj)] = known
                while len(self._keys) > 16:  # a case's model and variant files at most
                    del self._keys[next(iter(self._keys))]
            found[known[1]] = obj
            return known[1]

        buffer = io.BytesIO()
        _KeyedPickler(buffer, persistent_id).dump(unit)
        return buffer.getvalue(), found


class _KeyedPickler(pickle.Pickler):
    """A pickler whose persistent ids come from a function (a subclass method: Python 3.13
    made the attribute of a C pickler instance read-only)."""

    def __init__(self, file: io.BytesIO, key: Callable[[Any], str | None]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._key = key

    def persistent_id(self, obj: Any) -> str | None:
        return self._key(obj)


class _KeyedUnpickler(pickle.Unpickler):
    """The worker's side of ``_KeyedPickler``."""

    def __init__(self, file: io.BytesIO, load: Callable[[Any], bytes]) -> None:
        super().__init__(file)
        self._load = load

    def persistent_load(self, pid: Any) -> bytes:
        return self._load(pid)


def _loads(message: bytes, held: dict[str, bytes]) -> tuple[Any, dict[str, bytes]]:
    """The worker's side: a unit, and the objects it referred to (all the worker keeps for
    the next unit: the parent sends any other again)."""
    used: dict[str, bytes] = {}

    def persistent_load(key: Any) -> bytes:
        used[key] = held[key]
        return used[key]

    return _KeyedUnpickler(io.BytesIO(message), persistent_load).load(), used


def _worker_main(conn: Connection, task: Task, settings: Any, running: Any, parent: int | None,
                 inherited: list[Connection],
                 client: tuple[int, dict[str, str], str] | None = None) -> None:
    exit_with_parent(os.getppid() if parent is None else parent)
    if client is not None:
        start_method.adopt(client)
    for other in inherited:  # the parent's ends, copied by fork: not ours to hold
        other.close()
    # The parent handles Ctrl-C and SIGTERM; a worker just finishes or is killed. A crash is
    # recorded as an observation, so an inherited fault handler's dump would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    faulthandler.disable()
    # Overflow in a path is evidence its row records, not a message (see gero run's -q).
    warnings.simplefilter("ignore", RuntimeWarning)

    def note(path: str) -> None:  # the parent reads it when this process dies
        running.value = path.encode()[:RUNNING_BYTES - 1]

    paths.set_running_hook(note)
    held: dict[str, bytes] = {}
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            return
        if not message:
            return
        if message.startswith(_BLOB):  # a large object the next unit refers to
            start = len(_BLOB) + _KEY_CHARS
            held[message[len(_BLOB):start].decode()] = message[start:]
            del message
            continue
        (index, case), held = _loads(message, held)
        # A part's bytes are as large as what it carries (the part that judges a model case:
        # every path's outputs on the model and its variant files); neither they nor the
        # part outlive their use, so a judge does not hold its inputs twice over.
        del message
        try:
            part = isinstance(case, Part)
            result = case.run(settings) if part else task.evaluate(case, settings)
            del case
            if part:
                _give_back_memory()
            if isinstance(result, CaseResult):
                # Arrow form made here, in parallel, not in the parent that serves every
                # worker.
                result = dataclasses.replace(result, rows=[], batch=batch_bytes(result.rows))
            conn.send((index, result, None))
        except OSError as e:
            if e.errno != errno.ENOSPC:
                conn.send((index, None, traceback.format_exc(limit=8)))
            else:  # not the case's fault: the run stops and says so
                conn.send((index, None, DiskFullReport(str(e.filename or ""))))
        except GeroError as e:
            conn.send((index, None, Refusal(str(e)) if task.refuses
                       else traceback.format_exc(limit=8)))
        except Exception:  # an evaluator bug must not take the run down
            conn.send((index, None, traceback.format_exc(limit=8)))


def _give_back_memory() -> None:
    """Return the heap a model case's part freed to the system (glibc keeps it otherwise):
    a worker runs the parts one after another, and each part's peak (a float64 shadow, an
    int8 calibration) would else stay its resident size for the rest of the run (ddddocr's
    54 MB recogniser: a worker idle at 0.9 GB between parts). Only after a part: a
    synthetic case is too small to be worth the call, and so is a part that left the worker
    small: the collection and the trim took 2.3 s of CPU over magika's 26 parts (measured
    with py-spy), most of them under 300 MB."""
    import ctypes
    import gc

    if _resident_bytes() < TRIM_ABOVE_BYTES:
        return
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


TRIM_ABOVE_BYTES = 300 * 2**20


def _resident_bytes() -> int:
    """This process's resident size (0 where /proc is not there: then nothing is trimmed)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _Worker:
    """A child process and the cases sent to it, in the order it runs them."""

    def __init__(self, ctx: Any, task: Task, settings: Any,
                 others: Sequence[_Worker] = ()) -> None:
        self.conn, child = ctx.Pipe()
        self.running = ctx.Array("c", RUNNING_BYTES, lock=False)
        """Which runtime path the worker is inside (empty between paths)."""
        # A forked child inherits the parent's ends of every pipe made before it; a child
        # of the fork server inherits nothing (and its parent is the server).
        forked = ctx.get_start_method() == "fork"
        inherited = [self.conn, *(w.conn for w in others if not w.conn.closed)] if forked else []
        client = start_method.client_of(ctx)
        self.process = ctx.Process(target=_worker_main, daemon=True,
                                   args=(child, task, settings, self.running,
                                         os.getpid() if forked else None, inherited, client))
        start_method.start(self.process)
        child.close()
        self.queue: deque[_Unit] = deque()
        self.started = 0.0
        """When the unit at the head of the queue started running."""
        self.held: set[str] = set()
        """Keys of the large objects the worker keeps: those its last unit referred to."""

    def _missing(self, blobs: dict[str, bytes] | None) -> dict[str, bytes]:
        return {k: b for k, b in (blobs or {}).items() if k not in self.held}

    def accepts(self, message: bytes, blobs: dict[str, bytes] | None = None) -> bool:
        size = len(message) + sum(len(b) for b in self._missing(blobs).values())
        return not self.queue or (len(self.queue) == 1 and size <= PREFETCH_BYTES)

    def submit(self, unit: _Unit, message: bytes, blobs: dict[str, bytes] | None = None
               ) -> bool:
        """Send a unit, after the large objects it refers to that the worker lacks
        (``blobs``, by key); False when the worker is gone (the unit was not sent)."""
        try:
            for key, blob in self._missing(blobs).items():
                self.conn.send_bytes(_BLOB + key.encode() + blob)
            self.conn.send_bytes(message)
        except OSError:  # it died: its running unit is reported when its exit is seen
            return False
        self.held = set(blobs or {})
        if not self.queue:
            self.started = time.monotonic()
        self.queue.append(unit)
        return True

    def finish_head(self) -> _Unit:
        """The running case is done: the next one in the queue starts now."""
        head = self.queue.popleft()
        self.started = time.monotonic()
        return head

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send_bytes(b"")

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


def _death_message(exitcode: int | None, what: str = "this case",
                   worker: _Worker | None = None) -> str:
    """Why a worker died; the graph it was running when not the case's own (a contract
    graph), so that the row names it."""
    graph = "" if worker is None else paths.running_graph(
        worker.running.value.decode(errors="replace"))
    on = f", on {graph}" if graph else ""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"worker process crashed with {name} while running {what}{on}"
    return f"worker process exited with code {exitcode} while running {what}{on}"


def _what(unit: _Unit) -> str:
    return f"{unit.label}" if unit.plan is not None else "this case"


def _context() -> Any:
    return start_method.context()


def run_cases(cases: Sequence[Any], settings: Any, jobs: int = 1,
              timeout_s: float = DEFAULT_TIMEOUT_S,
              on_done: Callable[[Outcome], None] | None = None,
              tick: Callable[[], None] | None = None, *, task: Task,
              watch: Callable[[Activity], None] | None = None) -> Iterator[Outcome]:
    """Yield one Outcome per case (in completion order), isolating each in a worker.

    ``cases`` are the items ``task`` evaluates with ``settings`` (``CaseInstance`` and
    ``RunSettings`` for ``gero run``). ``tick`` is called at least every ``TICK_S`` while
    cases run (the run saves its finished cases on time even while a slow case holds every
    worker); ``watch`` as often, with what runs now (progress).
    """
    pool = WorkerPool(settings, jobs, task=task)
    try:
        yield from pool.run(cases, timeout_s, on_done, tick, watch)
    finally:
        pool.close()


@dataclass
class _Unit:
    """What one worker runs at a time: a whole case, or a part of a split one."""

    case: int
    """The case's position in ``cases``."""
    item: Any
    budget_s: float
    label: str
    plan: Plan | None = None
    """The plan the part belongs to (None: ``item`` is a whole case)."""


class WorkerPool:
    """Up to ``jobs`` worker processes, kept from one ``run`` to the next until ``close``:
    a Dask worker serves batch after batch with the same children (their imports paid once).

    ``ctx`` is the multiprocessing context that starts them (default: ``_context()``).
    """

    def __init__(self, settings: Any, jobs: int = 1, ctx: Any = None, *,
                 task: Task) -> None:
        self.settings = settings
        self.task = task
        self.jobs = max(1, jobs)
        self.ctx = _context() if ctx is None else ctx
        self.workers: list[_Worker] = []

    def close(self) -> None:
        """Idle workers are asked to exit; busy ones (a stop mid-run) are killed."""
        for w in self.workers:
            if w.queue:
                w.kill()
            else:
                w.stop()
        for w in self.workers:
            w.process.join(timeout=2)
            w.kill()
        self.workers = []

    def run(self, cases: Sequence[Any], timeout_s: float = DEFAULT_TIMEOUT_S,
            on_done: Callable[[Outcome], None] | None = None,
            tick: Callable[[], None] | None = None,
            watch: Callable[[Activity], None] | None = None) -> Iterator[Outcome]:
        """Yield one Outcome per case (in completion order; ``Outcome.index`` is the
        position in ``cases``); see ``run_cases``."""
        ctx, settings, task = self.ctx, self.settings, self.task
        # Pending units, next first: a split case's new parts and a dead worker's queued
        # units go to the front (a case started is finished before the next one starts).
        pending: deque[tuple[_Unit, tuple[bytes, dict[str, bytes]] | None]] = deque()
        blobs = _Blobs()
        plans: list[Plan] = []
        started: dict[int, float] = {}
        for i, case in enumerate(cases):
            plan = task.plan(case, settings, timeout_s) if task.plan is not None else None
            if plan is None:
                pending.append((_Unit(i, case, timeout_s, ""), None))
            else:
                plans.append(plan)
                pending.extend((_Unit(i, part, part.budget_s, part.label, plan), None)
                               for part in plan.ready())
        parts_done = 0
        workers = self.workers

        def grow() -> None:
            """A worker is started when a unit waits and none is idle, up to ``jobs``: no
            more processes than units that can run at once (--jobs 1000 on one model case
            started 1,000 processes, 4.3 GB, for 9 paths)."""
            idle = sum(not w.queue for w in workers)
            while len(workers) < self.jobs and len(pending) > idle:
                workers.append(_Worker(ctx, task, settings, workers))
                idle += 1

        def fill(worker: _Worker) -> None:
            while pending and worker.process.is_alive():
                if worker.queue and len(pending) < len(workers):
                    return  # near the end, a reserve would wait while another worker idles
                unit, made = pending[0]
                if made is None:
                    made = blobs.dumps((unit.case, unit.item))
                    pending[0] = (unit, made)
                if not worker.accepts(*made):
                    return
                if not worker.submit(unit, *made):
                    return
                started.setdefault(unit.case, time.monotonic())
                pending.popleft()

        def fallback(unit: _Unit, since: float, message: str, running: str = "") -> Outcome:
            rows = task.failed(unit.item, settings, message, running)
            return Outcome(unit.case, CaseResult(rows, 0.0, time.monotonic() - since))

        def settle(unit: _Unit, result: Any, failure: str | None = None,
                   out_of_budget: bool = False) -> Outcome | None:
            """A part ended: its plan is told, its next parts queued; the case's Outcome
            once the plan has its result."""
            nonlocal parts_done
            plan = unit.plan
            assert plan is not None
            parts_done += 1
            if failure is None and not out_of_budget:
                plan.finish(unit.item, result)
            else:
                plan.fail(unit.item, failure or "", out_of_budget)
            pending.extendleft(reversed([(_Unit(unit.case, part, part.budget_s, part.label,
                                                plan), None) for part in plan.ready()]))
            report()
            done = plan.result
            if done is None:
                return None
            total = time.monotonic() - started.get(unit.case, time.monotonic())
            return Outcome(unit.case, dataclasses.replace(done, total_seconds=total))

        def report() -> None:
            if watch is None:
                return
            now = time.monotonic()
            watch(Activity(
                tuple(Running(w.queue[0].label, now - w.started, w.queue[0].budget_s)
                      for w in workers if w.queue),
                parts_done, sum(p.planned for p in plans),
                tuple(e for p in plans for e in p.early)))

        try:
            grow()
            for w in workers:
                fill(w)
            while pending or any(w.queue for w in workers):
                for i, w in enumerate(workers):
                    if not w.queue and not w.process.is_alive():  # died idle: replace it
                        w.kill()
                        workers[i] = w = _Worker(ctx, task, settings, workers)
                        fill(w)
                busy = [w for w in workers if w.queue]
                if not busy:
                    grow()
                    for w in workers:
                        fill(w)
                    continue
                now = time.monotonic()
                wait_for = min(max(0.0, w.started + w.queue[0].budget_s - now) for w in busy)
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                             timeout=min(wait_for, TICK_S))
                if tick is not None:
                    tick()
                report()
                for i, w in enumerate(workers):
                    if not w.queue:
                        continue
                    outcome: Outcome | None = None
                    died: str | None = None  # the worker died or hung: start a fresh one
                    out_of_budget = False
                    head = w.queue[0]
                    if w.conn in ready:
                        try:
                            index, result, error = w.conn.recv()
                        except (EOFError, OSError):
                            w.process.join(timeout=5)
                            died = _death_message(w.process.exitcode, _what(head), w)
                        else:
                            if isinstance(error, DiskFullReport):
                                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                                              error.filename or None)
                            if isinstance(error, Refusal):
                                raise GeroError(error.message)
                            since = w.started
                            unit = w.finish_head()
                            if unit.plan is not None:
                                outcome = settle(unit, result, None if error is None
                                                 else f"{unit.label}: evaluator raised: "
                                                      f"{error}")
                            else:
                                outcome = (Outcome(index, result) if error is None
                                           else fallback(unit, since,
                                                         f"evaluator raised: {error}"))
                    elif w.process.sentinel in ready:
                        w.process.join(timeout=5)
                        died = _death_message(w.process.exitcode, _what(head), w)
                    elif time.monotonic() - w.started > head.budget_s:
                        out_of_budget = True
                        died = f"timed out after {head.budget_s:g} s; worker killed"
                    if died is not None:
                        # The head of the queue was running; the units behind it are resent.
                        unit = w.queue.popleft()
                        if unit.plan is not None:  # the plan words it, naming the part
                            outcome = settle(unit, None, None if out_of_budget else died,
                                             out_of_budget)
                        else:
                            outcome = fallback(unit, w.started, died,
                                               w.running.value.decode(errors="replace"))
                        pending.extendleft((u, None) for u in reversed(w.queue))
                        w.queue.clear()
                        w.kill()
                        workers[i] = w = _Worker(ctx, task, settings, workers)
                    if outcome is not None:
                        if on_done is not None:
                            on_done(outcome)
                        yield outcome
                    fill(w)
                grow()  # a part's end may have queued parts: for idle or new workers
                for w in workers:
                    fill(w)
        finally:
            # Busy workers (a stop mid-run) run cases nobody awaits: killed, and replaced
            # by the next run; idle ones stay for it.
            for w in workers:
                if w.queue:
                    w.kill()
            workers[:] = [w for w in workers if not w.queue]
