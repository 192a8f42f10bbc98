"""Export dialog (`e`): write the selected rows, or every matching row, as CSV, Parquet, JSON
or a Markdown report; or bundle the current evaluation's evidence for someone else to replay.

The writing runs in a thread worker; the dialog says where it wrote and how many rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import duckdb
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, RadioSet, Static
from textual.worker import Worker

from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import Dialog
from gero_tui.app.widgets.choice_set import Choice, ChoiceSet
from gero_tui.app.worker_errors import worker_failure

FORMATS = ("csv", "parquet", "json", "md")
FORMAT_LABELS = {"csv": "CSV", "parquet": "Parquet", "json": "JSON", "md": "Markdown"}


@dataclass(frozen=True)
class ExportScope:
    """Which rows an export writes: a parameterised condition over ``obs`` and a description."""

    sql: str = "TRUE"
    params: tuple[Any, ...] = ()
    description: str = "all rows of the run"
    count: int | None = None
    filter_text: str = ""
    """The filter in the user's words ("result: divergence"), for a report's header."""
    sort: Any = None
    """The table's ``TableSort``: rows are written in the order the table shows them."""

    @staticmethod
    def of_ids(ids: Sequence[str]) -> ExportScope:
        placeholders = ", ".join("?" * len(ids)) or "NULL"
        return ExportScope(f"observation_id IN ({placeholders})", tuple(ids),
                           f"{len(ids)} selected row{'s' if len(ids) != 1 else ''}", len(ids))


def data_root_of(source: Any) -> Path:
    """The data root of the app's run source (an open run: ``storage.reader.OpenRun``)."""
    return Path(source.data_root)


SHORT_ERROR = 160
"""Characters an error keeps on screen (a 1,000-character path filled a toast)."""


