"""Entry point of the contract check family (filled in by the contracts work)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gero_runner.execution.evaluate import CaseContext


def run_contracts(ctx: CaseContext) -> list[dict[str, Any]]:
    return []
