"""A modal list of a column's values with their row counts; several may be chosen."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, SelectionList


class ValuePickerScreen(ModalScreen[frozenset[str] | None]):
    """Choose values to filter on: ``space`` toggles, ``enter`` applies, ``escape`` cancels."""

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "apply", "Apply", priority=True),
        Binding("x", "none", "Choose none"),
    ]

    def __init__(self, title: str, values: list[tuple[str, int]],
                 chosen: frozenset[str]) -> None:
        super().__init__()
        self.title_text = title
        self.values = values
        self.chosen = chosen

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"{self.title_text}  (space: toggle · enter: apply · esc: cancel)",
                        id="dialog-title")
            yield SelectionList[str](
                *[(f"{value}  [dim]{count:,}[/]", value, value in self.chosen)
                  for value, count in self.values],
                id="values",
            )

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_apply(self) -> None:
        self.dismiss(frozenset(self.query_one(SelectionList).selected))

    def action_none(self) -> None:
        self.query_one(SelectionList).deselect_all()

    def action_cancel(self) -> None:
        self.dismiss(None)
