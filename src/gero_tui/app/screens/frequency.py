"""How often each value of one column occurs within the current filter, per result class.

``F`` (VisiData's Shift-F) on the evaluations table: the column under the column cursor,
its values with their row counts, most frequent first; ``enter`` filters to a value. It
opens at once and counts in a worker; keys typed meanwhile wait for the counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Label, Static
from textual.worker import Worker

from gero.query.table import RESULT_CLASSES, Frequency
from gero_runner.escape import for_terminal
from gero_runner.result_classes import RESULT_ABBREVIATIONS
from gero_tui.app.base import Dialog
from gero_tui.app.widgets.palette import CLASS_COLORS
from gero_tui.app.worker_errors import worker_failure


class FrequencyScreen(Dialog[str | None]):
    """Values of a column with their counts; ``enter`` filters to the highlighted one."""

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "choose", "Filter to it", priority=True),
    ]

    def __init__(self, label: str, load: Callable[[], list[Frequency] | None],
                 filterable: bool, scope: str) -> None:
        super().__init__()
        self.label = label
        self._load_counts = load
        self.filterable = filterable
        """Whether ``enter`` can filter to a value (a number range cannot)."""
        self.scope = scope
        """What rows were counted, in words (the active filters)."""
        self.counts: list[Frequency] | None = None
        self._pending: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        hint = "enter: filter to it · esc: close" if self.filterable else "esc: close"
        with Vertical(id="dialog"):
            yield Label(Text.assemble((f"Frequency of {self.label}", "bold"),
                                      (for_terminal(f"  {self.scope}  ·  {hint}"), "dim")),
                        id="dialog-title")
            yield Static("counting…", id="frequency-status")
            table: DataTable[Text | str] = DataTable(id="frequency", cursor_type="row")
            yield table

    def on_mount(self) -> None:
        table: DataTable[Text | str] = self.query_one(DataTable)
        table.add_column(self.label, key="value")
        table.add_column(Text("rows", justify="right"), key="rows")
        table.add_column(Text("share", justify="right"), key="share")
        for result in RESULT_CLASSES:
            table.add_column(Text(RESULT_ABBREVIATIONS[result], justify="right",
                                  style=CLASS_COLORS[result]), key=result)
        table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="frequency", exit_on_error=False)
    def _load(self) -> None:
        counts = self._load_counts()
        self.app.call_from_thread(self.show_counts, counts)

    def show_counts(self, counts: list[Frequency] | None) -> None:
        status = self.query_one("#frequency-status", Static)
        if counts is None:
            status.update(Text("could not count (see the status line)", style="bold red"))
            self._pending.clear()
            return
        self.counts = counts
        total = sum(c.rows for c in counts) or 1
        status.update(Text(f"{len(counts):,} distinct values, {total:,} rows", style="dim"))
        table: DataTable[Text | str] = self.query_one(DataTable)
        for n, c in enumerate(counts):
            # A Text, not markup: a value is the run's (a case, a model's path, a reason).
            table.add_row(Text(for_terminal(c.value)), Text(f"{c.rows:,}", justify="right"),
                          Text(f"{100 * c.rows / total:.1f}%", justify="right"),
                          *(Text(f"{c.by_class.get(r, 0):,}" if c.by_class.get(r) else "·",
                                 justify="right", style=CLASS_COLORS[r] if c.by_class.get(r)
                                 else "dim") for r in RESULT_CLASSES), key=str(n))
        pending, self._pending = self._pending, []
        for key, character in pending:
            self.app.post_message(events.Key(key, character))

    def on_key(self, event: events.Key) -> None:
        if self.counts is None and event.key != "escape":
            self._pending.append((event.key, event.character))
            event.stop()
            event.prevent_default()

    def action_choose(self) -> None:
        if self.counts is None:
            self._pending.append(("enter", "\r"))
            return
        if not self.filterable:
            self.notify("a range of numbers is not a filter: sort by the column (s) instead",
                        timeout=4)
            return
        row = self.query_one(DataTable).cursor_row
        if 0 <= row < len(self.counts):
            self.dismiss(self.counts[row].value)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if (error := worker_failure(event)) is not None:
            self.show_counts(None)
            self.notify(error, title="Counting failed", severity="error", timeout=15)
