"""The Findings table shows each finding's whole title, wrapped where the width is short:
at 80 columns titles were cut where their first 45 characters are (three read "Softmax
(float64) breaks the probability_ext"), at 120 where they are longer than about 90."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import settle
from textual.geometry import Region
from textual.widgets import DataTable

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.findings import FindingsScreen


def _titles_drawn(table: DataTable[object]) -> list[str]:
    """Each row's finding cell as drawn, its lines joined."""
    lines = [strip.text for strip in table.render_lines(
        Region(0, 0, table.size.width, table.virtual_size.height))]
    x = sum(c.get_render_width(table) for c in table.ordered_columns[:-1])
    title = table.ordered_columns[-1].get_render_width(table)
    drawn, y = [], 1  # under the header
    for row in table.ordered_rows:
        cell = [line[x:x + title].strip() for line in lines[y:y + row.height]]
        drawn.append(" ".join(part for part in cell if part))
        y += row.height
    return drawn


@pytest.mark.parametrize("size", [(80, 60), (120, 40), (60, 60)])
async def test_every_title_is_whole(data_root: Path, size: tuple[int, int]) -> None:
    app = GeroApp(data_root, screen="findings")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        table = screen.query_one(DataTable)
        assert table.virtual_size.width <= table.size.width, "no sideways scrolling"
        titles = [f.title for f in screen.report.findings]
        assert len(titles) > 1
        assert _titles_drawn(table) == titles
        if size[0] == 80:
            assert any(row.height > 1 for row in table.ordered_rows), "some wrap at 80"


async def test_a_resize_wraps_the_titles_again(data_root: Path) -> None:
    app = GeroApp(data_root, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.report is not None
        await pilot.press("down")
        await pilot.resize_terminal(80, 60)
        await settle(pilot)
        table = screen.query_one(DataTable)
        assert _titles_drawn(table) == [f.title for f in screen.report.findings]
        assert table.cursor_row == 1, "the highlighted finding stays"
