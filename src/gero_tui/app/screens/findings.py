"""The findings: a run's non-passed observations grouped by cause, worst first.

`i` from anywhere. The findings are computed in DuckDB off the UI thread (the members
table stays in the run's database, so ``enter`` opens the evaluations table filtered to
the highlighted finding); each row says its class, how many observations and cases it
covers, whether it is new since the previous run of the suite, and the cause in words.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from gero.query.table import TableFilter
from gero_runner.errors import GeroError
from gero_runner.escape import for_shell, for_terminal
from gero_runner.result_classes import RESULT_ABBREVIATIONS
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.app.widgets.palette import CLASS_COLORS

if TYPE_CHECKING:
    from gero.query.findings import Finding, FindingsReport
    from gero_tui.app.base import ExplorerApp

STATUS_STYLE = {"new": "bold #f4005f", "still": "dim", "gone": "#98e024"}
TITLE_MIN = 20
"""The finding column's width at least (a narrower terminal scrolls it sideways)."""


def _origin_line(source: Any, f: Finding) -> list[Text | str | tuple[str, str]]:
    """Where the finding's error enters, when `gero localize` (or `L`) stored it."""
    from gero.api import finding_localization

    if source is None:
        return []
    loc = finding_localization(source, f)  # its own rows' only, as the HTML report
    if loc is None:
        return []
    o = loc.origins[0]
    return [("\nlocalized: ", "bold"),
            (for_terminal(f"origin {o.node} ({o.op_type})"), "bold red"),
            f": inputs agree to {o.inputs_scaled_error or 0:.2g}, alone "
            f"{o.local_scaled_error or 0:.2g}",
            *([("  repro: gero replay " + for_shell(loc.repro), "dim")] if loc.repro
              else [])]


def summary_line(report: FindingsReport, readable: str | None = None) -> Text:
    """How many findings cover how many observations, and what changed since the baseline
    (``readable``: a partly readable run's "N of M readable")."""
    text = Text.assemble((f"{len(report.findings)} findings", "bold"),
                         f" cover {report.non_passed:,} non-passed observations")
    if readable:
        text.append(f" (of {readable})", style="bold yellow")
    if report.baseline_run_id is None:
        text.append("  (no earlier run of this suite)", style="dim")
        return text
    new = sum(f.status == "new" for f in report.findings)
    text.append(f" · since {for_terminal(report.baseline_run_id)}: ")
    text.append(f"{new} new", style=STATUS_STYLE["new"] if new else "")
    text.append(f", {len(report.findings) - new} still, ")
    text.append(f"{len(report.gone)} gone", style=STATUS_STYLE["gone"] if report.gone else "")
    if report.unresolved:
        # Not "not rerun": a case that ran again and now fails under a new cause is one too.
        text.append(f", {len(report.unresolved)} unresolved (absent here, but a case that "
                    "showed it did not run again or fails under a new cause)", style="dim")
    return text


