"""`e` on the Findings screen: write the highlighted finding's report and its bundle.

The report is the finding's section of ``gero findings --format md`` (what it covers, its
worst observation, the replay, bundle and blame commands) under a title naming the run;
the bundle is the one its `gero bundle` command writes, beside the report. A file already
there is not overwritten unless `enter` is pressed again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static
from textual.worker import Worker

from gero.query.finding_report import bundle_name, finding_report
from gero_runner.errors import GeroError
from gero_runner.escape import for_shell, for_terminal
from gero_tui.app.base import Dialog
from gero_tui.app.screens.export_dialog import data_root_of, export_bundle, short_error
from gero_tui.app.worker_errors import worker_failure

if TYPE_CHECKING:
    from gero.query.findings import Finding, FindingsReport


def default_report_path(f: Finding, directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / f"finding-{f.finding_id}.md"


def bundle_beside(report_path: Path, f: Finding) -> Path:
    return report_path.with_name(bundle_name(f))


class FindingReportDialog(Dialog[None]):
    """The path of the report (the bundle goes beside it); `enter` writes both."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "close")]
    CSS_PATH = "finding_report_dialog.tcss"

    def __init__(self, source: Any, report: FindingsReport, finding: Finding,
                 directory: Path | None = None) -> None:
        super().__init__()
        self.source = source
        self.report = report
        self.finding = finding
        self.directory = directory
        self._confirmed: tuple[Path, ...] = ()
        """Files the user agreed to overwrite (enter pressed again on the same path)."""

    def compose(self) -> ComposeResult:
        f = self.finding
        with Vertical(id="report-box"):
            yield Label(Text.assemble(("Report ", "bold"), f"finding {f.finding_id}: ",
                                      (for_terminal(f.title), "italic")))
            yield Label(Text("Markdown (its section of gero findings --format md, with the "
                             "replay and bundle commands); the bundle is written beside it",
                             style="dim"))
            yield Input(str(default_report_path(f, self.directory)), id="report-path")
            with Horizontal(id="report-buttons"):
                yield Button("Write report + bundle", id="report-write", variant="primary")
                yield Button("Close", id="report-close")
            yield Static("", id="report-status")

    def on_mount(self) -> None:
        self.query_one("#report-path", Input).focus()

    @on(Input.Changed, "#report-path")
    def _path_changed(self) -> None:
        self._confirmed = ()

    @on(Input.Submitted, "#report-path")
    def _submitted(self) -> None:
        self.action_write()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "report-write":
            self.action_write()
        elif event.button.id == "report-close":
            self.action_close()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_write(self) -> None:
        text = self.query_one("#report-path", Input).value.strip()
        if not text:
            self._status(Text("give a file path", style="bold red"))
            return
        path = Path(text).expanduser()
        if path.suffix != ".md":
            path = path.with_name(path.name + ".md")
        targets = (path, bundle_beside(path, self.finding))
        there = [p for p in targets if p.exists()]
        if there and self._confirmed != targets:
            self._confirmed = targets
            names = for_terminal(" and ".join(p.name for p in there))
            self._status(Text(f"{names} already there: enter again to overwrite",
                              style="bold yellow"))
            return
        self._confirmed = ()
        self._status(Text("writing the report and the bundle…"))
        self._write(path, targets[1])

    @work(thread=True, exclusive=True, group="finding-report", exit_on_error=False)
    def _write(self, path: Path, bundle: Path) -> None:
        from gero.api import refuse_inside_root, write_output

        root = data_root_of(self.source)
        flag = f" --data-dir {for_shell(root.resolve())}"
        from gero.query.finding_report import finding_members

        members = finding_members(self.source).get(self.finding.finding_id, set())
        lines = finding_report(self.report, self.finding, root.resolve(), flag, members)
        try:
            refuse_inside_root(path, root, "the path")
            write_output(path, "\n".join(lines) + "\n", "the path")
        except GeroError as e:
            self.app.call_from_thread(self._status, Text(f"✗ {short_error(e)}",
                                                         style="bold red"))
            return
        try:
            written, command = export_bundle(self.source,
                                             self.finding.representative.observation_id, bundle)
        except (GeroError, OSError) as e:
            self.app.call_from_thread(self._status, Text.assemble(
                ("✓ ", "bold green"), f"wrote {for_terminal(path.resolve())}\n",
                (f"✗ no bundle: {short_error(e)}", "bold red")))
            return
        self.app.call_from_thread(self._status, Text.assemble(
            ("✓ ", "bold green"), f"wrote {for_terminal(path.resolve())}\n", ("✓ ", "bold green"),
            f"and {for_terminal(written)}\n", ("replay with: ", "dim"), for_terminal(command)))

    def _status(self, text: Text) -> None:
        self.query_one("#report-status", Static).update(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if (error := worker_failure(event)) is not None:
            self._status(Text(f"✗ {for_terminal(error)}", style="bold red"))
