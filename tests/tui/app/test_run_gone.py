"""The explorer's open run removed underneath by ``gero gc --apply`` (issue 45 item 9): it
said "the explorer stopped on an unexpected error" (a StoreError raised on the UI thread);
now one line says the run is gone, and the newest run left opens with the run picker over
it, the explorer alive."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import OLD_RUN_ID, RUN_ID, fixture_rows, settle, static_text, write_run
from textual.widgets import DataTable

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.empty import EmptyScreen
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.overview import OverviewScreen
from gero_tui.app.screens.run_picker import RunPickerScreen


def two_runs(root: Path) -> Path:
    write_run(root, OLD_RUN_ID, fixture_rows(OLD_RUN_ID)[:10])
    write_run(root, RUN_ID, fixture_rows())
    return root


def gc_keeping_the_newest(root: Path) -> None:
    """``gero gc --keep-runs 1 --apply`` in a process of its own, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "gero_cli", "gc", "--data-dir", str(root),
                           "--keep-runs", "1", "--apply"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (root / "runs" / OLD_RUN_ID).exists()


def messages(app: GeroApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_the_open_run_removed_by_gc_is_left_for_the_newest(tmp_path: Path) -> None:
    root = two_runs(tmp_path / "data")
    app = GeroApp(root, run=OLD_RUN_ID, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, EvaluationsScreen)
        gc_keeping_the_newest(root)
        await pilot.press("2")  # a new filter: a query of the run that is gone
        await settle(pilot)
        assert app.return_code is None and app._exception is None
        (said,) = messages(app)
        assert said == (f"run {OLD_RUN_ID} is gone: it was removed from {root} while it was "
                        f"open (gero gc --apply, or by hand); showing {RUN_ID} (p: another "
                        "run)")
        # The run picker over the newest run's overview, on the newest run.
        assert [type(s) for s in app.screen_stack[1:]] == [OverviewScreen, RunPickerScreen]
        picker = app.screen.query_one(DataTable)
        assert picker.row_count == 1 and app.run_id == RUN_ID
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        assert app.source is not None and app.source.run_id == RUN_ID
        assert RUN_ID in static_text(app, "#title")
        await pilot.press("3")  # the explorer goes on
        await settle(pilot)
        assert isinstance(app.screen, EvaluationsScreen) and app.screen.matching_count == 2
        assert len(messages(app)) == 1 and app.return_code is None


async def test_a_screen_that_failed_on_it_first_adds_no_second_line(tmp_path: Path) -> None:
    """The findings screen shows its own failures: over a run gone, run_gone's line is the
    one."""
    root = two_runs(tmp_path / "data")
    app = GeroApp(root, run=OLD_RUN_ID, screen="overview")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        gc_keeping_the_newest(root)
        await pilot.press("i")
        await settle(pilot)
        assert app.return_code is None
        (said,) = messages(app)
        assert said.startswith(f"run {OLD_RUN_ID} is gone")
        assert isinstance(app.screen, RunPickerScreen)
        await pilot.press("escape")  # keep the newest
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen) and app.run_id == RUN_ID


async def test_the_last_run_removed_leaves_the_empty_root_screen(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "data"
    write_run(root, RUN_ID, fixture_rows())
    app = GeroApp(root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shutil.rmtree(root / "runs" / RUN_ID)  # by hand: gc always keeps one
        await pilot.press("1")
        await settle(pilot)
        assert app.return_code is None
        (said,) = messages(app)
        assert said.endswith("; no run is left")
        assert isinstance(app.screen, EmptyScreen)
        assert "No runs in" in str(app.screen.query_one("#message").render())
