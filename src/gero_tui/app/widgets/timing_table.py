"""Inference time, with context: per operation, measured pairs and the two medians."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


class TimingTable(DataTable[str]):
    """Operation, measured pairs, runtime median, reference median (ms)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)

    def on_mount(self) -> None:
        self.add_column("Operation", key="op")
        self.add_column("Pairs", key="pairs")
        self.add_column("Runtime", key="runtime")
        self.add_column("Reference", key="reference")

    def show(self, rows: list[tuple[str, int, float | None, float | None]]) -> None:
        """(operation, measured pairs, runtime median, reference median) per operation."""
        self.clear()
        for op, pairs, runtime, reference in rows:
            self.add_row(op, f"{pairs:>5}", f"{_ms(runtime):>7}", f"{_ms(reference):>9}",
                         key=op)
