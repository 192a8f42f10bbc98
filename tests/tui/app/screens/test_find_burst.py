"""A long paste into the find box (issue 45 item 10): from a terminal without bracketed paste
it is one key event per character, and each was a query of the table (100 KB: more than 5
minutes on "updating", deaf to escape). Now a burst is one query, of the text typed last;
the box keeps ``FIND_MAX`` characters and says so once; escape leaves the box at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import settle
from textual import events
from textual.widgets import Input

from gero.query import table as table_query
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.widgets.find_box import FIND_MAX

TEXT = "abcdefghij" * 10_000
"""100 KB without a newline."""


@dataclass
class Queries:
    """What the evaluations screen asked of the run."""

    started: list[str] = field(default_factory=list)
    """The text filter of each table query started (each interrupts the one before; a
    thread and a cursor each)."""
    pages: list[str] = field(default_factory=list)
    """The text filter of each page fetched."""


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> Queries:
    seen = Queries()
    real_refresh, real_page = EvaluationsScreen.refresh_rows, table_query.TableQuery.page

    def refresh_rows(self: EvaluationsScreen) -> None:
        seen.started.append(self.table_filter.text)
        real_refresh(self)

    def page(self: table_query.TableQuery, table_filter: table_query.TableFilter,
             *args: Any, **kwargs: Any) -> table_query.Page:
        seen.pages.append(table_filter.text)
        return real_page(self, table_filter, *args, **kwargs)

    monkeypatch.setattr(EvaluationsScreen, "refresh_rows", refresh_rows)
    monkeypatch.setattr(table_query.TableQuery, "page", page)
    return seen


async def open_find_box(app: GeroApp, pilot: Any, queries: Queries
                        ) -> tuple[EvaluationsScreen, Input]:
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, EvaluationsScreen)
    await pilot.press("slash")
    box = screen.query_one("#text-filter", Input)
    assert screen.focused is box
    queries.started[:], queries.pages[:] = [], []
    return screen, box


def said(app: GeroApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
def long_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pause the find box never sees end during a test: what it queries is what enter or
    escape gave it, however slowly a loaded machine handles the keys before them."""
    from gero_tui.app.screens import evaluations

    monkeypatch.setattr(evaluations, "FIND_PAUSE_S", 600.0)


@pytest.mark.usefixtures("long_pause")
async def test_keys_of_a_paste_without_bracketed_paste_are_one_query(
        data_root: Path, queries: Queries) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen, box = await open_find_box(app, pilot, queries)
        burst = TEXT[:2_000]
        for char in burst:  # every key queued before the first is handled, as a paste is
            app.post_message(events.Key(char, char))
        app.post_message(events.Key("escape", None))
        await settle(pilot)  # the pause's workers, cancelled by escape, end too
        kept = burst[:FIND_MAX]
        assert box.value == kept and screen.table_filter.text == kept
        assert screen.focused is screen.table  # escape left the box
        # One query for the burst (it was one per key: 2,000), of the text typed last.
        assert queries.started == queries.pages == [kept] and screen.matching_count == 0
        assert said(app) == [f"the find box keeps {FIND_MAX} characters: the rest of what was "
                             "typed or pasted is left out"]
        assert f"at most {FIND_MAX} characters" in box.placeholder


async def test_a_bracketed_paste_keeps_what_fits(data_root: Path, queries: Queries) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen, box = await open_find_box(app, pilot, queries)
        box.post_message(events.Paste(TEXT))  # Input refused one past its limit whole
        await settle(pilot)  # one change: the find box's pause ends, then its query
        assert box.value == TEXT[:FIND_MAX] and screen.table_filter.text == TEXT[:FIND_MAX]
        assert queries.started == queries.pages == [TEXT[:FIND_MAX]]
        assert len(said(app)) == 1
        await pilot.press("escape")
        await pilot.pause()
        assert screen.focused is screen.table


@pytest.mark.usefixtures("long_pause")
async def test_escape_takes_the_text_at_once(data_root: Path, queries: Queries) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen, _ = await open_find_box(app, pilot, queries)
        for key, char in [("e", "e"), ("r", "r"), ("f", "f"), ("escape", None)]:
            app.post_message(events.Key(key, char))
        await pilot.pause()  # not the find box's pause: escape applied the text
        assert screen.table_filter.text == "erf" and screen.focused is screen.table
        await settle(pilot)
        assert queries.started == queries.pages == ["erf"] and screen.matching_count == 20
        assert said(app) == []
