"""Precision across operations: per operation a bar of passed / divergence / contract / execution.

An option list, so an operation can be chosen with the keyboard; choosing one opens the
evaluations table filtered to it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import OptionList
from textual.widgets.option_list import Option

SEGMENTS = (("passed", "green"), ("divergence", "yellow"), ("contract_issue", "magenta"),
            ("execution", "red"))
NAME_WIDTH = 16
COUNTS_WIDTH = 17


def bar(counts: dict[str, int], width: int) -> Text:
    """A bar ``width`` cells wide, split in proportion to the counts (no class rounds to 0)."""
    total = sum(counts.values())
    text = Text()
    if total == 0 or width <= 0:
        return text.append("·" * max(width, 0), style="dim")
    cells = {k: counts.get(k, 0) * width / total for k, _ in SEGMENTS}
    sizes = {k: (max(1, round(v)) if counts.get(k, 0) else 0) for k, v in cells.items()}
    # Give the rounding error to (or take it from) the largest segment.
    largest = max(sizes, key=lambda k: sizes[k])
    sizes[largest] += width - sum(sizes.values())
    for key, color in SEGMENTS:
        text.append("█" * max(sizes[key], 0), style=color)
    return text


class OperationBars(OptionList):
    """One line per operation: name, outcome bar, counts."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[tuple[str, dict[str, int]]] = []

    def show(self, rows: list[tuple[str, dict[str, int]]]) -> None:
        """Operations with their counts per result class."""
        self._rows = rows
        self._rebuild()

    def on_resize(self, event: events.Resize) -> None:
        if self._rows:
            self._rebuild()

    def _rebuild(self) -> None:
        highlighted = self.highlighted
        width = max(self.scrollable_content_region.width, 40)
        bar_width = max(width - NAME_WIDTH - COUNTS_WIDTH - 3, 6)
        options = []
        for op, counts in self._rows:
            line = Text(f"{op[:NAME_WIDTH - 1]:<{NAME_WIDTH}}")
            line.append_text(bar(counts, bar_width))
            figures = "/".join(str(counts.get(k, 0)) for k, _ in SEGMENTS)
            line.append(f" {figures:>{COUNTS_WIDTH}}", style="dim")
            options.append(Option(line, id=op))
        self.clear_options()
        self.add_options(options)
        if options:
            self.highlighted = min(highlighted or 0, len(options) - 1)
