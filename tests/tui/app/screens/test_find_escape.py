"""Escape after a find (`/ text enter`) clears the find and stays on the table; it left the
table for the overview, the find with it."""

from __future__ import annotations

from pathlib import Path

from conftest import settle
from textual.widgets import Input

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.overview import OverviewScreen


async def test_escape_after_a_find_clears_it_and_the_next_goes_back(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("slash", *"erf", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.table_filter.text == "erf" and screen.focused is screen.table
        narrowed = screen.matching_count
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen, "escape after a find stays on the table"
        box = screen.query_one("#text-filter", Input)
        assert screen.table_filter.text == "" and box.value == "" and not box.display
        assert screen.focused is screen.table
        assert narrowed is not None and screen.matching_count is not None
        assert screen.matching_count > narrowed  # every row again
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
