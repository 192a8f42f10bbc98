"""The worst elements of a comparison as a small keyboard list: up/down move, enter opens the
element side by side.

At most a few dozen fixed rows, drawn as one block of text: a DataTable here cost more to
paint than the rest of the histogram tab together.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

OUT_STYLE = "bold red"


_CELL_STYLES = {"OUT": OUT_STYLE, "within": "green"}


def _align(cell: str, width: int, column: int) -> str:
    return cell.ljust(width) if column < 2 else cell.rjust(width)


class WorstList(Widget, can_focus=True):
    """Rows of cells under a header: the first two columns left-aligned, the others right;
    'OUT' and 'within' cells coloured. Lines are cut at the edge, never wrapped."""

    DEFAULT_CSS = """
    WorstList { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    WorstList:focus { background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("home", "move(-1000)", show=False),
        Binding("end", "move(1000)", show=False),
        Binding("enter", "open", "side by side"),
    ]

    cursor: reactive[int] = reactive(0)

    class Opened(Message):
        """Enter on row ``index``."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.header: tuple[str, ...] = ()
        self.rows: list[tuple[str, ...]] = []
        self.empty = ""

    def set_rows(self, header: tuple[str, ...], rows: list[tuple[str, ...]],
                 empty: str = "no rows") -> None:
        """Show ``rows`` under ``header``; ``empty`` is shown instead when there are none."""
        self.header, self.rows, self.empty = header, rows, empty
        self.cursor = 0
        self.styles.height = len(rows) + 1  # known: no render to measure it
        self.refresh()

    def action_move(self, delta: int) -> None:
        if self.rows:
            self.cursor = min(max(self.cursor + delta, 0), len(self.rows) - 1)
            self.scroll_to_region_of_cursor()

    def scroll_to_region_of_cursor(self) -> None:
        """Keep the cursor row in view inside the scrolling container."""
        parent = self.parent
        if isinstance(parent, Widget):
            own = self.virtual_region
            row = Region(own.x, own.y + self.cursor + 1, own.width, 1)
            parent.scroll_to_region(row, animate=False, immediate=True)

    def action_open(self) -> None:
        if self.rows:
            self.post_message(self.Opened(self.cursor))

    def render(self) -> Text:
        if not self.header:
            return Text("")
        if not self.rows:
            return Text(self.empty, style="dim")
        widths = [max([cell_len(h)] + [cell_len(r[k]) for r in self.rows])
                  for k, h in enumerate(self.header)]
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append("  ".join(_align(h, w, k) for k, (h, w)
                              in enumerate(zip(self.header, widths, strict=True))), style="bold")
        for i, row in enumerate(self.rows):
            line = Text("\n")
            for k, (cell, width) in enumerate(zip(row, widths, strict=True)):
                if k:
                    line.append("  ")
                line.append(_align(cell, width, k), style=_CELL_STYLES.get(cell, ""))
            if i == self.cursor and self.has_focus:
                line.stylize("reverse", 1)
            text.append_text(line)
        return text

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
