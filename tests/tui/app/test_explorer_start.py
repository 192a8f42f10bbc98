"""Starting the explorer: the first page read ahead, and escape from a table opened first."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import RUN_ID, settle

from gero_tui.app.app import GeroApp
from gero_tui.app.prefetch import FIRST_PAGE_ROWS, Prefetch
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.overview import OverviewScreen
from gero_tui.app.widgets.filter_bar import FilterBar


def _finished(prefetch: Prefetch) -> Prefetch:
    deadline = time.monotonic() + 30
    while not prefetch.done and time.monotonic() < deadline:
        time.sleep(0.01)
    return prefetch


async def test_read_ahead_page_is_the_table(data_root: Path, observations: Path) -> None:
    import duckdb

    prefetch = _finished(Prefetch(data_root, None, first_page=True))
    app = GeroApp(data_root, screen="evaluations", prefetch=prefetch)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        # Adopted synchronously at mount: the source is open before any worker ran.
        assert app.source is not None and app.source.run_id == RUN_ID
        await settle(pilot)
        want = [r[0] for r in duckdb.execute(
            f"SELECT observation_id FROM read_parquet('{observations}')").fetchall()]
        table = screen.table
        assert table.row_count == len(want) < FIRST_PAGE_ROWS
        assert [table.row(i).observation_id  # type: ignore[union-attr]
                for i in range(table.row_count)] == want
        bar = screen.query_one(FilterBar)
        assert bar.matching == bar.total == len(want)
        assert app.first_page is None  # taken once


async def test_prefetch_of_another_run_is_not_used(data_root: Path) -> None:
    prefetch = _finished(Prefetch(data_root, "2025", first_page=True))  # the older run
    assert prefetch.take(RUN_ID) is None


async def test_escape_from_the_table_opened_first_shows_the_overview(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, EvaluationsScreen)
        assert not any(isinstance(s, OverviewScreen) for s in app.screen_stack)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.screen.query_one("#bars").option_count == 4  # type: ignore[attr-defined]
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, EvaluationsScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


@pytest.mark.slow
async def test_switching_runs_reaches_every_open_screen(data_root: Path) -> None:
    """The screens watch the app's reactive source: a run switch refreshes the table and the
    overview under it (before, the app called the screens it knew of by type)."""
    from conftest import OLD_RUN_ID

    from gero.query.table import TableFilter

    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        overview = app.screen
        assert isinstance(overview, OverviewScreen)
        app.show_evaluations(TableFilter())
        await settle(pilot)
        table_screen = app.screen
        assert isinstance(table_screen, EvaluationsScreen)
        newest = table_screen.table.row_count
        app.switch_run(OLD_RUN_ID)
        await settle(pilot)
        assert app.source is not None and app.source.run_id == OLD_RUN_ID
        assert table_screen.table.row_count == 10 < newest
        app.show_overview()
        await settle(pilot)
        assert app.screen is overview
        assert OLD_RUN_ID in str(overview.query_one("#title").render())


@pytest.mark.slow
async def test_findings_computed_ahead_are_the_ones_the_screens_show(data_root: Path) -> None:
    from gero.query.finding_status import report_for
    from gero_tui.app.screens.findings import FindingsScreen

    prefetch = _finished(Prefetch(data_root, None, first_page=False, findings=True))
    app = GeroApp(data_root, screen="overview", prefetch=prefetch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        source = app.source
        assert source is not None
        early = prefetch.findings(source)
        assert early is not None and app.findings_ready(source) is early  # not computed twice
        again = report_for(source, data_root, source.run_id)
        assert [f.finding_id for f in again.findings] == [f.finding_id for f in early.findings]
        await pilot.press("i")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is early


async def test_findings_are_not_computed_ahead_for_the_table(data_root: Path) -> None:
    prefetch = _finished(Prefetch(data_root, None, first_page=True))
    opened = prefetch.take(RUN_ID)
    assert opened is not None and prefetch.findings(opened.source) is None


async def test_the_findings_wait_for_the_overview_counts(data_root: Path) -> None:
    """Grouping the findings beside the overview's first queries delayed its first frame:
    the prefetch computes them once the counts are on screen (or once someone asks)."""
    import time

    prefetch = _finished(Prefetch(data_root, None, first_page=False, findings=True))
    time.sleep(0.3)
    assert prefetch._report is None, "nothing computed before the counts are shown"
    app = GeroApp(data_root, screen="overview", prefetch=prefetch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert prefetch._released.is_set()
        source = app.source
        assert source is not None and prefetch.findings(source) is not None


def test_the_findings_screen_first_does_not_wait(data_root: Path) -> None:
    prefetch = Prefetch(data_root, None, first_page=False, findings=True, findings_now=True)
    prefetch._thread.join(30)
    assert prefetch._report is not None
