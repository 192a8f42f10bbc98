"""A one-widget footer: the keys that work here, drawn as a single line of text.

Textual's ``Footer`` mounts one widget per key and rebuilds them all whenever focus or the
bindings change (several times while a screen opens); on the detail screen that was a large
share of the time to first paint. This bar re-renders one line instead, looks the same
(key, then description, disabled keys dimmed) and still takes a click on a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen


class KeyBar(Widget):
    """The shown bindings of the focused widget and its ancestors, one line, docked below."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-bar--key", "key-bar--description"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
    }
    KeyBar > .key-bar--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyBar > .key-bar--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, str]] = []
        """(start, end, key) of each drawn key, for clicks."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen:
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        spans: list[tuple[int, int, str]] = []
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            start = len(text)
            dim = Style() if enabled else Style(dim=True)
            text.append(f" {self.app.get_key_display(binding)} ", style=key_style + dim)
            text.append(f"{binding.description} ", style=description_style + dim)
            spans.append((start, len(text), binding.key))
        self._spans = spans
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
