"""Names with markup and terminal escapes in the explorer: each is shown literally, in the
table, the titles, the findings, the detail view and a toast; none is markup or reaches the
terminal as a control sequence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import RUN_ID, fixture_rows, settle, write_run
from textual.widget import Widget
from textual.widgets import DataTable, Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.overview import OverviewScreen
from gero_tui.app.widgets.operation_bars import OperationBars
from gero_tui.app.widgets.timing_table import TimingTable

HOSTILE = "\x1b[2J\u202e\x1b]0;pwned\x07[bold]b[/][link=http://e]l[/link]"
SHOWN = "\\x1b[2J\\u202e\\x1b]0;pwned\\x07[bold]b[/][link=http://e]l[/link]"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    """The fixture run with every operation, case, output, reason and the suite hostile."""
    rows = fixture_rows()
    for r in rows:
        r["op_type"] = f"{r['op_type']}{HOSTILE}"
        r["case_id"] = f"{r['case_id']}{HOSTILE}"
        r["case_name"] = f"{r['case_name']}{HOSTILE}"
        r["output_name"] = f"y{HOSTILE}"
        r["reason"] = f"{r['reason']} at {HOSTILE}"
    write_run(tmp_path, RUN_ID, rows)
    record = tmp_path / "runs" / RUN_ID / "run.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "suite": f"s{HOSTILE}"}))
    return tmp_path


def _shown(widget: Static) -> str:
    """What a Static draws (its markup, if any, applied)."""
    return str(widget.render())


def _lines(widget: Widget, count: int) -> str:
    """What a line-drawn widget (a table, a list) draws on its first lines."""
    return "\n".join("".join(s.text for s in widget.render_line(y)) for y in range(count))


@pytest.mark.slow
async def test_hostile_names_are_shown_literally_everywhere(hostile_root: Path) -> None:
    app = GeroApp(hostile_root)
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        overview = app.screen
        assert isinstance(overview, OverviewScreen)
        for _ in range(50):  # a loaded machine draws the table before its widths settle
            timings = _lines(overview.query_one(TimingTable), 4)
            if "Abs\\x1b[2J" in timings:
                break
            await pilot.pause(0.1)
        bars = _lines(overview.query_one(OperationBars), 4)
        for shown in (bars, timings):
            assert RAW.search(shown) is None and "Abs\\x1b[2J" in shown
        assert "[bold]b[/]" in timings  # a DataTable cell, not markup

    app = GeroApp(hostile_root, screen="evaluations")
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        title = _shown(screen.query_one("#title", Static))
        assert f"s{SHOWN}" in title
        table = _lines(screen.table, 6)
        assert RAW.search(table) is None and "\\x1b[2J\\u202e" in table
        why = _shown(screen.query_one("#why", Static))
        assert RAW.search(why) is None and f"at {SHOWN}" in why

        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        heading = _shown(detail.query_one("#detail-title", Static))
        assert RAW.search(heading) is None
        assert heading.startswith(f"Abs{SHOWN} · Abs 4x16{SHOWN}")

        await pilot.press("i")
        await settle(pilot)
        findings = app.screen
        assert isinstance(findings, FindingsScreen) and findings.report
        rows = _lines(findings.query_one(DataTable), 4)
        assert RAW.search(rows) is None and f"{SHOWN}" in rows
        detail_text = _shown(findings.query_one("#finding-detail", Static))
        assert RAW.search(detail_text) is None and f"at {SHOWN}" in detail_text

        findings.notify(f"cannot open {HOSTILE}", title=f"t{HOSTILE}")
        await pilot.pause()
        toast = list(app._notifications)[-1]
        assert toast.message == f"cannot open {SHOWN}" and toast.title == f"t{SHOWN}"
        assert not toast.markup
