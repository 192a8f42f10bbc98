"""A case split into parts, run by one of two executors: the worker pool spreads them over
its workers, each under its own budget; ``run_inline`` runs them one after another here.

A model case runs many paths (each runtime setting, the ReferenceEvaluator, each variant on
each path, the contracts, the noise-floor runs); run one after another under one timeout, a
single slow path cost every other path's rows. A ``Plan`` hands the pool the parts that
can start now, is told how each ended (a result, or a failure: the worker died or the part
ran out of its budget), and ends with the case's ``CaseResult``. What a plan does never
depends on the order parts finish in or on the number of workers, so the rows and the
evidence are those of a one-worker run, inline or not.

This layer never names a plan: the layer above hands the pool a factory (``pool.Task.plan``;
``gero run``'s is ``checks.task``), and a plan to ``run_inline``.
"""

from __future__ import annotations

import dataclasses
import errno
import pickle
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Any

from gero_runner.execution.context import CaseResult


class Part(ABC):
    """One unit of a plan, run in a worker (``run``); picklable."""

    label: str = ""
    """What it runs, as progress shows it: 'tract optimized on the model'."""
    budget_s: float = 0.0

    @abstractmethod
    def run(self, settings: Any) -> Any:
        """The part's result, sent back to the plan (in the parent)."""


class Plan(ABC):
    """A case's parts, in the parent: which can start, and what their results make."""

    early: tuple[str, ...] = ()
    """Verdicts known before the case is judged, a sentence each, for progress (a model
    case's first: ``checks.early``)."""

    @abstractmethod
    def ready(self) -> list[Part]:
        """Parts that may start now (each returned once)."""

    @abstractmethod
    def finish(self, part: Part, result: Any) -> None:
        """``part`` returned ``result``."""

    @abstractmethod
    def fail(self, part: Part, message: str, out_of_budget: bool) -> None:
        """``part`` gave no result: it ran past its budget (its worker was killed), or
        ``message`` says what happened (its worker died, the evaluator raised)."""

    @property
    @abstractmethod
    def result(self) -> CaseResult | None:
        """The case's result, once every part is done."""

    @property
    @abstractmethod
    def planned(self) -> int:
        """Parts this plan runs in all (done, running and to come; it may shrink when a
        path that ran out is not run again)."""


def run_inline(plan: Plan, settings: Any) -> CaseResult:
    """The plan's parts one after another in this process, each to its end (no budget binds
    here: a caller that needs one runs this in a child it can stop), in the order a pool of
    one worker takes them; the case's result. Each part runs on a copy of what it carries,
    as a worker does (a part may change what it was sent, the plan keeps its own), and a part
    that raises is failed with the sentence the pool gives; a full disk stops the case."""
    start = time.perf_counter()
    pending = deque(plan.ready())
    while pending:
        part = pending.popleft()
        sent: Part = pickle.loads(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
        try:
            result = sent.run(settings)
        except Exception as e:
            if isinstance(e, OSError) and e.errno == errno.ENOSPC:
                raise
            # The pool's words for a part whose worker raised.
            plan.fail(part, f"{part.label}: evaluator raised: {traceback.format_exc(limit=8)}",
                      False)
        else:
            plan.finish(part, result)
        del sent
        pending.extendleft(reversed(plan.ready()))
    done = plan.result
    assert done is not None, "a plan that hands out no more parts has its result"
    return dataclasses.replace(done, total_seconds=time.perf_counter() - start)


def ran_out(who: str, budget_s: float, on: str) -> str:
    """The reason a part that ran past its budget gives, e.g. 'tract optimized ran out of
    its 60 s budget on the model'."""
    return f"{who} ran out of its {budget_s:g} s budget on {on}"


@dataclass(frozen=True)
class Running:
    """A part (or a whole case) a worker runs now."""

    label: str
    elapsed_s: float
    budget_s: float


@dataclass(frozen=True)
class Activity:
    """What the pool is doing, for progress: the parts running, and the parts of split
    cases done and planned so far."""

    running: tuple[Running, ...]
    parts_done: int
    parts_planned: int
    early: tuple[str, ...] = ()
    """The plans' verdicts known before their cases are judged (``Plan.early``)."""
