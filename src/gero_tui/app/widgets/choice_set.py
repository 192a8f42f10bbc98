"""Radio buttons whose choice shows without colour, and whose chosen button answers `enter`.

Textual draws every radio button as the same ``●``, the chosen one in another colour: under
NO_COLOR (or a monochrome terminal) the choice could not be seen. Here the chosen button is
``●`` and the others ``○``, its label bold. And `enter` on the button already chosen did
nothing (Textual's set only reports a change): it posts ``Reselected``, so that a dialog
moves on as it does after any other choice.
"""

from __future__ import annotations

from textual.message import Message
from textual.widgets import RadioButton, RadioSet

ON, OFF = "●", "○"


class Choice(RadioButton):
    """A radio button whose mark is a character, not only a colour."""

    DEFAULT_CSS = """
    Choice.-on > .toggle--label { text-style: bold; }
    """
    BUTTON_INNER = OFF

    def watch_value(self) -> None:
        # (an instance attribute: the class's stays ○ for the buttons that are off)
        self.BUTTON_INNER = ON if self.value else OFF
        super().watch_value()


class ChoiceSet(RadioSet):
    """A ``RadioSet`` of ``Choice`` buttons that also reports `enter` (or a click) on the
    button already chosen."""

    class Reselected(Message):
        """The chosen button was chosen again."""

        def __init__(self, choice_set: ChoiceSet, index: int) -> None:
            self.choice_set = choice_set
            self.index = index
            super().__init__()

        @property
        def control(self) -> ChoiceSet:
            return self.choice_set

    def on_radio_button_changed(self, event: RadioButton.Changed) -> None:
        # Runs before RadioSet's own handler (the subclass's first), which turns a button
        # clicked off back on without a message of its own.
        if not event.radio_button.value and event.radio_button is self.pressed_button:
            self.post_message(self.Reselected(self, self.pressed_index))
