"""Every key and filter of the evaluations table: the rows shown match a DuckDB query."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from conftest import RUN_ID, settle
from table_helpers import expected, open_table, shown

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.sort_picker import SortPickerScreen
from gero_tui.app.screens.value_picker import ValuePickerScreen


@pytest.mark.parametrize(("key", "result"), [
    ("1", "passed"), ("2", "divergence"), ("3", "contract_issue"), ("4", "execution")])
@pytest.mark.slow
async def test_class_keys_toggle(data_root: Path, observations: Path, key: str, result: str
                                 ) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_table(pilot)
        assert shown(app) == expected(observations)
        await pilot.press(key)
        await settle(pilot)
        assert shown(app) == expected(observations, "result = ?", params=[result])
        await pilot.press(key)
        await settle(pilot)
        assert shown(app) == expected(observations)


async def test_two_classes_and_clear(data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("2", "4")
        await settle(pilot)
        assert shown(app) == expected(observations, "result IN ('divergence', 'execution')")
        assert screen.matching_count == 12
        await pilot.press("x")
        await settle(pilot)
        assert screen.table_filter.is_empty
        assert shown(app) == expected(observations)


@pytest.mark.slow
async def test_free_text_filter(data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_table(pilot)
        await pilot.press("slash", *"not_impl")
        await settle(pilot)
        assert shown(app) == expected(observations, "reason ILIKE '%not\\_impl%' ESCAPE '\\'")
        await pilot.press("enter")
        await pilot.press("1")  # the table has focus again: keys are filters, not text
        await settle(pilot)
        assert shown(app) == []


@pytest.mark.parametrize(("key", "column", "value"), [
    ("o", "op_type", "Erf"), ("t", "dtype", "float16"), ("z", "optimization", "basic"),
    ("u", "suite", "onnx-backend"), ("c", "check", "analytic"), ("w", "blamed", "reference")])
@pytest.mark.slow
async def test_value_filters(data_root: Path, observations: Path, key: str, column: str,
                             value: str) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press(key)
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ValuePickerScreen)
        assert picker.values is not None
        values = [v for v, _ in picker.values]
        distinct = [] if column == "blamed" else duckdb.execute(
            f'SELECT DISTINCT "{column}" FROM read_parquet(\'{observations}\')').fetchall()
        if column == "optimization":
            # The levels in their natural order, the reference path named as the table does.
            assert values == ["disable_all", "basic", "extended", "all", "reference"]
        elif column == "blamed":
            # Paths as the Path column names them; passed rows blame none.
            assert set(values) == {"disable_all", "basic", "extended", "all", "reference"}
        else:
            assert values == sorted(r[0] for r in distinct)
        for _ in range(values.index(value)):
            await pilot.press("down")
        await pilot.press("space", "enter")
        await settle(pilot)
        assert app.screen is screen
        if column == "blamed":
            # float64 sides with ORT (the reference is the wrong side), or the reference
            # path itself is off against float64
            assert shown(app) == expected(observations, "arbiter = 'actual' OR (backend = "
                                          "'onnx-reference' AND result <> 'passed')")
        else:
            assert shown(app) == expected(observations, f'"{column}" = ?', params=[value])
        where, params = screen.filter_where()
        assert expected(observations, where, params=params) == shown(app)


@pytest.mark.parametrize("column", ["max_abs_error", "case", "result"])
@pytest.mark.slow
async def test_sort_picker_and_reverse(data_root: Path, observations: Path, column: str
                                       ) -> None:
    # A failed path's NaN error sorts last either way, like a missing one; ties in run order.
    order = {"max_abs_error": "CASE WHEN isnan(max_abs_error) THEN NULL ELSE max_abs_error END",
             "case": "op_type {d}, case_name", "result": "result"}[column]
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SortPickerScreen)
        keys = ["run", "case", "input", "runtime", "optimization", "check", "dtype",
                "max_abs_error", "result", "blamed", "details"]
        for _ in range(keys.index(column)):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        descending = column == "max_abs_error"  # numbers sort largest first
        d = "DESC" if descending else "ASC"
        sql = order.format(d=d) if "{d}" in order else order
        want = expected(observations, order=f"ORDER BY {sql} {d} NULLS LAST, file_row_number")
        assert shown(app) == want
        assert screen.sort.column == column
        await pilot.press("S")
        await settle(pilot)
        r = "ASC" if descending else "DESC"
        sql = order.format(d=r) if "{d}" in order else order
        assert shown(app) == expected(
            observations, order=f"ORDER BY {sql} {r} NULLS LAST, file_row_number")


@pytest.mark.slow
async def test_selection_space_and_all(data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        first = shown(app)[:2]
        await pilot.press("space", "space")  # the cursor stays: selected, then not
        await settle(pilot)
        assert screen.selection.is_empty
        await pilot.press("space", "down", "space")  # space Down space: two rows
        await settle(pilot)
        assert screen.selected_count == 2
        assert set(screen.selected_observation_ids()) == set(first)
        await pilot.press("space")  # unselect the second again
        await settle(pilot)
        assert screen.selected_observation_ids() == [first[0]]
        await pilot.press("4", "a")
        await settle(pilot)
        matching = expected(observations, "result = 'execution'", "ORDER BY observation_id")
        assert screen.selected_observation_ids() == matching
        assert screen.selected_count == len(matching)
        where, params = screen.selection_where()
        assert sorted(expected(observations, where, params=params)) == matching
        await pilot.press("a")  # the same filter again: unselect all
        await settle(pilot)
        assert screen.selection.is_empty and screen.selected_count == 0


async def test_part_two_hooks_post_messages(data_root: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    app = GeroApp(data_root, screen="evaluations")
    seen: list[object] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        monkeypatch.setattr(screen, "open_evaluation",
                            lambda oid, rn: seen.append(("open", oid, rn)))
        monkeypatch.setattr(screen, "replay_evaluation",
                            lambda oid, rn: seen.append(("replay", oid, rn)))
        await pilot.press("down", "enter", "r")
        await pilot.pause()
        second = shown(app)[1]
        # The row number goes with the id: the detail view reads the row by it.
        rn = screen.table.current_row_number
        assert rn is not None
        assert seen == [("open", second, rn), ("replay", second, rn)]


@pytest.mark.slow
async def test_escape_goes_back_and_q_quits(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_table(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "OverviewScreen"
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_run_id_prefix_and_picker(data_root: Path) -> None:
    app = GeroApp(data_root, run="2025")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.run_id != RUN_ID and app.source is not None
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("up", "enter")  # newest run is listed first
        await settle(pilot)
        assert app.run_id == RUN_ID and app.source is not None
        assert app.source.run_id == RUN_ID


@pytest.mark.parametrize("typed", ["erf", "e/r"])
@pytest.mark.slow
async def test_keys_in_one_burst_with_slash_reach_the_text_box(data_root: Path, typed: str
                                                               ) -> None:
    # A paste or SSH batching: every key is queued before the first is handled. `e` and `r`
    # must not export or replay; a `/` typed in the box is text.
    from textual import events

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        for key, char in [("slash", "/"), *[("slash" if c == "/" else c, c) for c in typed]]:
            app.post_message(events.Key(key, char))
        await settle(pilot)
        assert app.screen is screen
        assert screen.table_filter.text == typed