class FindingsScreen(Screen[None]):
    """Every cause behind the run's non-passed observations; `enter` shows its rows."""

    app: ExplorerApp

    # Its rules (findings.tcss) are the app's: see GeroApp.CSS_PATH.
    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: the table would take enter (its hidden select), and the key bar and the
        # help would not list the screen's.
        Binding("enter", "open_finding", "Its evaluations", priority=True),
        Binding("escape", "back", "Back"),
        Binding("v", "open_all", "Evaluations"),
        Binding("e", "report", "Report",
                tooltip="Write the finding's Markdown report (replay and bundle commands) "
                "and its bundle"),
        Binding("c", "pick_baseline", "Baseline",
                tooltip="The run the new / still / gone statuses compare with"),
        Binding("D", "compare_runtimes", "Diff",
                tooltip="The highlighted finding's runtime against another of the run "
                "(gero diff --backend X --against Y)"),
        Binding("w", "what_if", "What-if",
                tooltip="Re-grade under other tolerances, live, from the stored figures"),
        Binding("L", "localize", "Localize",
                tooltip="Error through the graph of the finding's worst observation"),
    ]

    class Loaded(Message):
        def __init__(self, report: FindingsReport, readable: str | None = None) -> None:
            self.report = report
            self.readable = readable
            """``readable_text`` of a partly readable run."""
            super().__init__()

    class Failed(Message):
        def __init__(self, error: str) -> None:
            self.error = error
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.report: FindingsReport | None = None
        """The findings shown, once computed."""
        self._agreements: dict[str, str] = {}
        """Per finding: the other runtimes that agree with it, in words ("" for none)."""
        self.report_directory: Path | None = None
        """Where `e` proposes to write (None: the current directory)."""

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static("computing findings…", id="summary")
        table: DataTable[Any] = DataTable(id="findings", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static(id="finding-detail")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in (("class", "class"), ("obs", "obs"), ("cases", "cases"),
                           ("status", "status"), ("title", "finding")):
            table.add_column(label, key=key, width=len(label))
        table.focus()
        self.source_changed()
        self.watch(self.app, "source", self.source_changed, init=False)

    def source_changed(self) -> None:
        """The app opened (another) run: compute its findings."""
        source = self.app.source
        self._agreements.clear()
        self.query_one("#title", Static).update(Text(self.app.title_line()))
        if source is None:
            return
        ready = self.app.findings_ready(source)
        if ready is not None:  # the overview computed them: paint next, no thread hop
            self.report = ready
            self.post_message(self.Loaded(ready))
        self._load(source)

    @work(thread=True, exclusive=True, group="findings")
    def _load(self, source: Any) -> None:
        from gero.query.findings import ensure_members

        try:
            report = self.app.findings(source)
            readable = self.app.readable_note(source)
            if report is not self.report or readable:  # not already painted as it is
                self.post_message(self.Loaded(report, readable))
            ensure_members(source)  # after the paint: what `enter` filters by
        except (duckdb.Error, GeroError) as e:
            self.post_message(self.Failed(str(e)))

    def on_findings_screen_loaded(self, message: Loaded) -> None:
        if self.query_one(DataTable).size.width == 0:
            # Before the table's first layout its auto-width title column would keep the
            # header's width (seen under load as a 7-character title column): paint after.
            self.call_after_refresh(self.on_findings_screen_loaded, message)
            return
        self.report = message.report
        self.query_one("#summary", Static).update(summary_line(message.report,
                                                               message.readable))
        self._paint()
        self._show_detail()

    def _paint(self, cursor: int = 0) -> None:
        """The findings in the table: the figures as wide as theirs, the title in the rest
        of the width, wrapped rather than cut (two titles cut at 80 columns read the same:
        "Softmax (float64) breaks the probability_ext")."""
        table = self.query_one(DataTable)
        findings = self.report.findings if self.report is not None else []
        widths = {
            "class": max([5, *(len(RESULT_ABBREVIATIONS.get(f.result, f.result))
                               for f in findings)]),
            "obs": max([3, *(len(f"{f.observations:,}") for f in findings)]),
            "cases": max([5, *(len(f"{f.cases:,}") for f in findings)]),
            "status": max([6, *(len(f.status or "—") for f in findings)]),
        }
        padding = 2 * table.cell_padding
        # The vertical scrollbar's room kept: rows that wrap may need it once painted.
        room = (table.size.width - table.styles.scrollbar_size_vertical
                - sum(w + padding for w in widths.values()) - padding)
        widths["title"] = max(TITLE_MIN, room)
        for key, width in widths.items():
            column = table.columns[ColumnKey(key)]
            column.width, column.auto_width = width, False
        self._painted_width = table.size.width
        table.clear()
        for f in findings:
            color = CLASS_COLORS.get(f.result, "")
            title = Text(for_terminal(f.title))
            table.add_row(Text(RESULT_ABBREVIATIONS.get(f.result, f.result), style=color),
                          Text(f"{f.observations:,}", justify="right"),
                          Text(f"{f.cases:,}", justify="right"),
                          Text(f.status or "—", style=STATUS_STYLE.get(f.status, "dim")),
                          title, key=f.finding_id,
                          height=None if title.cell_len > widths["title"] else 1)
        if findings:
            table.move_cursor(row=min(cursor, len(findings) - 1))

    _painted_width = 0
    """The table's width when the findings were painted: another (a resize) paints again."""

    def on_resize(self) -> None:
        table = self.query_one(DataTable)
        if self.report is not None and table.size.width != self._painted_width:
            self._paint(table.cursor_row)

    def on_findings_screen_failed(self, message: Failed) -> None:
        self.query_one("#summary", Static).update(
            Text(for_terminal(f"cannot compute findings: {message.error}")))
        self.notify(message.error, title="Findings failed", severity="error", timeout=10)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    class Agreed(Message):
        def __init__(self, finding_id: str, text: str) -> None:
            self.finding_id, self.text = finding_id, text
            super().__init__()

    @work(thread=True, exclusive=True, group="agreement", exit_on_error=False)
    def _agreement(self, source: Any, finding_id: str) -> None:
        """Other runtimes' findings that gave the same output (after a pause: keys that
        move the cursor fast start one query, not one per row)."""
        import time

        from textual.worker import get_current_worker

        from gero.query.agreement import agreeing

        time.sleep(0.15)
        if get_current_worker().is_cancelled:
            return
        try:
            found = agreeing(source, finding_id)
        except (duckdb.Error, GeroError):
            return
        self._agreements[finding_id] = "; ".join(a.sentence() for a in found)
        self.post_message(self.Agreed(finding_id, self._agreements[finding_id]))

    def on_findings_screen_agreed(self, message: Agreed) -> None:
        f = self.highlighted()
        if f is not None and f.finding_id == message.finding_id:
            self._show_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if self.is_active:  # (an `enter` queued before the last one opened the table)
            self.action_open_finding()

    def highlighted(self) -> Finding | None:
        table = self.query_one(DataTable)
        if self.report is None or not self.report.findings or table.cursor_row < 0:
            return None
        return self.report.findings[min(table.cursor_row, len(self.report.findings) - 1)]

    def _show_detail(self) -> None:
        f = self.highlighted()
        detail = self.query_one("#finding-detail", Static)
        if f is None:
            detail.update("")
            return
        r = f.representative
        agreed = self._agreements.get(f.finding_id)
        if agreed is None and self.app.source is not None:
            self._agreement(self.app.source, f.finding_id)
        detail.update(Text.assemble(
            (f.finding_id, "bold"), for_terminal(f" · outlier {f.outlier} · "),
            for_terminal(f"{len(f.operators)} op(s): {', '.join(f.operators[:6])}"
                         f"{' …' if len(f.operators) > 6 else ''} · {', '.join(f.dtypes)} · "
                         f"levels {', '.join(f.levels) or '—'}"), "\n",
            ("worst: ", "dim"),
            for_terminal(f"{r.case_id} {r.check} {r.backend} {r.optimization}: "),
            (for_terminal(r.reason), "dim"), *_origin_line(self.app.source, f),
            *((("\n≡ ", "bold cyan"), (for_terminal(agreed), "cyan")) if agreed else ())))

    def action_open_finding(self) -> None:
        """The highlighted finding's observations in the evaluations table."""
        f = self.highlighted()
        if f is not None:
            self.app.show_evaluations(TableFilter(finding=f.finding_id,
                                                  finding_title=f.title[:60]))

    def action_report(self) -> None:
        """``e``: the highlighted finding's report and bundle, written to files."""
        from gero_tui.app.screens.finding_report_dialog import FindingReportDialog

        f, source = self.highlighted(), self.app.source
        if f is None or source is None or self.report is None:
            self.notify("no finding to report yet", timeout=3)
            return
        self.app.push_screen(FindingReportDialog(source, self.report, f,
                                                 directory=self.report_directory))

    def action_pick_baseline(self) -> None:
        """``c``: compare the findings with another run than the previous one."""
        from gero.api import list_runs
        from gero_tui.app.screens.choice import ChoiceScreen
        from gero_tui.app.screens.export_dialog import data_root_of

        source = self.app.source
        if source is None:
            return
        runs = [r for r in list_runs(data_root_of(source)) if r.run_id != source.run_id]
        if not runs:
            self.notify("no other run in this data root to compare with", timeout=4)
            return
        current = self.report.baseline_run_id if self.report is not None else None
        choices = [(r.run_id, f"{'● ' if r.run_id == current else '  '}{r.run_id} · "
                    f"{r.date} · {r.suite} · {r.status} · {r.observation_count:,} obs.")
                   for r in runs]

        def chosen(baseline: str | None) -> None:
            if baseline is not None:
                self.query_one("#summary", Static).update(
                    Text(for_terminal(f"comparing with {baseline}…")))
                self._against(source, baseline)

        self.app.push_screen(ChoiceScreen("Baseline for new / still / gone", choices), chosen)

    @work(thread=True, exclusive=True, group="findings")
    def _against(self, source: Any, baseline: str) -> None:
        from gero.query.finding_status import report_for
        from gero_tui.app.screens.export_dialog import data_root_of

        try:
            self.app.findings(source)  # the members table, computed once
            report = report_for(source, data_root_of(source), source.run_id, baseline)
            self.post_message(self.Loaded(report, self.app.readable_note(source)))
        except (duckdb.Error, GeroError) as e:
            self.post_message(self.Failed(str(e)))

    def action_compare_runtimes(self) -> None:
        f = self.highlighted()
        if f is not None:
            # A runtime off at every setting it ran is compared whole; one setting alone.
            r = f.representative
            one = "@" in f.outlier and "," not in f.outlier
            self.app.compare_runtimes(r.backend, r.optimization if one else "-")

    def action_what_if(self) -> None:
        """``w``: change a dtype's tolerances and see what would change class."""
        from gero_tui.app.screens.whatif_dialog import WhatIfDialog

        source = self.app.source
        if source is not None:
            self.app.push_screen(WhatIfDialog(
                source, self.report.findings if self.report is not None else []))

    def action_localize(self) -> None:
        """``L``: the error through the graph of the highlighted finding's worst observation."""
        from gero_tui.app.screens.export_dialog import data_root_of
        from gero_tui.app.screens.localize import LocalizeScreen

        f, source = self.highlighted(), self.app.source
        if f is None or source is None:
            self.notify("no finding to localize yet", timeout=3)
            return
        self.app.push_screen(LocalizeScreen(data_root_of(source),
                                            f.representative.observation_id, source=source))

    def action_open_all(self) -> None:
        self.app.show_evaluations(TableFilter())

    def action_back(self) -> None:
        if not self.is_active:  # a key queued before this screen was left
            return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.show_overview()
