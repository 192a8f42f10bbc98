"""Filtering never blocks the event loop; empty and corrupt data roots do not crash the app."""

from __future__ import annotations

import asyncio
import io
import itertools
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import RUN_ID, fixture_rows, settle, write_run
from rich.console import Console

from gero.query import table as table_query
from gero.query.table import TableFilter, TableQuery
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.help import HelpScreen, bindings_table
from gero_tui.app.widgets.filter_bar import FilterBar


@pytest.mark.slow
async def test_slow_query_is_interrupted_by_a_newer_filter(
        data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    interrupted: list[str] = []
    real_page = TableQuery.page

    def page(self: TableQuery, table_filter: TableFilter, *args: Any) -> table_query.Page:
        if table_filter.text == "slow":
            try:  # a query that would run for minutes unless interrupted
                self.cursor.execute("SELECT count(*) FROM range(10000000000) a "
                                    "WHERE hash(a.range) = 42").fetchall()
            except duckdb.InterruptException:
                interrupted.append("slow")
                raise
        return real_page(self, table_filter, *args)

    monkeypatch.setattr(table_query.TableQuery, "page", page)
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        screen.set_filter(TableFilter(text="slow"))
        # The event loop keeps running timers while the slow query runs in its worker.
        ticks: list[float] = []
        timer = app.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
        await asyncio.sleep(0.5)
        timer.stop()
        # A blocked loop would tick once or twice in 0.5 s; allow for a busy 2-core CI box.
        assert len(ticks) >= 5
        assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.4
        assert screen.query_one(FilterBar).busy
        screen.set_filter(TableFilter(text="fast"))
        await settle(pilot)
        assert interrupted == ["slow"]
        assert screen.table_filter.text == "fast"
        assert screen.matching_count is not None and not screen.query_one(FilterBar).busy


async def test_empty_data_root_says_how_to_make_a_run(tmp_path: Path) -> None:
    app = GeroApp(tmp_path / "nothing-here")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one("#message").render())
        assert "No runs in" in text and "gero run --data-dir" in text
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("escape", "q")
    assert app.return_code == 0


@pytest.mark.slow
async def test_corrupt_parquet_is_named_and_skipped(tmp_path: Path) -> None:
    rows = fixture_rows()
    write_run(tmp_path, "20250101-000000-000000", rows[:8])
    write_run(tmp_path, RUN_ID, rows[8:], sighted=rows)  # sighted rows live in both files
    bad = tmp_path / "runs" / "20250101-000000-000000" / "observations.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    app = GeroApp(tmp_path, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.source is not None
        assert any(str(bad) in p for p in app.source.problems)
        assert any(str(bad) in n.message for n in app._notifications)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.matching_count == len(rows) - 8  # the readable file's rows
        await pilot.press("escape")
        await settle(pilot)
        assert str(bad) in str(app.screen.query_one("#problems").render())


@pytest.mark.slow
async def test_zero_rows_in_a_class(data_root: Path, tmp_path: Path) -> None:
    rows = [r for r in fixture_rows() if r["result"] == "passed"]
    write_run(tmp_path, RUN_ID, rows)
    app = GeroApp(tmp_path, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.matching_count == 0
        assert "No evaluations match" in "".join(
            s.text for s in screen.table.render_line(1))
        await pilot.press("space", "enter", "r", "e", "a")
        await settle(pilot)


@pytest.mark.slow
async def test_help_and_command_palette_list_every_key(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        commands = [c.title for c in app.get_system_commands(screen)]
        for name in ("Find", "Op", "Dtype", "Opt", "Clear", "Sort", "Select", "Select all",
                     "Export", "Open", "Replay", "Quit", "Help", "Runs"):
            assert any(c.startswith(name + " (") for c in commands), name
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(bindings_table(screen))
        lines = console.export_text().splitlines()
        for key in ("1", "2", "3", "4", "/", "o", "t", "z", "u", "c", "s", "space", "a", "e",
                    "r", "⏎", "x", "esc", "q", "?", "p"):
            # (an action's keys share its row: "q, ^q")
            assert any(line.split()[0].rstrip(",") == key for line in lines if line.strip()), key
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
