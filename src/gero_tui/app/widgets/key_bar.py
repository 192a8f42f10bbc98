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
from textual.geometry import Size
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen


SHORT = {"Select all": "All", "Reverse sort": "Reverse", "Histogram": "Hist",
         "Frequency": "Freq", "Evaluations": "Table", "Per-op histogram": "Hist",
         "prev slice": "prev", "next slice": "next", "slice axis": "axis", "row axis": "rows",
         "col axis": "cols", "copy id": "id", "copy cmd": "cmd"}
"""Shorter descriptions in the bar (the help and the command palette keep the long ones)."""
MAX_LINES = 3
APP_ORDER = ("findings", "pick_run", "quit", "help")
"""The app's keys, after the screen's own, help last (it lists every key)."""
DROP_ORDER = ("reverse_sort", "pick_values('suites')", "select_matching", "pick_run",
              "op_histogram", "pick_values('blamed')", "pick_values('backends')", "copy('case')",
              "copy('replay')", "group_bars", "replay", "findings")
"""Where every key does not fit in ``MAX_LINES`` lines (80 columns), the keys left out, in
this order, until the rest fit: keys help lists that a session needs least. Quit, help
and the screen's filters, open and back stay."""


class KeyBar(Widget):
    """The shown bindings of the focused widget and its ancestors, docked below: one line,
    or more (up to three) where one cannot hold every key, so that no key is cut off."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-bar--key", "key-bar--description"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: auto;
        max-height: 3;
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
        self._spans: list[tuple[int, int, int, str]] = []
        """(line, start, end, key) of each drawn key, for clicks."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen:
            self.refresh(layout=True)  # the keys may need another line, or one fewer

    def _keys(self) -> list[tuple[str, str, bool, str, str]]:
        """(key as shown, description, enabled, key, action) of each shown binding, the
        first of an action: the screen's, then the app's in ``APP_ORDER``."""
        own: list[tuple[str, str, bool, str, str]] = []
        app: list[tuple[str, str, bool, str, str]] = []
        seen: set[str] = set()
        for node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            description = SHORT.get(binding.description, binding.description)
            item = (self.app.get_key_display(binding), description, enabled, binding.key,
                    binding.action)
            (app if node is self.app else own).append(item)
        app.sort(key=lambda item: APP_ORDER.index(item[4]) if item[4] in APP_ORDER
                 else len(APP_ORDER))
        return own + app

    def _lines(self, width: int) -> list[list[tuple[str, str, bool, str, str]]]:
        """The keys in lines of ``width`` cells; where they need more than ``MAX_LINES``,
        without the keys ``DROP_ORDER`` names first."""
        keys = self._keys()
        lines = _wrap(keys, width)
        for action in DROP_ORDER:
            if len(lines) <= MAX_LINES:
                break
            if any(item[4] == action for item in keys):
                keys = [item for item in keys if item[4] != action]
                lines = _wrap(keys, width)
        return lines

    def listed(self) -> list[str]:
        """The action of each key the bar shows now, in order."""
        lines = self._lines(self.size.width)[:MAX_LINES]
        return [item[4] for line in lines for item in line]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return min(MAX_LINES, len(self._lines(width)))

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        spans: list[tuple[int, int, int, str]] = []
        for y, line in enumerate(self._lines(self.size.width)[:MAX_LINES]):
            if y:
                text.append("\n")
            x = 0
            for shown, description, enabled, key, _action in line:
                dim = Style() if enabled else Style(dim=True)
                text.append(f" {shown} ", style=key_style + dim)
                text.append(f"{description} ", style=description_style + dim)
                end = x + len(shown) + len(description) + 3
                spans.append((y, x, end, key))
                x = end
        self._spans = spans
        return text

    def on_click(self, event: events.Click) -> None:
        for line, start, end, key in self._spans:
            if line == event.y and start <= event.x < end:
                self.app.simulate_key(key)
                return


def _wrap(keys: list[tuple[str, str, bool, str, str]], width: int
          ) -> list[list[tuple[str, str, bool, str, str]]]:
    """Keys in lines of at most ``width`` cells, in order."""
    lines: list[list[tuple[str, str, bool, str, str]]] = [[]]
    used = 0
    for item in keys:
        cells = len(item[0]) + len(item[1]) + 3
        if used + cells > width and lines[-1]:
            lines.append([])
            used = 0
        lines[-1].append(item)
        used += cells
    return lines
