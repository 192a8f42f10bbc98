"""What the explorer shows on a data root without runs: how to make one."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.screen import Screen
from textual.widgets import Static

from gero_runner.escape import for_shell, for_terminal
from gero_tui.app.widgets.key_bar import KeyBar


class EmptyScreen(Screen[None]):
    """No runs yet: the command that creates one."""

    CSS_PATH = "empty.tcss"

    def __init__(self, data_root: Path) -> None:
        super().__init__()
        self.data_root = data_root

    def compose(self) -> ComposeResult:
        with Middle(), Center():
            yield Static(
                f"[b]No runs in {escape(for_terminal(self.data_root))}[/b]\n\n"
                "Create one with:\n\n"
                f"  [b]gero run --data-dir {escape(for_shell(self.data_root))}[/b]\n\n"
                "then open the explorer again (q quits).",
                id="message",
            )
        # One line of keys; Textual's Footer rebuilds a widget per key on every screen change.
        yield KeyBar()
