"""Extra check families run after the path comparisons of a case.

A family is a function ``(CaseContext) -> list[row]``, named here and imported lazily so
that a run without it pays nothing. Families add their own evidence files to the context's
writer before the artifact directory is written.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gero_runner.errors import GeroError
from gero_runner.schema import Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext

FAMILIES: dict[str, str] = {
    "contracts": "gero_runner.checks.contracts.run:run_contracts",
    "variants": "gero_runner.checks.variants.run:run_variants",
    "model": "gero_runner.checks.model:run_model_checks",
}


def run_family(name: str, ctx: CaseContext) -> list[Observation]:
    try:
        target = FAMILIES[name]
    except KeyError as e:
        raise GeroError(f"unknown check family {name!r}; known: {', '.join(FAMILIES)}") from e
    module_name, _, function = target.partition(":")
    module = importlib.import_module(module_name)
    rows: list[Observation] = getattr(module, function)(ctx)
    return rows
