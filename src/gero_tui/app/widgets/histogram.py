"""Horizontal bar histogram: one row per bin, a labelled line where the tolerance falls."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

BLOCKS = " ▏▎▍▌▋▊▉█"


@dataclass(frozen=True)
class Bar:
    """One bar: its label, count, and whether it lies beyond the tolerance line."""

    label: str
    count: int
    beyond: bool = False


@dataclass(frozen=True)
class Chart:
    title: str
    bars: tuple[Bar, ...]
    marker_after: int | None = None
    """Draw the marker line after this many bars (None: no line)."""
    marker_label: str = ""
    footer: str = ""


def bar_text(count: int, largest: int, width: int) -> str:
    """A bar of eighth-blocks proportional to count/largest; a non-zero count shows at least ▏."""
    if count <= 0 or largest <= 0 or width <= 0:
        return ""
    eighths = max(1, round(count / largest * width * 8))
    full, rest = divmod(eighths, 8)
    return "█" * full + (BLOCKS[rest] if rest else "")


class Histogram(Widget):
    """Renders a :class:`Chart`; bars beyond the tolerance line are drawn in the error colour."""

    DEFAULT_CSS = """
    Histogram { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    chart: reactive[Chart | None] = reactive(None, layout=True)
    """What to draw; None shows nothing."""

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """A known height (where the stylesheet leaves it to the content): the layout need
        not render the chart once more to measure it. (Set as an inline height when the first
        chart came, it depended on whether the stylesheet had been applied by then: on Python
        3.13 a ``1fr`` histogram was sometimes as tall as its chart.)"""
        return chart_height(self.chart)

    def render(self) -> RenderableType:
        chart = self.chart
        if chart is None:
            return Text("")
        label_width = max((len(b.label) for b in chart.bars), default=1)
        count_width = max((len(str(b.count)) for b in chart.bars), default=1)
        width = max(4, self.size.width - label_width - count_width - 6)
        largest = max((b.count for b in chart.bars), default=0)
        # One line each (titles are cut, never wrapped): chart_height() stays exact.
        lines: list[RenderableType] = [Text(chart.title, style="bold", no_wrap=True,
                                            overflow="ellipsis")]
        for i, bar in enumerate(chart.bars):
            if chart.marker_after is not None and i == chart.marker_after:
                lines.append(_marker(chart.marker_label, label_width + count_width + width + 3))
            line = Text(f"{bar.label:>{label_width}} ")
            line.append(f"{bar.count:>{count_width}} ", style="dim" if not bar.count else "")
            line.append(bar_text(bar.count, largest, width),
                        style="red" if bar.beyond else "green")
            lines.append(line)
        if chart.marker_after is not None and chart.marker_after >= len(chart.bars):
            lines.append(_marker(chart.marker_label, label_width + count_width + width + 3))
        if chart.footer:
            lines.append(Text(chart.footer, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*lines)


def chart_height(chart: Chart | None) -> int:
    """Lines :meth:`Histogram.render` draws for ``chart``."""
    if chart is None:
        return 0
    marker = chart.marker_after is not None
    return 1 + len(chart.bars) + int(marker) + int(bool(chart.footer))


def _marker(label: str, width: int) -> Text:
    text = f"── {label} "
    return Text(text + "─" * max(0, width - len(text)), style="bold yellow")


def marker_position(lows: Sequence[float], threshold_log10: float) -> int | None:
    """Index of the first bin whose lower edge (log10) is at or above the threshold."""
    if math.isinf(threshold_log10) or math.isnan(threshold_log10):
        return None
    for i, low in enumerate(lows):
        if low >= threshold_log10:
            return i
    return len(lows)
