"""A run some of whose files cannot be read says "N of M readable" wherever counts appear."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OLD_RUN_ID, RUN_ID, fixture_rows, settle, write_run
from test_triage_crash import _corrupt_data_pages
from textual.widgets import Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.widgets.filter_bar import FilterBar

PARTIAL = "70 of 80 readable"


@pytest.fixture
def partial_root(tmp_path: Path) -> Path:
    """The newest run sighted 10 observations first written by the older run, whose file
    is then damaged: 70 of its 80 observations can be read."""
    rows = fixture_rows()
    old = [dict(r, run_id=OLD_RUN_ID) for r in rows[:10]]
    write_run(tmp_path, OLD_RUN_ID, old)
    write_run(tmp_path, RUN_ID, rows[10:], sighted=rows)
    _corrupt_data_pages(tmp_path / "runs" / OLD_RUN_ID / "observations.parquet")
    return tmp_path


@pytest.mark.slow
async def test_counts_of_a_partly_readable_run_say_so(partial_root: Path) -> None:
    app = GeroApp(partial_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.source is not None and app.source.problems
        problems = str(app.screen.query_one("#problems", Static).render())
        assert PARTIAL in problems
        await pilot.press("i")
        await settle(pilot)
        findings = app.screen
        assert isinstance(findings, FindingsScreen)
        assert f"(of {PARTIAL})" in str(findings.query_one("#summary", Static).render())
        await pilot.press("v")
        await settle(pilot)
        table = app.screen
        assert isinstance(table, EvaluationsScreen)
        assert f"of {PARTIAL}" in str(table.query_one(FilterBar).render())


async def test_a_whole_run_says_nothing_of_the_kind(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "readable" not in str(app.screen.query_one(FilterBar).render())
