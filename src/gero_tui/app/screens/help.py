"""Help, generated from the bindings of the screen it was opened on (and the app's)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from gero_tui.app.base import Dialog
from gero_tui.app.widgets.key_bar import APP_ORDER

NAVIGATION = ("cursor_", "page_", "first", "last", "column", "move", "focus_", "scroll_",
              "select_cursor", "toggle_highlighted", "copy_text")
"""Action names (prefixes) of keys that move around (and Textual's own copy): listed last,
after what the app does."""


def _is_navigation(action: str) -> bool:
    """Whether ``action`` moves around; ``app.focus_next`` counts as ``focus_next``."""
    return action.rpartition(".")[2].startswith(NAVIGATION)


def bindings_table(screen: Screen[object]) -> Table:
    """Key, action and help text of every binding active on ``screen``: the screen's own
    keys first, then the app's (quit, help, runs), navigation keys last."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(style="dim")
    # One row per action of a node, its keys together (the app's quit: q and Textual's
    # ctrl+q were two rows), led by the key the key bar shows.
    grouped: dict[tuple[int, str], list[ActiveBinding]] = {}
    for active in screen.active_bindings.values():
        if not active.binding.system:
            grouped.setdefault((id(active.node), active.binding.action), []).append(active)
    own: list[tuple[Text, Text, Text]] = []
    app: list[tuple[Text, Text, Text]] = []
    navigation: list[tuple[Text, Text, Text]] = []
    actions: list[str] = []
    """The action of each ``app`` row."""
    for group in grouped.values():
        group.sort(key=lambda active: not active.binding.show)
        active = group[0]
        binding = active.binding
        keys = ", ".join(screen.app.get_key_display(a.binding) for a in group)
        row = (Text(keys), Text(binding.description or binding.action),
               Text(binding.tooltip or ""))
        if _is_navigation(binding.action):
            navigation.append(row)
        elif active.node is screen.app:
            app.append(row)
            actions.append(binding.action)
        else:
            own.append(row)
    # The app's keys as the key bar lists them (findings, runs, quit, help), then the rest.
    app = [row for _, row in sorted(enumerate(app), key=lambda item: (
        APP_ORDER.index(actions[item[0]]) if actions[item[0]] in APP_ORDER else len(APP_ORDER),
        item[0]))]
    for n, rows in enumerate((own, app, navigation)):
        if n and rows:
            table.add_row("", "", "")
        for row in rows:
            table.add_row(*row)
    return table


class HelpScreen(Dialog[None]):
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
