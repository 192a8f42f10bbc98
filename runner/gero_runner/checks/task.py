"""How a case is evaluated with its checks, for the executors below this layer.

A model case is one plan of parts (``checks.model_parts``) whichever executor runs it: the
worker pool (``case_task``, ``gero run``'s) spreads its parts over the workers, each path
under the path budget; ``evaluate_case`` runs them here, one after another
(``execution.plan.run_inline``). Any other case runs whole. The check families reach the
execution layer as ``checks.families.run_family``, handed down: the execution layer names
neither them nor the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gero_runner.case import CaseInstance
from gero_runner.checks.families import run_family
from gero_runner.checks.model_parts import ModelCasePlan
from gero_runner.checks.precision import explain_rows
from gero_runner.execution.evaluate import (
    CaseResult,
    RunSettings,
    evaluate_whole,
    execution_rows,
)
from gero_runner.execution.paths import PathTable, path_table, path_table_here
from gero_runner.execution.plan import run_inline
from gero_runner.execution.pool import Task
from gero_runner.request import DEFAULT_PATH_BUDGET_S, PATHS_NEEDED
from gero_runner.schema import Observation


def in_parts(case: CaseInstance) -> bool:
    """Whether the case runs as a plan of parts: a model case gero can feed."""
    return case.model_checks is not None and not case.unsupported


def model_plan(case: CaseInstance, settings: RunSettings, table: PathTable,
               path_budget_s: float, timeout_s: float,
               paths: str = PATHS_NEEDED) -> ModelCasePlan:
    """The plan of a model case: each path under ``path_budget_s``, judging it under
    ``timeout_s``; ``table``: the selected runtimes' settings; ``paths`` (``--paths``):
    which of them run."""
    return ModelCasePlan(case, settings, table, path_budget_s=path_budget_s,
                         timeout_s=timeout_s, paths=paths)


def evaluate_case(case: CaseInstance, settings: RunSettings,
                  paths: str = PATHS_NEEDED) -> CaseResult:
    """One case in this process: a model case's plan run inline (each part to its end: no
    budget binds here), any other case whole (every path: ``paths`` is a model case's)."""
    if not in_parts(case):
        return evaluate_whole(case, settings, run_family, explain_rows)
    # Asked here: this process runs the paths itself (it starts no workers).
    plan = model_plan(case, settings, path_table(settings), math.inf, math.inf, paths)
    return run_inline(plan, settings)


@dataclass(frozen=True)
class _Planner:
    """``Task.plan`` of ``gero run``: the plan of a model case, in the process that starts
    the workers (None: the case runs whole in one worker)."""

    path_budget_s: float
    paths: str = PATHS_NEEDED

    def __call__(self, case: CaseInstance, settings: RunSettings,
                 timeout_s: float) -> ModelCasePlan | None:
        if not in_parts(case):
            return None
        # Asked in a child: this process starts the workers (see path_table_here).
        return model_plan(case, settings, path_table_here(settings), self.path_budget_s,
                          timeout_s, self.paths)


def _evaluate(case: CaseInstance, settings: RunSettings) -> CaseResult:
    # Looked up at call time so tests can substitute the evaluator before forking.
    return evaluate_case(case, settings)


def _failed(case: CaseInstance, settings: RunSettings, message: str,
            running: str) -> list[Observation]:
    return execution_rows(case, message, running)


def case_task(path_budget_s: float = DEFAULT_PATH_BUDGET_S, paths: str = PATHS_NEEDED) -> Task:
    """``gero run``'s task for the worker pool: every path, comparison and check of a case,
    a model case in parts, each path under ``path_budget_s`` (``--path-budget``), the
    settings ``paths`` (``--paths``) asks for."""
    return Task(_evaluate, _failed, plan=_Planner(path_budget_s, paths))
