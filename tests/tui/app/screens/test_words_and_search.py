"""Words and search: the find box ANDs its words across the columns; space selects without
moving; sorting by scaled error, ULP and the atol a row needs; B says what blame is for."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fixture_rows, settle
from textual.widgets import Static

from gero.query.source import open_source
from gero.query.table import TableFilter, TableQuery, TableSort
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.evaluations import EvaluationsScreen


def test_words_are_anded_across_columns(data_root: Path) -> None:
    query = TableQuery(open_source(data_root))
    rows = fixture_rows()
    both = [r for r in rows if r["op_type"] == "Softmax" and r["dtype"] == "float16"]
    for text in ("softmax float16", "  FLOAT16   Softmax ", "softmax float16 divergence"):
        got = query.count(TableFilter(text=text))
        want = len(both) if "divergence" not in text else sum(
            r["result"] == "divergence" for r in both)
        assert got == want, text
    assert query.count(TableFilter(text="softmax erf")) == 0  # no row has both


def test_sorting_by_the_figures_that_compare_across_dtypes(tmp_path: Path) -> None:
    from conftest import RUN_ID, write_run

    rows = fixture_rows()[:6]
    for n, row in enumerate(rows):
        row.update(scaled_error=[3.0, 1.0, 5.0, float("nan"), 2.0, 4.0][n],
                   max_ulp=float(10 - n), min_atol=float(n))
    write_run(tmp_path, RUN_ID, rows)
    query = TableQuery(open_source(tmp_path))
    ids = [r["observation_id"] for r in rows]

    def order(key: str, descending: bool) -> list[str]:
        page = query.page(TableFilter(), TableSort(key, descending), 0, 10)
        return [r.observation_id for r in page.rows]

    assert order("scaled_error", True) == [ids[i] for i in (2, 5, 0, 4, 1, 3)]  # NaN last
    assert order("max_ulp", False) == ids[::-1]
    assert order("min_atol", True) == ids[::-1]
    assert TableSort("min_atol").describe().startswith("Needs atol")


async def test_space_selects_without_moving(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        await pilot.press("space")
        await settle(pilot)
        assert screen.table.cursor == 0 and screen.selected_count == 1
        await pilot.press("down", "space")
        await settle(pilot)
        assert screen.selected_count == 2  # Space Down Space: two neighbouring rows


@pytest.mark.slow
async def test_blame_on_a_row_that_is_not_ort_says_what_blame_is_for(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        screen.table_filter = TableFilter(backends=frozenset({"onnx-reference"}))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.observation is not None
        await pilot.press("B")
        await settle(pilot)
        text = str(detail.query_one("#detail-blame", Static).render())
        assert "blame is for ONNX Runtime's optimisation levels" in text
        assert "reference" in text
