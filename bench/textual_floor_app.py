"""The least a Textual explorer can take to paint: a bare app with a status line and a
40-row DataTable, no data source. explorer_bench.py times its first paint the same way as
gero's, so the difference is what gero adds (its imports, DuckDB, the query, its screen).

    python bench/textual_floor_app.py
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static


class Floor(App[None]):
    def compose(self) -> ComposeResult:
        yield Static(" 1,000,000 of 1,000,000 rows")
        yield DataTable()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Operation / test case", "Result", "Details")
        for i in range(40):
            table.add_row(f"Exp {i}", "passed", "bit-exact")


if __name__ == "__main__":
    Floor().run()
