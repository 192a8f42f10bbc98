"""Choose a run of the data root: each with its date, versions and counts."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Label

from gero.api import RunInfo
from gero_runner.backends.names import short_name
from gero_runner.escape import for_terminal
from gero_tui.app.base import Dialog, ExplorerApp


def runtimes_text(run: RunInfo) -> str:
    """The runtimes under test with their versions, by short name ("ort 1.32.0 · ov …")."""
    if not run.runtimes:
        return f"ort {run.onnxruntime_version}"
    return " · ".join(f"{short_name(name)} {version}"
                      for name, version in run.runtimes.items())


class RunPickerScreen(Dialog[str | None]):
    """Runs newest first; ``enter`` opens one, ``d`` diffs it with the open run, ``escape``
    keeps the current run."""

    app: ExplorerApp

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("d", "diff", "Diff with the open run"),
    ]

    def __init__(self, runs: list[RunInfo], current: str | None) -> None:
        super().__init__()
        self.runs = runs
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Runs  (enter: open · d: its observations against the open run's · "
                        "esc: cancel)", id="dialog-title")
            yield DataTable[Text](id="runs", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "Run", "Date (UTC)", "Status", "Suite", "Runtimes", "onnx",
                          "Obs.", "New", "Div.", "Issues", "Tolerances", "Command")
        for run in self.runs:
            issues = run.counts.get("contract_issue", 0) + run.counts.get("execution", 0)
            cells = (
                "●" if run.run_id == self.current else "",
                run.run_id, run.date, run.status, run.suite, runtimes_text(run),
                run.onnx_version,
                f"{run.observation_count:,}", f"{run.new_observation_count:,}",
                f"{run.counts.get('divergence', 0):,}", f"{issues:,}" if not run.problem
                else "unreadable", run.tolerance_overrides or "defaults",
                run.command_line.removeprefix("gero ") or "-",
            )
            # Texts, not markup: a command line names the user's paths.
            table.add_row(*(Text(for_terminal(c)) for c in cells), key=run.run_id)
        ids = [r.run_id for r in self.runs]
        if self.current in ids:
            table.move_cursor(row=ids.index(self.current))
        table.focus()

    def action_diff(self) -> None:
        table = self.query_one(DataTable)
        if not self.is_active or not 0 <= table.cursor_row < len(self.runs):
            return
        base = self.runs[table.cursor_row].run_id
        self.dismiss(None)
        self.app.diff_runs(base)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(event.row_key.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
