"""The Findings screen: `i` from anywhere, `enter` filters the table to a finding, snapshots."""

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


async def _settled_and_repainted(pilot: Any) -> None:
    # In full parallel runs the same picture was now and then drawn with one table row's
    # background as two rects of the same colour (a partial update): a last full repaint
    # draws it one way.
    await settle(pilot)
    pilot.app.screen.refresh(layout=True)
    await pilot.pause()


# One rerun: the flake above was seen in 2 of 6 full runs, never alone (6 of 6 passed).
@pytest.mark.flaky(reruns=1)
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_findings_snapshot(snap_compare: Any, data_root: Path, size: tuple[int, int]) -> None:
    assert snap_compare(GeroApp(data_root, screen="findings"), terminal_size=size,
                        run_before=_settled_and_repainted)


@pytest.mark.slow
async def test_f_opens_findings_and_enter_shows_its_observations(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        count = str(app.screen.query_one("#findings-count").render())
        await pilot.press("i")
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
        assert chosen.representative.observation_id in {r.observation_id for r in rows if r}
        await pilot.press("i")  # from the table: back to the open findings
        await settle(pilot)
        assert app.screen is screen


@pytest.mark.slow
async def test_n_groups_the_overview_bars_by_finding(data_root: Path) -> None:
    from gero_tui.app.widgets.operation_bars import OperationBars

    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        bars = screen.query_one(OperationBars)
        operations = [bars.get_option_at_index(i).id for i in range(bars.option_count)]
        await pilot.press("n")
        await settle(pilot)
        report = app.findings(app.require_source())
        ids = [bars.get_option_at_index(i).id for i in range(bars.option_count)]
        assert ids == [f.finding_id for f in report.findings] != operations
        await pilot.press("enter")
        await settle(pilot)
        table = app.screen
        assert isinstance(table, EvaluationsScreen)
        assert table.table_filter.finding == report.findings[0].finding_id
        assert table.table.row_count == report.findings[0].observations


def test_the_table_grouped_by_finding_lists_the_worst_finding_first(data_root: Path) -> None:
    from gero.query.findings import compute_findings
    from gero.query.source import open_source
    from gero.query.table import BY_FINDING, TableFilter, TableQuery, TableSort

    source = open_source(data_root)
    query = TableQuery(source)  # the sort computes the findings it needs
    page = query.page(TableFilter(), TableSort(BY_FINDING), 0, 1000)
    findings = compute_findings(source)
    members = dict(source.query("SELECT observation_id, finding_id FROM finding_members"))
    order = [members.get(row.observation_id) for row in page.rows]
    expected = [f.finding_id for f in findings for _ in range(f.observations)]
    assert order[:len(expected)] == expected
    assert all(f is None for f in order[len(expected):])  # passed rows last


async def test_the_sort_picker_groups_the_table_by_finding(data_root: Path) -> None:
    from gero.query.table import BY_FINDING

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s", "end", "enter")
        await settle(pilot)
        table = app.screen
        assert isinstance(table, EvaluationsScreen) and table.sort.column == BY_FINDING
        report = app.findings(app.require_source())
        first = report.findings[0]
        rows = [table.table.row(i) for i in range(first.observations)]
        members = dict(app.require_source().query(
            "SELECT observation_id, finding_id FROM finding_members"))
        assert {members.get(r.observation_id) for r in rows if r} == {first.finding_id}


def test_the_table_grouped_by_finding_has_one_row_per_finding(data_root: Path) -> None:
    """``m`` steps to one row per finding (its worst observation, its operations listed),
    and one for the passed rows."""
    from gero.query.findings import compute_findings
    from gero.query.source import open_source
    from gero.query.table import GROUPINGS, TableFilter, TableQuery, TableSort

    source = open_source(data_root)
    query = TableQuery(source)
    groups = query.group(TableFilter(), GROUPINGS["findings"], "by_finding")
    findings = compute_findings(source)
    total = source.query("SELECT count(*), count(*) FILTER (result = 'passed') FROM obs")[0]
    assert groups.count == len(findings) + (1 if total[1] else 0)
    assert groups.rows == total[0]
    page = query.page(TableFilter(), TableSort(), 0, 1000, groups=groups)
    members = dict(source.query("SELECT observation_id, finding_id FROM finding_members"))
    shown = [members.get(row.observation_id) for row in page.rows]
    assert sorted(f for f in shown if f) == sorted(f.finding_id for f in findings)
