"""Counts per result class, labelled as the landing page labels them; what cannot be
assessed by construction (NaN in, NaN out; an operator a runtime does not implement) counted
apart, so the issues figure is what a user acts on."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gero.query.assessable import SHORT_LABELS, Split
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


APART = ("Cannot be assessed", "#8a8a8a")
"""The card of what no runtime could be judged on: grey, not a class's colour."""

NARROW = 100
"""Below this width the cards are lines, one under another."""


class ClassCounts(Static):
    """Three figures: within contract, backend divergences, contract / execution issues."""

    DEFAULT_CSS = """
    ClassCounts { height: auto; padding: 0 1; }
    """

    counts: reactive[dict[str, int] | None] = reactive(None, always_update=True)
    """Observations per result class; None until known."""
    split: reactive[Split | None] = reactive(None, always_update=True, layout=True)
    """The non-passed counts split (assessable.split_counts); None until known. When known,
    a non-passed card counts what can be assessed, and a fourth card the rest. A layout
    change: the cards' text wraps anew (4 cards at 120 columns put the issues card's
    breakdown on two lines)."""

    def render(self) -> Table:
        counts, split = self.counts, self.split
        if counts is not None and split is not None:
            counts = {**counts, **split.assessable}
        apart = split is not None and split.not_assessable_total > 0
        narrow = self.size.width < NARROW
        grid = Table.grid(expand=True, padding=(0, 2))
        if narrow:
            # One line per card: title, figure, caption (cards side by side wrap at 80).
            grid.add_column(no_wrap=True)
            grid.add_column(justify="right", no_wrap=True)
            grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        else:
            for _ in range(len(CARDS) + apart):
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
            hint = both if len(classes) > 1 else f"key {keys}"
            if narrow:
                grid.add_row(heading, figure, sub.append(f"  {hint}", style="dim"))
            elif apart:  # four cards share the width: the key on a line of its own
                cells.append(Group(heading, figure, sub, Text(hint, style="dim")))
            else:
                cells.append(Group(heading, figure, sub.append(f"  {hint}", style="dim")))
        if split is not None and apart:
            title, color = APART
            figure = Text(f"{split.not_assessable_total:,}", style=f"bold {color}")
            sub = Text(" · ".join(f"{sum(by.values()):,} {SHORT_LABELS[why]}"
                                  for why, by in split.not_assessable.items()), style="dim")
            if narrow:
                grid.add_row(Text(title, style="bold"), figure, sub)
            else:
                cells.append(Group(Text(title, style="bold"), figure, sub))
        if cells:
            grid.add_row(*cells)
        return grid
