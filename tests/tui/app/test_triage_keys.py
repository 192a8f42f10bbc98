"""Keys typed while a screen opens go to that screen; pickers, find box and overview keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import settle
from table_helpers import expected, open_table, shown

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen


@pytest.mark.slow
async def test_keys_typed_before_the_picker_has_its_values_go_to_the_picker(
        data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        # One burst, as a fast typist or a paste over SSH sends it: no pause for the query.
        await pilot.press("t", "space", "enter")
        await settle(pilot)
        assert app.screen is screen, "no detail opened, no picker left on top"
        assert screen.table_filter.dtypes == frozenset({"float16"})
        assert shown(app) == expected(observations, "dtype = 'float16'")


@pytest.mark.slow
async def test_slash_on_the_overview_opens_the_find_box_and_takes_the_keys(
        data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert type(app.screen).__name__ == "OverviewScreen"
        await pilot.press("slash", *"not_impl")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.table_filter.text == "not_impl"
        assert shown(app) == expected(observations, "contains(lower(reason), 'not_impl')")


@pytest.mark.slow
async def test_escape_in_the_find_box_stays_on_the_table(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("slash", "e", "r", "f", "escape")
        await settle(pilot)
        assert app.screen is screen
        assert screen.focused is screen.table
        assert screen.table_filter.text == "erf"


@pytest.mark.slow
async def test_the_sort_survives_the_overview_and_back(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("s")
        await pilot.pause()
        for _ in range(7):  # Max abs. error
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.sort.column == "max_abs_error"
        await pilot.press("escape")
        await settle(pilot)
        assert type(app.screen).__name__ == "OverviewScreen"
        await pilot.press("v")
        await settle(pilot)
        table = app.screen
        assert isinstance(table, EvaluationsScreen)
        assert table.sort.column == "max_abs_error" and table.sort.descending


@pytest.mark.slow
async def test_a_new_filter_drops_the_selection_and_says_so(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("space", "down", "space")
        await settle(pilot)
        assert screen.selected_count == 2
        await pilot.press("4")
        await settle(pilot)
        assert screen.selection.is_empty and screen.selected_count == 0
        assert any("selection cleared" in n.message for n in app._notifications)


async def test_the_why_line_shows_the_full_reason_under_the_cursor(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_table(pilot)
        await pilot.press("4")
        await settle(pilot)
        row = screen.table.row(screen.table.cursor)
        assert row is not None
        why = str(screen.query_one("#why").render())
        assert "execution: ort-disable_all failed: NOT_IMPLEMENTED Erf(13)" in why
        await pilot.press("down")
        await pilot.pause()
        assert "ort-basic failed" in str(screen.query_one("#why").render())



@pytest.mark.slow
async def test_at_80_columns_the_key_bar_keeps_the_app_keys_and_one_key_means_one_thing(
        data_root: Path) -> None:
    """Findings is `i` everywhere, help `?`, quit `q`; `F` on the table is the frequency view
    (VisiData's Shift-F), and no screen binds a key to Findings but the app."""
    from gero_tui.app.widgets.key_bar import KeyBar

    app = GeroApp(data_root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        seen: dict[str, str] = {}
        for keys in ((), ("v",), ("i",)):
            await pilot.press(*keys)
            await settle(pilot)
            bar = app.screen.query_one(KeyBar)
            lines = str(bar.render()).splitlines()
            assert 1 <= len(lines) <= 3 and all(len(line) <= 80 for line in lines)
            text = " ".join(lines)
            for shown in ("i Findings", "p Runs", "q Quit", "? Help"):
                assert shown in text, (type(app.screen).__name__, shown, text)
            for active in app.screen.active_bindings.values():
                binding = active.binding
                if binding.description == "Findings":
                    assert binding.key == "i" and active.node is app
                if active.node is app.screen:
                    seen.setdefault(f"{type(app.screen).__name__}:{binding.key}",
                                    binding.action)
        assert seen["EvaluationsScreen:F"] == "frequency"
        assert "OverviewScreen:f" not in seen and "OverviewScreen:F" not in seen
