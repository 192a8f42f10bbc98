"""A modal list of a column's values with their row counts; several may be chosen.

The picker opens at once, before its values are counted (that query runs in a worker):
keys typed while it loads are kept and replayed once the values are there, so that
``t space enter`` typed in one burst acts on the picker, never on the table below it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker

from gero_runner.escape import for_terminal
from gero_tui.app.base import Dialog
from gero_tui.app.worker_errors import worker_failure

Values = list[tuple[str, int]]
TYPE_AHEAD_S = 1.0
"""A pause longer than this starts a new type-ahead prefix."""
HINT = "space: toggle · enter: apply · x: none · a-z: jump · esc: cancel"


def option_text(value: str, count: int, chosen: bool, width: int) -> Text:
    """``[x] value   count``: the mark is a character, not only a colour."""
    text = Text()
    value = for_terminal(value)  # the run's (a case, an operator): shown, never sent
    text.append("[x] " if chosen else "[ ] ", style="bold" if chosen else "dim")
    text.append(value, style="bold" if chosen else "")
    text.append(" " * max(2, width - len(value)))
    text.append(f"{count:,}", style="dim")
    return text


class ValuePickerScreen(Dialog[frozenset[str] | None]):
    """Choose values to filter on: ``space`` toggles, ``enter`` applies, ``escape`` cancels.

    Typing letters jumps to the first value that starts with them (``x`` excepted: it
    chooses none). Counts are those of the rows the other active filters leave.
    """

    CSS_PATH = "pickers.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("enter", "apply", "Apply", priority=True),
        Binding("space", "toggle_value", "Toggle", priority=True),
        Binding("x", "none", "Choose none", priority=True),
    ]

    def __init__(self, title: str, load: Callable[[], Values | None],
                 chosen: frozenset[str]) -> None:
        super().__init__()
        self.title_text = title
        self._load_values = load
        self.values: Values | None = None
        """(value, count) pairs in display order; None while they load."""
        self.chosen = set(chosen)
        self._pending: list[tuple[str, str | None]] = []
        """Keys (key, character) typed before the values arrived, in order."""
        self._prefix = ""
        self._typed_at = 0.0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text.assemble((self.title_text, "bold"), ("  " + HINT, "dim")),
                        id="dialog-title")
            yield Static("counting values…", id="picker-status")
            yield OptionList(id="values")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self._load()

    @property
    def loaded(self) -> bool:
        return self.values is not None

    @work(thread=True, exclusive=True, group="picker-values", exit_on_error=False)
    def _load(self) -> None:
        values = self._load_values()
        self.app.call_from_thread(self.show_values, values)

    def show_values(self, values: Values | None) -> None:
        """Fill the list (None: the query failed), then replay the keys typed meanwhile."""
        status = self.query_one("#picker-status", Static)
        if values is None:
            status.update(Text("could not count the values (see the status line)",
                               style="bold red"))
            self._pending.clear()
            return
        shown = {v for v, _ in values}
        # A chosen value the other filters leave no rows of still shows, to be unchosen.
        values = [*values, *((v, 0) for v in sorted(self.chosen - shown))]
        self.values = values
        status.display = False
        self._rebuild(0)
        pending, self._pending = self._pending, []
        for key, character in pending:
            self.app.post_message(events.Key(key, character))

    def _rebuild(self, highlighted: int | None) -> None:
        options = self.query_one(OptionList)
        values = self.values or []
        width = max((len(v) for v, _ in values), default=0) + 2
        options.clear_options()
        options.add_options([Option(option_text(v, n, v in self.chosen, width), id=v)
                             for v, n in values])
        if values:
            options.highlighted = min(highlighted or 0, len(values) - 1)

    # -- keys ---------------------------------------------------------------------------

    def _keep(self, key: str, character: str | None) -> bool:
        """Keep a key typed before the values arrived; True when it was kept."""
        if self.loaded:
            return False
        self._pending.append((key, character))
        return True

    def on_key(self, event: events.Key) -> None:
        if event.key != "escape" and self._keep(event.key, event.character):
            event.stop()
            event.prevent_default()
            return
        character = event.character
        if character and character.isprintable() and not character.isspace():
            event.stop()
            self._type_ahead(character)

    def _type_ahead(self, character: str) -> None:
        now = time.monotonic()
        self._prefix = (self._prefix if now - self._typed_at < TYPE_AHEAD_S else "") + character
        self._typed_at = now
        prefix = self._prefix.lower()
        for index, (value, _) in enumerate(self.values or []):
            if value.lower().startswith(prefix):
                self.query_one(OptionList).highlighted = index
                return
        self.notify(f"no value starts with {self._prefix!r}", timeout=2)

    def action_toggle_value(self) -> None:
        if self._keep("space", " "):
            return
        options = self.query_one(OptionList)
        index = options.highlighted
        if index is None or not self.values:
            return
        value = self.values[index][0]
        self.chosen ^= {value}
        self._rebuild(index)

    def action_apply(self) -> None:
        if self._keep("enter", "\r"):
            return
        self.dismiss(frozenset(self.chosen))

    def action_none(self) -> None:
        if self._keep("x", "x"):
            return
        self.chosen.clear()
        self._rebuild(self.query_one(OptionList).highlighted)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if (error := worker_failure(event)) is not None:
            self.show_values(None)
            self.notify(error, title="Counting values failed", severity="error", timeout=15)
