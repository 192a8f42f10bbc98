"""Inference time, with context: per operation, measured pairs and the two medians."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from gero_runner.backends.names import short_name
from gero_runner.escape import for_terminal


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


class TimingTable(DataTable[str | Text]):
    """Operation, measured pairs, each runtime's median and the reference median (ms)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._runtimes: tuple[str, ...] | None = None

    def on_mount(self) -> None:
        self._columns(())

    def _columns(self, runtimes: tuple[str, ...]) -> None:
        """One column per runtime when there are several, else one named Runtime."""
        if runtimes == self._runtimes:
            return
        self.clear(columns=True)
        self._runtimes = runtimes
        self.add_column("Operation", key="op")
        self.add_column("Pairs", key="pairs")
        if len(runtimes) > 1:
            for name in runtimes:
                self.add_column(short_name(name), key=f"runtime:{name}")
        else:
            self.add_column("Runtime", key="runtime")
        self.add_column("Reference", key="reference")

    def show(self, rows: list[tuple[str, int, dict[str, float], float | None]]) -> None:
        """(operation, measured pairs, median per runtime, reference median) per operation."""
        runtimes = tuple(dict.fromkeys(name for _, _, by, _ in rows for name in by))
        self._columns(runtimes)
        self.clear()
        for op, pairs, by, reference in rows:
            cells = [f"{_ms(by.get(name)):>7}" for name in runtimes] or [f"{_ms(None):>7}"]
            # A Text: a DataTable reads a str as markup, and an operation may be a model's
            # file name with "[" or ESC in it.
            self.add_row(Text(for_terminal(op)), f"{pairs:>5}", *cells, f"{_ms(reference):>9}",
                         key=op)

