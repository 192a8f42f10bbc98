"""A modal list of the columns to sort by; the current one is marked with its direction."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from gero.query.table import BY_FINDING, COLUMNS, NATURAL, SORT_ONLY, TableSort
from gero_tui.app.base import Dialog


class SortPickerScreen(Dialog[str | None]):
    """Choose a sort column; the column already sorted on reverses its direction."""

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: TableSort, hidden: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.current = current
        self.hidden = hidden
        """Columns not offered (the Release column of a run that names no release)."""

    def compose(self) -> ComposeResult:
        options = [Option("Run order (as the runner wrote them)", id=NATURAL)]
        for column in (*COLUMNS, *SORT_ONLY):
            if column.key in self.hidden:
                continue
            mark = ""
            if column.key == self.current.column:
                mark = "  ▼ (enter: ▲)" if self.current.descending else "  ▲ (enter: ▼)"
            options.append(Option(column.label + mark, id=column.key))
        options.append(Option("Grouped by finding (worst first)", id=BY_FINDING))
        with Vertical(id="dialog"):
            yield Label("Sort by  (enter: choose · esc: cancel)", id="dialog-title")
            yield OptionList(*options, id="columns")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = options.get_option_index(self.current.column)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
