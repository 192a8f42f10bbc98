"""Helpers of the evaluations table's tests (its screen's and the app-level ones): the rows
a DuckDB query expects, the rows the table shows, the table once it is open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from conftest import settle

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen


def expected(observations: Path, where: str = "true", order: str = "",
             params: list[Any] | None = None) -> list[str]:
    sql = (f"SELECT observation_id FROM read_parquet('{observations}', file_row_number = true) "
           f"WHERE {where} {order}")
    con = duckdb.connect()
    # As the explorer does: the fixture's float statistics must not fold isnan() to false.
    con.execute("SET disabled_optimizers = 'statistics_propagation'")
    return [r[0] for r in con.execute(sql, params or []).fetchall()]


def shown(app: GeroApp) -> list[str]:
    screen = app.screen
    assert isinstance(screen, EvaluationsScreen)
    table = screen.table
    rows = [table.row(i) for i in range(table.row_count)]
    assert all(r is not None for r in rows), "every row of the small run is on the first page"
    return [r.observation_id for r in rows if r is not None]


async def open_table(pilot: Any) -> EvaluationsScreen:
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, EvaluationsScreen)
    return screen
