"""The lines above the evaluations table: matching rows and sort, then every active filter."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gero.query.table import RESULT_CLASSES, TableFilter, TableSort
from gero_runner.escape import for_terminal
from gero_runner.result_classes import RESULT_ABBREVIATIONS, RESULT_WORDS
from gero_tui.app.widgets.palette import CLASS_COLORS

WIDE = 100
"""Content width from which the class keys carry their full names."""
KEYS_HINT = "1-4 result · / text · o op · t dtype · z opt · u suite · c check"
SHORT_HINT = "1-4 result · / text · o op · t dtype · z opt"


class FilterBar(Static):
    """Class keys, matching rows, sort and selection; below them every active filter.

    The second line lists each filter that restricts the rows (result classes included),
    so that a table showing fewer rows than the run always says why.
    """

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
    recorded: reactive[int | None] = reactive(None)
    """What the run recorded, where fewer rows were readable (a skipped file)."""
    """Rows in the run."""
    selected: reactive[int] = reactive(0)
    """Rows selected (``space``/``a``)."""
    busy: reactive[bool] = reactive(False)
    """Whether a query for this filter is still running."""
    grouping: reactive[str] = reactive("")
    """What the grouping toggle merges ("levels merged"); empty: one row per evaluation."""
    grouped_rows: reactive[int | None] = reactive(None)
    """Rows matching the filter when they are grouped (``matching`` counts the groups)."""
    problem: reactive[str] = reactive("")
    """Why the last query failed (shown until one succeeds)."""

    def render(self) -> Text:
        f = self.table_filter
        labels = RESULT_WORDS if self.size.width >= WIDE else RESULT_ABBREVIATIONS
        text = Text(no_wrap=False, overflow="fold")
        for n, result in enumerate(RESULT_CLASSES, start=1):
            on = result in f.classes
            text.append(f"{n} ", style="bold")
            text.append(labels[result], style=f"bold #000000 on {_class_color(result)}" if on
                        else "dim")
            text.append("  ")
        text.append(" ")
        if self.matching is None:
            text.append("counting…", style="italic")
        else:
            of = f" of {self.total:,}" if self.total is not None else ""
            if self.total is not None and self.recorded is not None \
                    and self.total < self.recorded:
                of = f" of {self.total:,} of {self.recorded:,} readable"
            if self.grouping and self.grouped_rows is not None:
                text.append(f"{self.grouped_rows:,}{of} rows in {self.matching:,} "
                            f"({self.grouping})", style="bold")
            else:
                text.append(f"{self.matching:,}{of} rows", style="bold")
        if self.busy and self.matching is not None:
            text.append(" (updating)", style="dim italic")
        if self.selected:
            text.append(f" · {self.selected:,} selected", style="bold yellow")
        sort = f" · sort: {self.sort.describe()}"
        if text.cell_len + len(sort) > self.size.width:
            sort = f" · {self.sort.describe()}"  # 80 columns: the arrow says it is a sort
        text.append(sort, style="dim")
        text.append("\n")
        if self.problem:
            text.append(f"⚠ {for_terminal(self.problem)}", style="bold red")
            text.append("\n")
        phrases = f.describe()
        if phrases:
            text.append("filters: ", style="dim")
            text.append(for_terminal(" · ".join(phrases)), style="bold")
            text.append("   x clears", style="dim")
        else:
            text.append("no filters", style="dim")
            hint = KEYS_HINT if self.size.width >= WIDE else SHORT_HINT
            text.append(f" · keys: {hint}", style="dim")
        return text


def _class_color(result: str) -> str:
    return CLASS_COLORS[result]
