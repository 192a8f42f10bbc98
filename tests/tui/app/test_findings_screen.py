"""The Findings screen: `F` from anywhere, `enter` filters the table to a finding, snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import settle

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.overview import OverviewScreen

SIZES = [(80, 24), (120, 40)]


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_findings_snapshot(snap_compare: Any, data_root: Path, size: tuple[int, int]) -> None:
    assert snap_compare(GeroApp(data_root, screen="findings"), terminal_size=size,
                        run_before=settle)


async def test_f_opens_findings_and_enter_shows_its_observations(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        count = str(app.screen.query_one("#findings-count").render())
        await pilot.press("F")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        findings = screen.report.findings
        assert count.startswith(f"{len(findings)} findings")
        assert sum(f.observations for f in findings) == screen.report.non_passed > 0
        await pilot.press("down", "enter")
        await settle(pilot)
        table = app.screen
        assert isinstance(table, EvaluationsScreen)
        chosen = findings[1]
        rows = [table.table.row(i) for i in range(table.table.row_count)]
        assert len(rows) == chosen.observations
        assert chosen.representative.observation_id in {str(r[0]) for r in rows if r}
        await pilot.press("F")  # from the table: back to the open findings
        await settle(pilot)
        assert app.screen is screen
