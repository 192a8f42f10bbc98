"""Entry point of the contract check family: every law that applies to a case, on every
ORT level and on the ReferenceEvaluator, each law its own observation (contract:NAME)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gero_runner.case import BATCH_INDEPENDENT, BATCH_REDUCE
from gero_runner.checks.contracts.batch import independent_rows, reduction_rows
from gero_runner.checks.contracts.determinism import determinism_rows, thread_rows
from gero_runner.checks.contracts.operator_laws import NAMED
from gero_runner.checks.contracts.paths import family_paths
from gero_runner.checks.contracts.rank import rank_change_rows
from gero_runner.schema import Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext


def run_contracts(ctx: CaseContext) -> list[Observation]:
    # Laws run on edge values (±inf, NaN, overflow) on purpose: no warnings on stderr.
    with np.errstate(all="ignore"):
        return _run(ctx)


def _run(ctx: CaseContext) -> list[Observation]:
    paths, evidence = family_paths(ctx, "contract", ctx.case.contracts, NAMED)
    rows = determinism_rows(ctx, paths)
    rows += thread_rows(ctx, paths, evidence)
    if ctx.case.batch == BATCH_INDEPENDENT:
        rows += independent_rows(ctx, paths, evidence)
        rows += rank_change_rows(ctx, paths, evidence)
    elif ctx.case.batch == BATCH_REDUCE:
        rows += reduction_rows(ctx, paths, evidence)
    for name in ctx.case.contracts:
        rows += NAMED[name](ctx, paths, evidence)
    return rows
