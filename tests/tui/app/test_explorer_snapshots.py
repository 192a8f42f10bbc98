"""SVG snapshots of the overview and the evaluations table at 80×24 and 120×40."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import settle

from gero_tui.app.app import GeroApp

SIZES = [(80, 24), (120, 40)]


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
@pytest.mark.slow
def test_overview_snapshot(snap_compare: Any, data_root: Path, size: tuple[int, int]) -> None:
    assert snap_compare(GeroApp(data_root), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
@pytest.mark.slow
def test_filtered_table_snapshot(snap_compare: Any, data_root: Path, size: tuple[int, int]
                                 ) -> None:
    async def filtered(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("2", "4", "s", "down", "down", "down", "down", "down", "down", "enter")
        await settle(pilot)

    assert snap_compare(GeroApp(data_root, screen="evaluations"), terminal_size=size,
                        run_before=filtered)
