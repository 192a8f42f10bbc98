"""Runs and baselines: a running run says so, the run picker shows status, runtimes and
command and diffs a run with the open one, the Findings screen's baseline can be chosen."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import OLD_RUN_ID, RUN_ID, settle
from textual.widgets import DataTable, Static

from gero_runner.storage.locks import RunLock
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.choice import ChoiceScreen
from gero_tui.app.screens.diff import DiffScreen
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.run_picker import RunPickerScreen


@pytest.fixture
def running_root(data_root: Path, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(data_root, root)
    record = root / "runs" / RUN_ID / "run.json"
    info = json.loads(record.read_text())
    info.update(status="running", backends={"onnxruntime": "1.32.0", "openvino": "2026.4",
                                            "onnx-reference": "1.23.2"},
                command_line="gero run --backends onnxruntime,openvino")
    record.write_text(json.dumps(info))
    return root


@pytest.mark.slow
async def test_a_running_run_says_so_and_the_picker_shows_status_runtimes_command(
        running_root: Path) -> None:
    lock = RunLock(running_root / "runs" / RUN_ID)  # as the run's own process holds it
    try:
        app = GeroApp(running_root)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert "RUNNING" in app.title_line()
            await pilot.press("p")
            await settle(pilot)
            picker = app.screen
            assert isinstance(picker, RunPickerScreen)
            table = picker.query_one(DataTable)
            labels = [str(c.label) for c in table.columns.values()]
            assert {"Status", "Runtimes", "Command"} <= set(labels)
            row = [str(cell) for cell in table.get_row_at(0)]  # Texts: never markup
            assert row[labels.index("Status")] == "running"
            assert row[labels.index("Runtimes")] == "ort 1.32.0 · ov 2026.4"
            assert row[labels.index("Command")] == "run --backends onnxruntime,openvino"
    finally:
        lock.release()
    # Its process gone, the same record reads as interrupted.
    app = GeroApp(running_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "interrupted" in app.title_line() and "RUNNING" not in app.title_line()


@pytest.mark.slow
async def test_d_in_the_run_picker_diffs_that_run_with_the_open_one(data_root: Path) -> None:
    app = GeroApp(data_root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, RunPickerScreen)
        picker.query_one(DataTable).move_cursor(row=1)  # the older run
        await pilot.press("d")
        await settle(pilot)
        diff = app.screen
        assert isinstance(diff, DiffScreen) and diff.report is not None
        assert diff.report.base_run == OLD_RUN_ID and diff.report.current_run == RUN_ID
        counts = diff.report.counts()
        assert counts["new"] == 70 and counts["compatible_pairs"] == 10
        assert f"gero diff {OLD_RUN_ID} {RUN_ID}" in diff.what
        await pilot.press("escape")
        assert app.screen is not diff


@pytest.mark.slow
async def test_the_findings_baseline_can_be_chosen(data_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(data_root, root)
    app = GeroApp(root, run=OLD_RUN_ID, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        assert screen.report.baseline_run_id is None  # the oldest run: nothing before it
        await pilot.press("c")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ChoiceScreen)
        assert [key for key, _ in picker.choices] == [RUN_ID]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and app.screen.report is not None
        assert app.screen.report.baseline_run_id == RUN_ID
        assert f"since {RUN_ID}" in str(screen.query_one("#summary", Static).render())
