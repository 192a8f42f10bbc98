"""Counts per result class, labelled as the landing page labels them."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gero_runner.result_classes import RESULT_CLASSES
from gero_tui.app.widgets.palette import CLASS_COLORS

# The landing page's three headings; the third groups two result classes.
CARDS = (
    ("Within contract", ("passed",), "Agreement + invariant checks", CLASS_COLORS["passed"]),
    ("Backend divergences", ("divergence",), "Candidates for investigation",
     CLASS_COLORS["divergence"]),
    ("Contract / execution issues", ("contract_issue", "execution"), "Baseline not assessed",
     CLASS_COLORS["execution"]),
)


NARROW = 100
"""Below this width the cards are lines, one under another."""


class ClassCounts(Static):
    """Three figures: within contract, backend divergences, contract / execution issues."""

    DEFAULT_CSS = """
    ClassCounts { height: auto; padding: 0 1; }
    """

    counts: reactive[dict[str, int] | None] = reactive(None, always_update=True)
    """Observations per result class; None until known."""

    def render(self) -> Table:
        counts = self.counts
        narrow = self.size.width < NARROW
        grid = Table.grid(expand=True, padding=(0, 2))
        if narrow:
            # One line per card: title, figure, caption (cards side by side wrap at 80).
            grid.add_column(no_wrap=True)
            grid.add_column(justify="right", no_wrap=True)
            grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        else:
            for _ in CARDS:
                grid.add_column(ratio=1)
        cells = []
        for title, classes, caption, color in CARDS:
            figure = Text("…" if counts is None else f"{sum(counts.get(c, 0) for c in classes):,}",
                          style=f"bold {color}")
            heading = Text(title, style="bold")
            keys = " ".join(str(i) for i, c in enumerate(RESULT_CLASSES, start=1)
                            if c in classes)
            sub = Text(caption, style="dim")
            if counts is not None and len(classes) > 1:
                sub = Text(" · ".join(f"{counts.get(c, 0):,} {c.replace('_issue', '')}"
                                      for c in classes), style="dim")
            # The keys that open these rows, said as keys: "[34]" read like a count.
            # (At 80 columns "keys 3,4": "key 3 or 4" was cut to "key 3 or…".)
            both = (f"keys {keys.replace(' ', ',')}" if narrow
                    else f"key {keys.replace(' ', ' or ')}")
            sub.append(f"  {both}" if len(classes) > 1 else f"  key {keys}", style="dim")
            if narrow:
                grid.add_row(heading, figure, sub)
            else:
                cells.append(Group(heading, figure, sub))
        if cells:
            grid.add_row(*cells)
        return grid
