"""A one-line tab bar for a ContentSwitcher: the pane names, the current one highlighted.

Textual's TabbedContent builds a tab widget per pane, an animated underline and a switcher;
on the detail screen that took about as long to set up as the rest of the screen. This bar is
one widget drawing one line; keys (bound by the screen) or a click choose the pane.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class TabBar(Widget):
    """Tabs given as (pane id, label, key); ``active`` is the current pane id."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"tab-bar--active", "tab-bar--key"}
    DEFAULT_CSS = """
    TabBar { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    TabBar > .tab-bar--active { color: $text; background: $primary-muted; text-style: bold; }
    TabBar > .tab-bar--key { color: $footer-key-foreground; text-style: bold; }
    """

    active: reactive[str] = reactive("")

    class Chosen(Message):
        """A tab was clicked."""

        def __init__(self, pane: str) -> None:
            super().__init__()
            self.pane = pane

    def __init__(self, tabs: list[tuple[str, str, str]], active: str, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.tabs = tabs
        self.set_reactive(TabBar.active, active)
        self._spans: list[tuple[int, int, str]] = []

    def render(self) -> Text:
        active_style = self.get_component_rich_style("tab-bar--active")
        key_style = self.get_component_rich_style("tab-bar--key")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        spans = []
        for pane, label, key in self.tabs:
            start = len(text)
            if pane == self.active:
                text.append(f" {label} ", style=active_style)
            else:
                text.append(f" {label} ")
            text.append(f"{key} ", style=key_style)
            spans.append((start, len(text), pane))
            text.append(" ")
        self._spans = spans
        return text

    def on_click(self, event: events.Click) -> None:
        x = event.x - 1  # the padding
        for start, end, pane in self._spans:
            if start <= x < end:
                self.post_message(self.Chosen(pane))
                return
