"""Entry point of the variant check family (filled in by the variants work)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gero_runner.execution.evaluate import CaseContext


def run_variants(ctx: CaseContext) -> list[dict[str, Any]]:
    return []
