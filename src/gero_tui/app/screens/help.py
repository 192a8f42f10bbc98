"""Help, generated from the bindings of the screen it was opened on (and the app's)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, Static


def bindings_table(screen: Screen[object]) -> Table:
    """Key, action and help text of every binding active on ``screen``, screen's first."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(style="dim")
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.system:
            continue
        description = binding.description or binding.action
        key = screen.app.get_key_display(binding)
        table.add_row(Text(key), Text(description), Text(binding.tooltip or ""))
    return table


class HelpScreen(ModalScreen[None]):
    """The keys of the screen below, with what each does."""

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    def __init__(self, screen: Screen[object]) -> None:
        super().__init__()
        self.for_screen = screen

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Label(f"Keys — {type(self.for_screen).__name__.removesuffix('Screen')}  "
                        "(esc: close · ctrl+p: every action by name)", id="dialog-title")
            yield Static(bindings_table(self.for_screen), id="keys")

    def action_close(self) -> None:
        self.dismiss(None)
