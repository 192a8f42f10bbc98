"""A modal list of choices; ``enter`` returns the highlighted one's id."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from gero_runner.escape import for_terminal
from gero_tui.app.base import Dialog


class ChoiceScreen(Dialog[str | None]):
    """``choices``: (id, label) pairs."""

    CSS_PATH = "pickers.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(for_terminal(f"{self.title_text}  (enter: choose · esc: cancel)")),
                        id="dialog-title")
            # Texts, not markup: a label names runs and runtimes.
            yield OptionList(*(Option(Text(for_terminal(label)), id=key)
                               for key, label in self.choices), id="choices")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
