"""Keys typed fast never dismiss twice; an unexpected error ends the explorer with one line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import RUN_ID, settle
from textual import events
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable

from gero.query.table import TableFilter, TableSort
from gero_runner.storage.runs import list_runs
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.export_dialog import ExportDialog, ExportScope
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.frequency import FrequencyScreen
from gero_tui.app.screens.help import HelpScreen
from gero_tui.app.screens.op_histogram import OpHistogramScreen
from gero_tui.app.screens.overview import OverviewScreen
from gero_tui.app.screens.run_picker import RunPickerScreen
from gero_tui.app.screens.sort_picker import SortPickerScreen
from gero_tui.app.screens.value_picker import ValuePickerScreen
from gero_tui.app.screens.whatif_dialog import WhatIfDialog


@pytest.mark.slow
async def test_enter_enter_in_the_run_picker_opens_the_run_once(data_root: Path) -> None:
    """Both enters reach the picker's table before the first dismisses it: the second
    popped the overview (a blank screen), then raised ScreenStackError."""
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, RunPickerScreen)
        table = picker.query_one(DataTable)
        table.move_cursor(row=1)  # the older run
        for _ in range(2):
            app.post_message(events.Key("enter", "\r"))
        await settle(pilot)
        assert app.is_running
        assert isinstance(app.screen, OverviewScreen)
        assert app.run_id != RUN_ID
    assert app.return_code in (0, None)


@pytest.mark.slow
async def test_enter_enter_on_the_overview_opens_one_table(data_root: Path) -> None:
    """The second enter reached the overview's bars after the first pushed the table, and
    set a filter on the table before it was composed (NoMatches)."""
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for _ in range(2):
            app.post_message(events.Key("enter", "\r"))
        await settle(pilot)
        assert app.is_running
        assert isinstance(app.screen, EvaluationsScreen)
        assert sum(isinstance(s, EvaluationsScreen) for s in app.screen_stack) == 1
    assert app.return_code in (0, None)


@pytest.mark.slow
async def test_enter_enter_on_the_findings_opens_one_table(data_root: Path) -> None:
    app = GeroApp(data_root, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        for _ in range(2):
            app.post_message(events.Key("enter", "\r"))
        await settle(pilot)
        assert app.is_running
        assert isinstance(app.screen, EvaluationsScreen)
    assert app.return_code in (0, None)


def _dialogs(app: GeroApp) -> list[tuple[Screen[Any], Callable[[Any], None]]]:
    """Every screen that dismisses itself, with the action that dismisses it."""
    source = app.require_source()
    scope = ExportScope("true", (), "all rows", None)
    return [
        (RunPickerScreen(list_runs(app.data_root), app.run_id),
         lambda s: s.on_data_table_row_selected(
             DataTable.RowSelected(s.query_one(DataTable), 0,
                                   s.query_one(DataTable).coordinate_to_cell_key((0, 0))[0]))),
        (SortPickerScreen(TableSort()), lambda s: s.action_cancel()),
        (FrequencyScreen("Op", lambda: [], True, "all rows"), lambda s: s.action_cancel()),
        (ValuePickerScreen("Op", lambda: [("Abs", 1)], frozenset()),
         lambda s: s.action_apply()),
        (HelpScreen(app.screen), lambda s: s.action_close()),
        (ExportDialog(source, scope), lambda s: s.action_close()),
        (WhatIfDialog(source, []), lambda s: s.action_dismiss_dialog()),
        (OpHistogramScreen(source, op_type="Abs"), lambda s: s.action_back()),
        (FindingsScreen(), lambda s: s.action_back()),
        (EvaluationsScreen(TableFilter()), lambda s: s.action_back()),
    ]


@pytest.mark.slow
async def test_every_dismissing_screen_ignores_a_second_dismiss(data_root: Path) -> None:
    """Two dismissing events in one go (as two queued keys are): the screen below stays."""
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        below = app.screen
        assert isinstance(below, OverviewScreen)
        for screen, dismiss in _dialogs(app):
            await app.push_screen(screen)
            await settle(pilot)
            assert app.screen is screen
            dismiss(screen)
            dismiss(screen)
            await settle(pilot)
            assert app.is_running, type(screen).__name__
            assert app.screen is below, type(screen).__name__
    assert app.return_code in (0, None)


@pytest.mark.slow
async def test_escape_twice_in_the_detail_view_goes_back_once(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        detail.action_back()
        detail.action_back()
        await settle(pilot)
        assert app.screen is table


def test_an_unexpected_error_exits_1_with_one_line(
        data_root: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gero_cli import tui_cmd

    def broken(self: GeroApp) -> None:
        raise RuntimeError("a bug\nover two lines")

    async def press_i(pilot: Any) -> None:
        await pilot.press("i")

    def run_headless(self: App[None], **kwargs: Any) -> None:
        App.run(self, headless=True, size=(80, 24), auto_pilot=press_i)

    monkeypatch.setattr(GeroApp, "action_findings", broken)
    monkeypatch.setattr(GeroApp, "run", run_headless)
    args = argparse.Namespace(data_dir=data_root, run=None, screen="overview")
    assert tui_cmd.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert err.startswith("gero: error: the explorer stopped on an unexpected error: "
                          "RuntimeError: a bug over two lines (traceback in ")
    saved = Path(err.rsplit("traceback in ", 1)[1].rstrip(")"))
    assert "raise RuntimeError" in saved.read_text()
    saved.unlink()
