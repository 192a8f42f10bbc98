"""The worker pool: every case gives exactly one outcome, whatever its worker does, and the
cases queued behind a case that kills its worker still run."""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from dataclasses import replace
from typing import Any

import pytest

from gero_runner.case import CaseInstance
from gero_runner.checks import task
from gero_runner.execution import evaluate, pool
from gero_runner.execution.context import CaseResult, RunSettings
from gero_runner.run import RunRequest, collect_cases
from gero_runner.schema import Observation
from gero_runner.storage.store import batch_from_bytes


def _cases() -> list[CaseInstance]:
    cases = collect_cases(RunRequest(ops=["Exp", "Relu", "Sigmoid"], dtypes=["float32"]))
    assert cases[-1].op_type != "Relu"  # so that a case waits in the queue behind a Relu
    return cases


def _passed(case: CaseInstance) -> Observation:
    return replace(evaluate.execution_rows(case, "fake")[0], result="passed")


def _crash_on_relu(case: CaseInstance, settings: RunSettings) -> CaseResult:
    if case.op_type == "Relu":
        os.kill(os.getpid(), signal.SIGSEGV)
    return CaseResult([_passed(case)], 0.0, 0.0)


def _hang_on_relu(case: CaseInstance, settings: RunSettings) -> CaseResult:
    if case.op_type == "Relu":
        time.sleep(60)
    return CaseResult([_passed(case)], 0.0, 0.0)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize(("fake", "message"), [(_crash_on_relu, "SIGSEGV"),
                                               (_hang_on_relu, "timed out")])
@pytest.mark.usefixtures("fork_workers")
@pytest.mark.slow
def test_each_case_has_one_outcome_and_queued_cases_survive(
        monkeypatch: pytest.MonkeyPatch, jobs: int, fake: object, message: str) -> None:
    monkeypatch.setattr(task, "evaluate_case", fake)
    cases = _cases()
    outcomes = list(pool.run_cases(cases, RunSettings(data_root=""), jobs=jobs, timeout_s=1.0,
                                   task=task.case_task()))
    assert sorted(o.index for o in outcomes) == list(range(len(cases)))
    for o in outcomes:
        case = cases[o.index]
        (row,) = _rows(o)
        if case.op_type == "Relu":
            assert row["result"] == "execution" and message in row["reason"]
        else:  # including the cases that were queued behind a Relu case
            assert (row["case_id"], row["result"]) == (case.case_id, "passed")


def _rows(outcome: pool.Outcome) -> list[dict[str, Any]]:
    """A worker sends its rows in Arrow form; the parent's own fallback rows are typed."""
    if outcome.result.batch is not None:
        assert outcome.result.rows == []
        rows: list[dict[str, Any]] = batch_from_bytes(outcome.result.batch).to_pylist()
        return rows
    return [r.as_dict() for r in outcome.result.rows]


@pytest.mark.usefixtures("fork_workers")
def test_large_cases_are_not_prefetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case too large to queue waits for an idle worker; the run still completes."""
    monkeypatch.setattr(pool, "PREFETCH_BYTES", 0)
    monkeypatch.setattr(task, "evaluate_case", _crash_on_relu)
    cases = _cases()
    outcomes = list(pool.run_cases(cases, RunSettings(data_root=""), jobs=1, timeout_s=5.0,
                                   task=task.case_task()))
    assert sorted(o.index for o in outcomes) == list(range(len(cases)))


def test_a_case_sent_to_a_dead_worker_is_not_lost() -> None:
    # Python 3.13 reports the closed pipe of a crashed worker at once (BrokenPipeError);
    # the case must stay pending for another worker instead of taking the run down.
    worker = pool._Worker(pool._context(), task.case_task(), RunSettings(data_root=""))
    worker.process.kill()
    worker.process.join(timeout=5)
    case = _cases()[0]
    unit = pool._Unit(0, case, 1.0, "")
    sent = [worker.submit(unit, b"x" * 100_000) for _ in range(3)]
    assert sent[-1] is False and not worker.queue
    worker.kill()


def _pid(case: CaseInstance, settings: RunSettings) -> CaseResult:
    if case.op_type == "Relu":
        os.kill(os.getpid(), signal.SIGSEGV)
    return CaseResult([replace(_passed(case), reason=str(os.getpid()))], 0.0, 0.0)


@pytest.mark.usefixtures("fork_workers")
def test_a_worker_pool_keeps_its_processes_from_one_run_to_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Dask worker relies on: its case process (and its imports) serves batch after
    batch; one that a case killed is replaced, and the next run gets the fresh one."""
    monkeypatch.setattr(task, "evaluate_case", _pid)
    cases = [c for c in _cases() if c.op_type != "Relu"]
    relu = next(c for c in _cases() if c.op_type == "Relu")
    workers = pool.WorkerPool(RunSettings(data_root=""), jobs=1, task=task.case_task())
    try:
        def pids(batch: list[CaseInstance]) -> set[object]:
            return {row["reason"] for o in workers.run(batch, timeout_s=30.0)
                    for row in _rows(o) if row["result"] == "passed"}

        first, second = pids(cases[:2]), pids(cases[2:])
        assert len(first) == 1 and first == second
        assert pids([relu]) == set()  # the process died with the case...
        third = pids(cases[:1])
        assert len(third) == 1 and third != first  # ...and its successor serves the next run
    finally:
        workers.close()


@pytest.fixture
def openvino_loaded() -> None:
    """What an earlier test in this process did: OpenVINO loaded, through its backend."""
    import openvino  # noqa: F401

    from gero_runner import backends

    backends.get("openvino")  # its class tells the fork policy about OpenVINO


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="needs OpenVINO")
def test_fork_workers_still_fork_after_a_test_loaded_openvino(openvino_loaded: None,
                                                               fork_workers: None) -> None:
    """xdist does not always run this group first in its process: after a test that loaded
    OpenVINO (test_dequantized_judge's), the fixture's workers must still be forked, or
    every crash and hang test here loses its substitute (CI: 6 slow tests failed)."""
    from gero_runner.process import start_method

    assert start_method.context().get_start_method() == "fork"
