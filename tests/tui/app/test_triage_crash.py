"""The explorer never ends on a query error: cancellation is race-free, worker errors are shown."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import RUN_ID, fixture_rows, settle, write_run
from textual import events

from gero_runner.errors import StoreError
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.widgets.filter_bar import FilterBar


def _corrupt_data_pages(path: Path) -> None:
    """Overwrite the column chunks, keep the footer: the file opens, reading rows fails."""
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for group in range(meta.num_row_groups):
        for col in range(meta.num_columns):
            chunk = meta.row_group(group).column(col)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            end = min(start + chunk.total_compressed_size, footer)
            data[start:end] = b"\xff" * (end - start)
    path.write_bytes(bytes(data))


@pytest.mark.slow
async def test_long_paste_in_the_find_box_does_not_crash(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("slash")
        box = app.screen.query_one("#text-filter")
        box.post_message(events.Paste("x" * 560))
        for char in "abcdefghij" * 6:  # typing fast: each key supersedes the last query
            await pilot.press(char)
        await settle(pilot)
        assert app.is_running
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.matching_count == 0
    assert app.return_code in (0, None)


@pytest.mark.slow
async def test_a_failed_query_is_shown_and_the_next_key_works(
        data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query that fails (the opener skips files it cannot decode; a page can still fail
    later, e.g. a file damaged while the explorer runs), then more keys: shown, no crash."""
    import duckdb

    from gero.query import table as table_query

    def failing(*args: object, **kwargs: object) -> None:
        raise duckdb.IOException("Invalid Input Error: corrupt data page")

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        monkeypatch.setattr(table_query.TableQuery, "page", failing)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        bar = screen.query_one(FilterBar)
        assert "corrupt data page" in bar.problem, "the failure is on the status line"
        for key in ("2", "2", "4", "slash", "a", "b", "enter", "x"):
            await pilot.press(key)
        await settle(pilot)
        assert app.is_running
        assert screen.query_one(FilterBar).problem


def test_the_opener_skips_a_file_whose_data_pages_do_not_decode(tmp_path: Path) -> None:
    from gero.query.source import open_source

    write_run(tmp_path, RUN_ID, fixture_rows())
    _corrupt_data_pages(tmp_path / "runs" / RUN_ID / "observations.parquet")
    # The run's only file: nothing of it can be shown, and the error says why.
    with pytest.raises(StoreError, match=r"none can be read: .*does not decode"):
        open_source(tmp_path)


async def test_an_unexpected_worker_error_is_shown_not_fatal(
        data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gero.query import table as table_query

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom in a worker")

    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        monkeypatch.setattr(table_query.TableQuery, "page", broken)
        await pilot.press("2")
        await settle(pilot)
        assert app.is_running
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert "boom in a worker" in screen.query_one(FilterBar).problem
        monkeypatch.undo()
        await pilot.press("2")
        await settle(pilot)
        assert screen.query_one(FilterBar).problem == ""
