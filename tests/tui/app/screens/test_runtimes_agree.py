"""Runtimes that agree with each other against the reference and float64 are said to, and
`D` compares a finding's runtime with another (gero diff --backend X --against Y)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import RUN_ID, fixture_rows, settle, write_run
from textual.widgets import DataTable, Static

from gero.query.agreement import agreeing
from gero.query.findings import ensure_members, read_findings
from gero.query.source import open_source
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.choice import ChoiceScreen
from gero_tui.app.screens.diff import DiffScreen
from gero_tui.app.screens.findings import FindingsScreen


@pytest.fixture(scope="module")
def two_runtimes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture run, and OpenVINO giving ORT's `all` output on the Softmax cases."""
    root = tmp_path_factory.mktemp("agree")
    rows = fixture_rows()
    for row in rows:  # float64 sides with the reference at both levels: ORT is off
        if row["arbiter"] == "actual":
            row["arbiter"] = "reference"
    extra = []
    for row in rows:
        if row["backend"] == "onnxruntime" and row["optimization"] == "all":
            copy = dict(row, backend="openvino", optimization="f32")
            copy["observation_id"] = hashlib.sha256(
                (row["observation_id"] + "ov").encode()).hexdigest()
            extra.append(copy)
    write_run(root, RUN_ID, rows + extra)
    return root


def _finding(root: Path, outlier: str) -> str:
    source = open_source(root)
    ensure_members(source)
    return next(f.finding_id for f in read_findings(source)
                if f.outlier.startswith(outlier) and f.result == "divergence")


@pytest.mark.slow
def test_the_same_error_on_the_same_cases_is_said_once_for_each(two_runtimes: Path) -> None:
    source = open_source(two_runtimes)
    ort, ov = _finding(two_runtimes, "onnxruntime"), _finding(two_runtimes, "openvino")
    (agreement,) = agreeing(source, ort)
    assert agreement.finding_id == ov and agreement.cases == agreement.of_cases == 2
    assert agreement.sentence().startswith("OpenVINO gives the same error on 2 of 2 cases")
    assert "against the reference and float64" in agreement.sentence()
    assert [a.finding_id for a in agreeing(source, ov)] == [ort]


@pytest.mark.slow
async def test_the_findings_screen_says_so_and_d_diffs_the_runtimes(two_runtimes: Path) -> None:
    ort = _finding(two_runtimes, "onnxruntime")
    app = GeroApp(two_runtimes, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        row = [f.finding_id for f in screen.report.findings].index(ort)
        screen.query_one(DataTable).move_cursor(row=row)
        for _ in range(3):
            await pilot.pause(0.3)
            await settle(pilot)
        detail = str(screen.query_one("#finding-detail", Static).render())
        assert "≡ OpenVINO gives the same error on 2 of 2 cases" in detail
        await pilot.press("D")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ChoiceScreen)
        assert ("openvino/f32", "ov:f32") in picker.choices
        index = picker.choices.index(("openvino/f32", "ov:f32"))
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        diff = app.screen
        assert isinstance(diff, DiffScreen)
        assert diff.report is not None
        assert "--backend onnxruntime --against openvino/f32" in diff.what
        counts = str(diff.query_one("#diff-counts", Static).render())
        assert "unchanged" in counts
