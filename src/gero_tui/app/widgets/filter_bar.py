"""The line above the evaluations table: which filters are on, how many rows match, the sort."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gero_tui.query.table import RESULT_CLASSES, TableFilter, TableSort

CLASS_LABELS = {"passed": "passed", "divergence": "divergence",
                "contract_issue": "contract", "execution": "execution"}


class FilterBar(Static):
    """Active filters, matching rows, sort and selection, always visible."""

    DEFAULT_CSS = """
    FilterBar { height: auto; padding: 0 1; background: $boost; }
    """

    table_filter: reactive[TableFilter] = reactive(TableFilter)
    """The filter the table shows."""
    sort: reactive[TableSort] = reactive(TableSort)
    """The order the table shows."""
    matching: reactive[int | None] = reactive(None)
    """Rows matching the filter; None while the query runs."""
    total: reactive[int | None] = reactive(None)
    """Rows in the run."""
    selected: reactive[int] = reactive(0)
    """Rows selected (``space``/``a``)."""
    busy: reactive[bool] = reactive(False)
    """Whether a query for this filter is still running."""

    def render(self) -> Text:
        f = self.table_filter
        text = Text(no_wrap=False, overflow="fold")
        for n, result in enumerate(RESULT_CLASSES, start=1):
            on = result in f.classes
            style = f"bold reverse {_class_color(result)}" if on else "dim"
            text.append(f"{n}", style="bold")
            text.append(f" {CLASS_LABELS[result]}", style=style)
            text.append("  ")
        if self.matching is None:
            text.append("counting…", style="italic")
        else:
            of = f" of {self.total:,}" if self.total is not None else ""
            text.append(f"{self.matching:,}{of} rows", style="bold")
        if self.busy and self.matching is not None:
            text.append(" (updating)", style="dim italic")
        if self.selected:
            text.append(f" · {self.selected:,} selected", style="bold yellow")
        text.append(f" · sort: {self.sort.describe()}", style="dim")
        phrases = [p for p in f.describe() if not p.startswith("result:")]
        text.append("\n")
        if phrases:
            text.append("filters: ", style="dim")
            text.append(" · ".join(phrases))
            text.append("   x clears", style="dim")
        else:
            text.append("no filters", style="dim")
            text.append("  (1-4 result · / text · o op · t dtype · z opt · u suite · c check)",
                        style="dim")
        return text


def _class_color(result: str) -> str:
    return {"passed": "green", "divergence": "yellow", "contract_issue": "magenta",
            "execution": "red"}[result]
