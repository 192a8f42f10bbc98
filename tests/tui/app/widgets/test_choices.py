"""The dialogs' radio sets: `enter` on the format already chosen moves on (it did nothing),
and the chosen button is told apart without colour (under NO_COLOR every button was the
same ``●``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RUN_ID, settle
from textual.widgets import Input, RadioButton, RadioSet, Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.export_dialog import ExportDialog
from gero_tui.app.screens.whatif_dialog import WhatIfDialog


async def test_enter_on_the_format_already_chosen_moves_to_the_path(
        data_root: Path, tmp_path: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert isinstance(dialog.focused, RadioSet) and dialog.format == "csv"
        box = dialog.query_one("#export-path", Input)
        box.value = str(tmp_path / "rows.csv")
        await pilot.press("enter")  # CSV, the format shown chosen
        await settle(pilot)
        focused: object = dialog.focused
        assert focused is box, "enter on the chosen format moves to the path"
        assert dialog.format == "csv" and box.value.endswith("rows.csv")
        await pilot.press("enter")
        await settle(pilot)
        assert (tmp_path / "rows.csv").is_file()
        assert "as csv" in str(dialog.query_one("#export-status", Static).content)


def _marks(radio_set: RadioSet) -> list[str]:
    """Each button as plain text without its label: what is left to tell them apart when
    nothing is coloured."""
    return [str(b.render()).replace(str(b.label), "").strip()
            for b in radio_set.query(RadioButton)]


async def _assert_choice_visible(pilot: object, screen: object) -> None:
    sets = list(screen.query(RadioSet))  # type: ignore[attr-defined]
    assert sets
    for radio_set in sets:
        marks = _marks(radio_set)
        chosen = radio_set.pressed_index
        assert len(marks) > 1 and chosen >= 0
        assert all(m != marks[chosen] for n, m in enumerate(marks) if n != chosen), marks
        # And after another choice, the mark moves with it.
        radio_set.focus()
        await pilot.press("right", "enter")  # type: ignore[attr-defined]
        await pilot.pause()  # type: ignore[attr-defined]
        moved = _marks(radio_set)
        assert radio_set.pressed_index != chosen
        assert moved[radio_set.pressed_index] == marks[chosen] and moved[chosen] != marks[chosen]


@pytest.mark.parametrize("dialog", ["export", "whatif"])
async def test_the_chosen_radio_shows_without_colour(
        data_root: Path, monkeypatch: pytest.MonkeyPatch, dialog: str) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = GeroApp(data_root, RUN_ID, screen="findings" if dialog == "whatif" else "evaluations")
    assert app.no_color
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("w" if dialog == "whatif" else "e")
        await settle(pilot)
        assert isinstance(app.screen, WhatIfDialog if dialog == "whatif" else ExportDialog)
        await _assert_choice_visible(pilot, app.screen)
