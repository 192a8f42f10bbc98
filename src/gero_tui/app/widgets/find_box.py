"""The evaluations table's find box: free text, at most ``FIND_MAX`` characters.

A paste from a terminal without bracketed paste arrives as one key event per character: 100
KB of it was 100,000 changes of the box, each a query of the table (more than 5 minutes of
"updating", deaf to escape). Past ``FIND_MAX`` a key or a paste adds nothing (a paste keeps
what fits), and the box says so once, instead of ringing the bell for every key.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import Input

FIND_MAX = 200
"""Characters the find box keeps: far more than any name it finds, few enough that every
change is cheap and a query over the run's text columns stays quick."""


class FindBox(Input):
    """An ``Input`` that keeps at most ``FIND_MAX`` characters and says when it cut some."""

    class Capped(Message):
        """Typed or pasted text went past ``FIND_MAX``: the rest was left out."""

    def __init__(self, value: str = "", placeholder: str = "", id: str | None = None) -> None:
        super().__init__(value=value[:FIND_MAX], placeholder=placeholder, id=id,
                         max_length=FIND_MAX)
        self._capped = False
        """Said since the box was last under its limit (said once, not per key)."""

    def _on_paste(self, event: events.Paste) -> None:
        # Input refuses a paste that would go past max_length whole: keep what fits.
        event.prevent_default()
        event.stop()
        if not event.text:
            return
        line = event.text.splitlines()[0] if event.text.splitlines() else ""
        start, end = sorted(self.selection)
        room = FIND_MAX - (len(self.value) - (end - start))
        if len(line) > room:
            line = line[:max(0, room)]
            self.restricted()
        self.replace(line, start, end)

    def restricted(self) -> None:
        """Past the limit: a ``Capped`` message once (Input rings the bell each time)."""
        if not self._capped:
            self._capped = True
            self.post_message(self.Capped())

    def _watch_value(self, value: str) -> None:
        super()._watch_value(value)
        if len(value) < FIND_MAX:
            self._capped = False
