"""The grouping toggle: one row per case and check, levels (or dtypes) merged, enter the worst."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from conftest import settle
from table_helpers import open_table

from gero.query.table import split_covers
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen


def rows(screen: EvaluationsScreen) -> list[dict[str, object]]:
    table = screen.table
    out = []
    for i in range(table.row_count):
        row = table.row(i)
        assert row is not None
        out.append({"id": row.observation_id, **row.cells})
    return out


@pytest.mark.slow
async def test_levels_then_dtypes_then_findings_then_none(data_root: Path,
                                                          observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("m")
        await settle(pilot)
        # 4 ops x 2 dtypes x 2 shapes: the 4 ORT levels are one row, the reference path another.
        assert screen.grouping == "levels"
        assert screen.matching_count == 32
        grouped = rows(screen)
        softmax = [r for r in grouped if r["case"] == "Softmax 4x16" and r["dtype"] == "float16"
                   and r["check"] == "agreement"]
        assert len(softmax) == 1
        assert split_covers(str(softmax[0]["optimization"])) == [
            ("disable_all", "passed"), ("basic", "passed"), ("extended", "divergence"),
            ("all", "divergence")]
        assert softmax[0]["result"] == "divergence", "the worst of the group is shown"
        line = "".join(s.text for s in screen.table.render_line(
            1 + grouped.index(softmax[0])))
        assert "all 4 levels" in line
        # enter opens the worst row of the group.
        screen.table.cursor = grouped.index(softmax[0])
        await pilot.pause()
        assert "2 rows" not in str(screen.query_one("#why").render())
        assert "disable_all passed · basic passed · extended divergence · all divergence" in str(
            screen.query_one("#why").render())
        worst = duckdb.execute(f"SELECT result FROM read_parquet('{observations}') "
                               "WHERE observation_id = ?", [softmax[0]["id"]]).fetchone()
        assert worst == ("divergence",)
        await pilot.press("m")
        await settle(pilot)
        assert screen.grouping == "dtypes"
        assert screen.matching_count == 4 * 2 * 5  # ops x shapes x paths
        await pilot.press("2")  # a filter applies before grouping: only divergent rows
        await settle(pilot)
        assert screen.matching_count == 4  # Softmax f16 (one dtype) at 2 shapes x 2 levels
        assert all(r["result"] == "divergence" for r in rows(screen))
        await pilot.press("m")
        await settle(pilot)
        # one row per finding: the divergent rows' findings (the Softmax f16 levels' one)
        assert screen.grouping == "findings"
        assert 1 <= screen.matching_count <= 4
        await pilot.press("m")
        await settle(pilot)
        assert screen.grouping is None
        assert screen.matching_count == 4


@pytest.mark.slow
async def test_the_grouping_survives_the_overview_and_back(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_table(pilot)
        await pilot.press("m")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.grouping == "levels" and screen.matching_count == 32


@pytest.mark.slow
async def test_frequency_of_the_column_under_the_cursor_and_enter_filters(
        data_root: Path, observations: Path) -> None:
    from gero_tui.app.screens.frequency import FrequencyScreen

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("1")  # within the filter: passed rows only
        await settle(pilot)
        for _ in range(4):  # case, (input,) runtime, path, check: the columns that fit
            if screen.table.column_key != "check":
                await pilot.press("right")
        assert screen.table.column_key == "check"
        await pilot.press("F")
        await settle(pilot)
        freq = app.screen
        assert isinstance(freq, FrequencyScreen)
        assert freq.counts is not None
        want = duckdb.execute(
            f"SELECT \"check\", count(*) FROM read_parquet('{observations}') "
            "WHERE result = 'passed' GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()
        assert [(c.value, c.rows) for c in freq.counts] == want
        assert all(set(c.by_class) == {"passed", "divergence", "contract_issue", "execution"}
                   and c.by_class["passed"] == c.rows for c in freq.counts)
        await pilot.press("down", "enter")  # the second most frequent value
        await settle(pilot)
        assert app.screen is screen
        assert screen.table_filter.checks == frozenset({want[1][0]})
        assert screen.matching_count == want[1][1]
        # Typed in one burst, before the counts are there: the keys wait for them.
        await pilot.press("left", "left", "left", "left", "F", "enter")  # to the case
        await settle(pilot)
        assert app.screen is screen
        assert len(screen.table_filter.cases) == 1


@pytest.mark.slow
async def test_grouping_rows_no_filter_matches_is_empty_not_an_error(data_root: Path) -> None:
    from gero_tui.app.widgets.filter_bar import FilterBar

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("slash", *"no such text", "enter", "m")
        await settle(pilot)
        assert screen.grouping == "levels"
        assert screen.matching_count == 0
        assert screen.query_one(FilterBar).problem == ""


@pytest.mark.slow
async def test_space_on_a_grouped_row_selects_its_group_and_export_writes_it(
        data_root: Path, observations: Path, tmp_path: Path) -> None:
    import csv

    from textual.widgets import Input

    from gero_tui.app.screens.export_dialog import ExportDialog

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("m")
        await settle(pilot)
        grouped = rows(screen)
        # Softmax 4x16 float16, agreement: the four ORT levels in one row.
        at = next(i for i, r in enumerate(grouped) if r["case"] == "Softmax 4x16"
                  and r["dtype"] == "float16" and r["check"] == "agreement")
        screen.table.cursor = at
        await pilot.press("space")
        await settle(pilot)
        members = sorted(r[0] for r in duckdb.execute(
            f"SELECT observation_id FROM read_parquet('{observations}') WHERE case_id = "
            "'synthetic/Softmax/[4,16]/float16' AND \"check\" = 'agreement'").fetchall())
        assert len(members) == 4
        assert screen.selected_count == 4
        assert screen.selected_observation_ids() == members
        assert rows(screen)[at]["id"] in members and screen.table.row(at).selected  # type: ignore[union-attr]
        # Ungrouped, each of the four rows is marked; the others are not.
        await pilot.press("m", "m", "m")
        await settle(pilot)
        assert screen.grouping is None
        marked = sorted(str(r[0]) for i in range(screen.table.row_count)
                        if (r := screen.table.row(i)) is not None and r[1])
        assert marked == members
        # Export writes the group's rows.
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert "4 selected rows" in str(dialog.scope.description)
        out = tmp_path / "group.csv"
        dialog.query_one("#export-path", Input).value = str(out)
        dialog.query_one("#export-path", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        with out.open() as f:
            assert sorted(r["observation_id"] for r in csv.DictReader(f)) == members
        await pilot.press("escape")
        await settle(pilot)
        # Grouped again, space on the group unselects all four.
        await pilot.press("m")
        await settle(pilot)
        screen.table.cursor = at
        await pilot.press("space")
        await settle(pilot)
        assert screen.selection.is_empty and screen.selected_count == 0


@pytest.mark.slow
async def test_a_group_selected_under_a_filter_holds_only_the_rows_it_matched(
        data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("2", "m")  # divergences, levels merged
        await settle(pilot)
        first = rows(screen)[0]
        assert first["optimization"] == "extended=divergence,all=divergence"
        await pilot.press("space")
        await settle(pilot)
        # The group's two divergent levels, not its two passed ones.
        assert screen.selected_count == 2


@pytest.mark.slow
async def test_grouping_again_under_the_same_filter_reuses_its_table(
        data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gero.query.table import TableQuery

    made: list[str] = []
    group = TableQuery.group

    def counting(self: TableQuery, *args: object, **kwargs: object) -> object:
        made.append(args[1].key)  # type: ignore[attr-defined]
        return group(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TableQuery, "group", counting)
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        first: list[list[dict[str, object]]] = []
        for _ in range(2):  # levels, dtypes, findings, none; twice
            for _ in range(4):
                await pilot.press("m")
                await settle(pilot)
                first.append(rows(screen))
        assert made == ["levels", "dtypes", "findings"]
        # The same rows as the first time (repr: a failed path's error is NaN).
        assert repr(first[4:]) == repr(first[:4])
        await pilot.press("2", "m")  # another filter: grouped anew
        await settle(pilot)
        assert made == ["levels", "dtypes", "findings", "levels"]
        assert screen.matching_count == 2  # Softmax f16's two shapes, extended and all merged
