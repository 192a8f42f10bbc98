"""Observations that differ between two runs, or between two runtimes of one run.

The explorer's ``gero diff``: one row per slot that differs (regression, fix, changed,
incompatible, new, missing), regressions first, with the why; ``enter`` opens the current
observation's detail when it belongs to the open run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from gero.query.diff import KINDS
from gero_runner.backends.names import path_label
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import leave
from gero_tui.app.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from gero.query.diff import DiffEntry, DiffReport
    from gero_tui.app.base import ExplorerApp

KIND_STYLE = {"regression": "bold #f4005f", "fix": "#98e024", "changed": "yellow",
              "incompatible": "dim", "new": "cyan", "missing": "magenta"}
ORDER = ("regression", "fix", "changed", "new", "missing", "incompatible")


def counts_text(report: DiffReport) -> Text:
    counts = report.counts()
    text = Text.assemble((for_terminal(f"{report.base_run} → {report.current_run}"), "bold"),
                         "  ")
    for n, kind in enumerate(KINDS):
        text.append(" · " if n else "")
        text.append(f"{counts[kind]:,} {kind}", style=KIND_STYLE[kind] if counts[kind] else "dim")
    text.append(f" · {counts['unchanged']:,} unchanged", style="dim")
    return text


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


class DiffScreen(Screen[None]):
    """One diff report, its entries worst first."""

    app: ExplorerApp
    CSS_PATH = "diff.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_entry", "Open", priority=True),  # not the table's hidden one
        Binding("escape", "back", "Back"),
    ]

    class Loaded(Message):
        def __init__(self, report: DiffReport) -> None:
            self.report = report
            super().__init__()

    class Failed(Message):
        def __init__(self, error: str) -> None:
            self.error = error
            super().__init__()

    def __init__(self, what: str, load: Callable[[], DiffReport]) -> None:
        super().__init__()
        self.what = what
        self._load_report = load
        self.report: DiffReport | None = None
        self.entries: list[DiffEntry] = []

    def compose(self) -> ComposeResult:
        yield Static(Text(for_terminal(f"diff: {self.what}"), style="bold"), id="diff-title")
        yield Static("comparing…", id="diff-counts")
        table: DataTable[Any] = DataTable(id="diff-table", cursor_type="row",
                                          zebra_stripes=True)
        yield table
        yield Static("", id="diff-why")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("kind", "kind"), ("case", "case"), ("check", "check"),
                           ("path", "path"), ("output", "output"), ("result", "result"),
                           ("error", "error")):
            table.add_column(label, key=key)
        table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="diff")
    def _load(self) -> None:
        try:
            self.post_message(self.Loaded(self._load_report()))
        except GeroError as e:
            self.post_message(self.Failed(str(e)))

    def on_diff_screen_loaded(self, message: Loaded) -> None:
        report = self.report = message.report
        self.entries = sorted(report.entries, key=lambda e: ORDER.index(e.kind))
        self.query_one("#diff-counts", Static).update(counts_text(report))
        table = self.query_one(DataTable)
        table.clear()
        for e in self.entries:
            # Texts, not markup: a case and an output are the run's names.
            table.add_row(
                Text(e.kind, style=KIND_STYLE.get(e.kind, "")),
                *(Text(for_terminal(c)) for c in (
                    e.case_id, e.check, path_label(e.backend, e.optimization), e.output_name)),
                f"{e.base_result or '-'} → {e.current_result or '-'}",
                f"{_error(e.base_error)} → {_error(e.current_error)}")
        if not self.entries:
            self.query_one("#diff-why", Static).update("no difference: every pair unchanged")
        self._show_why()

    def on_diff_screen_failed(self, message: Failed) -> None:
        self.query_one("#diff-counts", Static).update(
            Text(for_terminal(f"cannot compare: {message.error}"), style="bold red"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_why()

    def highlighted(self) -> DiffEntry | None:
        row = self.query_one(DataTable).cursor_row
        return self.entries[row] if 0 <= row < len(self.entries) else None

    def _show_why(self) -> None:
        e = self.highlighted()
        if e is not None:
            self.query_one("#diff-why", Static).update(Text.assemble(
                (f"{e.kind}: ", KIND_STYLE.get(e.kind, "")), for_terminal(e.why)))

    def action_open_entry(self) -> None:
        e = self.highlighted()
        source = self.app.source
        if e is None or not self.is_active:
            return
        if e.current_id is None or source is None:
            self.notify("not in the open run: nothing to open", timeout=3)
            return
        self.app.open_detail(e.current_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_entry()

    def action_back(self) -> None:
        leave(self)
