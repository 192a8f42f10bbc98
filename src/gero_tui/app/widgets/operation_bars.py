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

from gero_runner.escape import for_terminal
from gero_tui.app.widgets.palette import CLASS_COLORS

SEGMENTS = tuple(CLASS_COLORS.items())
"""(result class, colour) in bar order: passed, divergence, contract issue, execution."""
NAME_MAX = 20
"""Widest operation name column (longer names are cut with an ellipsis)."""


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
        self._ids: list[str] = []
        self._name_max = NAME_MAX

    def show(self, rows: list[tuple[str, dict[str, int]]], ids: list[str] | None = None,
             name_max: int = NAME_MAX) -> None:
        """Operations (or operation and runtime, or findings) with their counts per result
        class; each option's id is its name unless ``ids`` are given; names are cut at
        ``name_max`` (a finding's title wants more room than an operator's name)."""
        self._ids = ids if ids is not None else [name for name, _ in rows]
        # An operation is a model's file name, a title may quote a node: shown escaped.
        self._rows = [(for_terminal(name), counts) for name, counts in rows]
        self._name_max = name_max
        self._rebuild()

    def on_resize(self, event: events.Resize) -> None:
        if self._rows:
            self._rebuild()

    def _rebuild(self) -> None:
        highlighted = self.highlighted
        # Room for the vertical scrollbar whether or not it shows yet (a line one cell too
        # long loses its counts), and a cell of margin.
        width = max(self.content_region.width - self.styles.scrollbar_size_vertical - 1, 40)
        figures = ["/".join(str(counts.get(k, 0)) for k, _ in SEGMENTS) for _, counts in self._rows]
        # Name and counts columns as wide as their longest entry; the bar takes the rest.
        name_width = min(max((len(op) for op, _ in self._rows), default=4), self._name_max,
                         width // 3 if self._name_max <= NAME_MAX else width // 2)
        counts_width = max((len(f) for f in figures), default=7)
        bar_width = max(width - name_width - counts_width - 3, 6)
        options = []
        for (op, counts), figure, key in zip(self._rows, figures, self._ids, strict=True):
            name = op if len(op) <= name_width else op[:name_width - 1] + "…"
            line = Text(f"{name:<{name_width}} ")
            line.append_text(bar(counts, bar_width))
            line.append(f" {figure:>{counts_width}}", style="dim")
            options.append(Option(line, id=key))
        self.clear_options()
        self.add_options(options)
        if options:
            self.highlighted = min(highlighted or 0, len(options) - 1)
