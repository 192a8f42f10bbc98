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

NAVIGATION = ("cursor_", "page_", "first", "last", "column", "move", "focus_", "scroll_",
              "select_cursor", "toggle_highlighted")
"""Action names (prefixes) of keys that move around: listed last, after what the app does."""


def _is_navigation(action: str) -> bool:
    return action.startswith(NAVIGATION)


def bindings_table(screen: Screen[object]) -> Table:
    """Key, action and help text of every binding active on ``screen``: the screen's own
    keys first, then the app's (quit, help, runs), navigation keys last."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(style="dim")
    own: list[tuple[Text, Text, Text]] = []
    app: list[tuple[Text, Text, Text]] = []
    navigation: list[tuple[Text, Text, Text]] = []
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.system:
            continue
        row = (Text(screen.app.get_key_display(binding)),
               Text(binding.description or binding.action), Text(binding.tooltip or ""))
        if _is_navigation(binding.action):
            navigation.append(row)
        elif active.node is screen.app:
            app.append(row)
        else:
            own.append(row)
    for n, rows in enumerate((own, app, navigation)):
        if n and rows:
            table.add_row("", "", "")
        for row in rows:
            table.add_row(*row)
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
