"""The check families by name (``RunSettings.checks``): each a function
``(CaseContext) -> list[row]`` run after the path comparisons of a case.

Each family's module is imported when a case first asks for it, so that a run without it
pays nothing. Families add their own evidence files to the context's writer before the
artifact directory is written. The execution layer gets ``run_family`` handed down
(``checks.task``); it never names a family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gero_runner.errors import GeroError
from gero_runner.schema import Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext


def _contracts(ctx: CaseContext) -> list[Observation]:
    from gero_runner.checks.contracts.run import run_contracts

    return run_contracts(ctx)


def _variants(ctx: CaseContext) -> list[Observation]:
    from gero_runner.checks.variants.run import run_variants

    return run_variants(ctx)


def _model(ctx: CaseContext) -> list[Observation]:
    from gero_runner.checks.model import run_model_checks

    return run_model_checks(ctx)


def _releases(ctx: CaseContext) -> list[Observation]:
    from gero_runner.checks.releases import run_releases

    return run_releases(ctx)


FAMILIES: dict[str, Callable[[CaseContext], list[Observation]]] = {
    "contracts": _contracts,
    "variants": _variants,
    "model": _model,
    "releases": _releases,
}


def run_family(name: str, ctx: CaseContext) -> list[Observation]:
    """The rows of family ``name`` on the case (one sentence for a name gero lacks)."""
    try:
        family = FAMILIES[name]
    except KeyError as e:
        raise GeroError(f"unknown check family {name!r}; known: {', '.join(FAMILIES)}") from e
    return family(ctx)