def short_error(error: BaseException | str, limit: int = SHORT_ERROR) -> str:
    """An error in one short line: whitespace folded, control characters shown as escapes
    (it may quote a path or a node), a long path cut in its middle."""
    text = for_terminal(" ".join(str(error).split()))
    words = [w if len(w) <= 60 or "/" not in w else f"{w[:20]}…{w[-30:]}"
             for w in text.split(" ")]
    text = " ".join(words)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def default_export_path(run_id: str, fmt: str, directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / f"gero-{run_id}.{fmt}"


def default_bundle_path(observation_id: str, directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / f"gero-bundle-{observation_id[:12]}.tar.gz"


def export_scope(source: Any, scope: ExportScope, fmt: str, path: Path) -> tuple[Path, int]:
    """Write the scope's rows; returns the absolute path and the row count (blocking)."""
    from gero.api import refuse_inside_root
    from gero.query.export import export_rows
    from gero.query.filters import Filter
    from gero.query.source import on_cursor

    refuse_inside_root(path, data_root_of(source), "the path")
    cursor = source.cursor()
    result = export_rows(on_cursor(source, cursor),
                         Filter(scope.sql, tuple(scope.params), scope.filter_text), fmt, path,
                         cursor=cursor, order=table_order(scope.sort))
    return result.path.resolve(), result.rows


def table_order(sort: Any) -> Any:
    """The export order of a table sort (None: the export's own order)."""
    from gero.query.export import RowOrder
    from gero.query.findings import ORDER_TABLE
    from gero.query.source import NUMBERED_RELATION
    from gero.query.table import BY_FINDING, TableSort

    if not isinstance(sort, TableSort):
        return None
    if sort.column == BY_FINDING:
        return RowOrder(f"(SELECT * FROM {NUMBERED_RELATION} LEFT JOIN {ORDER_TABLE} "
                        "USING (observation_id))", sort.order_by(), ("rn", "finding_rank"))
    return RowOrder(NUMBERED_RELATION, sort.order_by(), ("rn",))


def export_bundle(source: Any, observation_id: str, path: Path) -> tuple[Path, str]:
    """Bundle one observation's evidence (``gero bundle``); returns the archive path and
    its replay command."""
    from gero import api
    from gero.query.detail import fetch_observation

    api.refuse_inside_root(path, data_root_of(source), "the path")  # named as the dialog does
    row = fetch_observation(source.cursor(), observation_id).fields
    result = api.bundle(row, path, data_root_of(source)).bundle
    return result.path.resolve(), result.replay_command


class ExportDialog(Dialog[Path | None]):
    """Choose a format and a path; `enter` writes, `escape` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "close")]
    CSS_PATH = "export_dialog.tcss"

    def __init__(self, source: Any, scope: ExportScope, current_id: str | None = None,
                 bundle: bool = False, directory: Path | None = None) -> None:
        super().__init__()
        self.source = source
        self.scope = scope
        self.current_id = current_id
        self.bundle_first = bundle
        self.directory = directory
        self.format = "csv"
        self._path_edited = False
        self._confirmed: Path | None = None
        """A file already there that enter, pressed again, overwrites."""

    def compose(self) -> ComposeResult:
        bundle = self.bundle_first and self.current_id is not None
        with Vertical(id="export-box"):
            if bundle:
                yield Label(Text.assemble(
                    ("Bundle ", "bold"), "this evaluation's evidence (model, inputs, outputs, "
                    "manifest, replay command) as one .tar.gz"))
            else:
                yield Label(Text.assemble(("Export ", "bold"),
                                          for_terminal(self.scope.description)))
            # Formats are for rows; a bundle has one format.
            with ChoiceSet(id="export-format") as formats:
                formats.display = not bundle
                for i, fmt in enumerate(FORMATS):
                    yield Choice(FORMAT_LABELS[fmt], value=i == 0, id=f"format-{fmt}")
            yield Input(str(default_export_path(self.source.run_id, self.format, self.directory)),
                        id="export-path")
            with Horizontal(id="export-buttons"):
                yield Button("Export rows", id="export-rows", variant="primary")
                if self.current_id is not None:
                    yield Button("Export bundle", id="export-bundle")
                yield Button("Copy path", id="export-copy")
                yield Button("Close", id="export-close")
            yield Static("", id="export-status")

    def on_mount(self) -> None:
        if self.bundle_first and self.current_id is not None:
            self.query_one("#export-path", Input).value = str(
                default_bundle_path(self.current_id, self.directory))
            self.query_one("#export-bundle", Button).focus()
        else:
            # The format first: enter there chooses it and moves to the path, where enter
            # writes (enter on the format wrote at once, in the format shown first).
            self.query_one(RadioSet).focus()

    @on(RadioSet.Changed, "#export-format")
    def _format_changed(self, event: RadioSet.Changed) -> None:
        self.format = FORMATS[event.index]
        self._confirmed = None
        path_input = self.query_one("#export-path", Input)
        path_input.focus()
        current = Path(path_input.value)
        if current.suffix.lstrip(".") in FORMATS or current.name.endswith(".tar.gz"):
            base = current.name.removesuffix(".tar.gz")
            path_input.value = str(current.with_name(Path(base).stem + f".{self.format}"))

    @on(ChoiceSet.Reselected, "#export-format")
    def _format_kept(self) -> None:
        """Enter on the format already chosen (CSV, at first): on to the path, as after
        choosing another."""
        self.query_one("#export-path", Input).focus()

    @on(Input.Submitted, "#export-path")
    def _submitted(self) -> None:
        """Enter in the path: what the dialog was opened for (rows, or `b`'s bundle)."""
        if self.bundle_first and self.current_id is not None:
            self.action_bundle()
        else:
            self.action_export_rows()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        actions = {"export-rows": self.action_export_rows, "export-bundle": self.action_bundle,
                   "export-close": self.action_close, "export-copy": self.action_copy_path}
        action = actions.get(event.button.id or "")
        if action is not None:
            action()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy_path(self) -> None:
        path = self.query_one("#export-path", Input).value
        self.app.copy_to_clipboard(path)
        self._status(Text(f"copied {for_terminal(path)} to the clipboard (OSC 52)"))

    def _target(self) -> Path | None:
        text = self.query_one("#export-path", Input).value.strip()
        if not text:
            self._status(Text("give a file path", style="bold red"))
            return None
        return Path(text).expanduser()

    def _may_write(self, path: Path) -> bool:
        """No silent overwrite: a file already there is written only when asked twice."""
        if path.exists() and not path.is_dir() and self._confirmed != path:
            self._confirmed = path
            self._status(Text(f"{short_error(str(path))} already there: enter again to "
                              "overwrite", style="bold yellow"))
            return False
        self._confirmed = None
        return True

    def action_export_rows(self) -> None:
        path = self._target()
        if path is not None and self._may_write(path):
            self._status(Text(for_terminal(f"writing {self.scope.description} as "
                                           f"{self.format}…")))
            self._write_rows(path, self.format)

    def action_bundle(self) -> None:
        path = self._target()
        if path is None or self.current_id is None:
            return
        if not path.name.endswith(".tar.gz"):
            path = default_bundle_path(self.current_id, path.parent)
            self.query_one("#export-path", Input).value = str(path)
        if not self._may_write(path):
            return
        self._status(Text("writing the bundle…"))
        self._write_bundle(path, self.current_id)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _write_rows(self, path: Path, fmt: str) -> None:
        try:
            written, rows = export_scope(self.source, self.scope, fmt, path)
            text = Text.assemble(("✓ ", "bold green"), for_terminal(
                f"wrote {rows} row{'s' if rows != 1 else ''} as {fmt} to {written}"))
        except (GeroError, OSError, duckdb.Error) as e:
            text = Text(f"✗ not written: {short_error(e)}", style="bold red")
        self.app.call_from_thread(self._status, text)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _write_bundle(self, path: Path, observation_id: str) -> None:
        try:
            written, command = export_bundle(self.source, observation_id, path)
            text = Text.assemble(("✓ ", "bold green"), f"wrote bundle {for_terminal(written)}\n",
                                 ("replay with: ", "dim"), for_terminal(command))
        except (GeroError, OSError, duckdb.Error) as e:
            text = Text(f"✗ not written: {short_error(e)}", style="bold red")
        self.app.call_from_thread(self._status, text)

    def _status(self, text: Text) -> None:
        self.query_one("#export-status", Static).update(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so; the explorer goes on."""
        if (error := worker_failure(event)) is not None:
            # The status said "writing…": it says what happened instead, in a few words.
            self._status(Text(f"✗ not written: {short_error(error)}", style="bold red"))
