"""Per-operation drill-down: max abs error (log10) over one operation's evaluations,
one row per optimisation level and dtype, computed in DuckDB off the UI thread."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker

from gero.query.histograms import GroupHistogram, OperationHistogram, operation_histogram
from gero_runner.escape import for_terminal
from gero_tui.app.base import leave
from gero_tui.app.widgets.histogram import Bar, Chart, Histogram
from gero_tui.app.worker_errors import worker_failure

SHADES = " ▁▂▃▄▅▆▇█"


def decade_label(decade: int) -> str:
    return "inf" if decade == 999 else f"1e{decade:+d}"


def group_chart(group: GroupHistogram, low: int, high: int) -> Chart:
    """One group's observations as bars: exact zero, each decade of the group's own range
    (within ``low``..``high``), inf, no figure."""
    own = [d for d in group.decades if d != 999]
    if own:
        low, high = max(low, min(own)), min(high, max(own))
    else:
        low, high = 0, -1
    bars = [Bar("0 (exact)", group.zero)]
    bars += [Bar(f"[{decade_label(d)}, {decade_label(d + 1)})", group.decades.get(d, 0))
             for d in range(low, high + 1)]
    if 999 in group.decades:
        bars.append(Bar("inf", group.decades[999], beyond=True))
    bars.append(Bar("no figure", group.no_figure))
    return Chart(f"{group.optimization} · {group.dtype}: {group.total} evaluations", tuple(bars))


def sparkline(group: GroupHistogram, low: int, high: int) -> Text:
    """One character per decade from ``low`` to ``high``: the share of the group's largest."""
    counts = [group.decades.get(d, 0) for d in range(low, high + 1)]
    largest = max(counts, default=0) or 1
    text = Text()
    for c in counts:
        text.append(SHADES[0 if c == 0 else max(1, round(c / largest * 8))],
                    style="yellow" if c else "dim")
    return text


class OpHistogramScreen(Screen[None]):
    """`p` from the evaluations table, the overview or a detail view."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "back")]
    CSS_PATH = "op_histogram.tcss"

    def __init__(self, source: Any, op_type: str | None = None,
                 observation_id: str | None = None) -> None:
        """For ``op_type``, or for the operation of ``observation_id`` (looked up first)."""
        super().__init__()
        self.source = source
        self.op_type = op_type or ""
        self.observation_id = observation_id
        self.histogram: OperationHistogram | None = None

    def action_back(self) -> None:
        leave(self)

    def compose(self) -> ComposeResult:
        yield Static(Text(for_terminal(f"{self.op_type or 'operation'}: loading…")),
                     id="op-title")
        yield DataTable(id="op-groups", cursor_type="row", zebra_stripes=True)
        yield Histogram(id="op-bars")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="op-histogram", exit_on_error=False)
    def load(self) -> None:
        cursor = self.source.cursor()
        if not self.op_type and self.observation_id:
            row = cursor.execute("SELECT op_type FROM obs WHERE observation_id = ? LIMIT 1",
                                 [self.observation_id]).fetchone()
            self.op_type = str(row[0]) if row else ""
        histogram = operation_histogram(cursor, self.op_type)
        self.app.call_from_thread(self._show, histogram)

    def _show(self, histogram: OperationHistogram) -> None:
        self.histogram = histogram
        low, high = histogram.decade_range
        title = Text()
        title.append(for_terminal(self.op_type), style="bold")
        title.append(f": max abs error over {histogram.total} evaluations, by optimisation "
                     "level and dtype")
        if high >= low:
            title.append(f"; decades {decade_label(low)} … {decade_label(high)}", style="dim")
        widget = self.query_one("#op-title", Static)
        widget.update(title)
        # As the detail's title (screens/detail.py): the worker may answer before the first
        # layout, and Textual 8.2 then keeps the box model of "loading…" (one line; Python
        # 3.13). An inline style changes the box model's cache key: the height is measured anew.
        widget.styles.height = "auto"
        table: DataTable[Any] = self.query_one("#op-groups", DataTable)
        table.clear(columns=True)
        table.add_columns("optimisation", "dtype", "n", "exact", "log10 max abs error",
                          "inf", "n/a")
        for g in histogram.groups:
            table.add_row(g.optimization, g.dtype, str(g.total), str(g.zero),
                          sparkline(g, low, high), str(g.decades.get(999, 0)),
                          str(g.no_figure))
        if histogram.groups:
            self._show_group(0)
            table.focus()
        else:
            self.query_one("#op-bars", Histogram).chart = Chart(
                f"no evaluations of {self.op_type!r} in this run", ())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_group(event.cursor_row)

    def _show_group(self, index: int) -> None:
        if self.histogram is None or not 0 <= index < len(self.histogram.groups):
            return
        low, high = self.histogram.decade_range
        self.query_one("#op-bars", Histogram).chart = group_chart(
            self.histogram.groups[index], low, high)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so; the explorer goes on."""
        if (error := worker_failure(event)) is not None:
            self.notify(error, title="Histogram failed", severity="error", timeout=15)
