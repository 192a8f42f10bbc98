"""Words a newcomer reads right, pickers that count under the other filters, type-ahead."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest
from conftest import settle
from table_helpers import open_table

from gero.query.detail import explained_value
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.value_picker import ValuePickerScreen
from gero_tui.app.widgets.tensor_view import window_text


@pytest.mark.slow
async def test_picker_counts_respect_the_other_filters_and_type_ahead_jumps(
        data_root: Path, observations: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_table(pilot)
        await pilot.press("4")  # execution rows only
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ValuePickerScreen) and picker.values is not None
        want = duckdb.execute(f"SELECT dtype, count(*) FROM read_parquet('{observations}') "
                              "WHERE result = 'execution' GROUP BY 1 ORDER BY 1").fetchall()
        assert picker.values == want
        # The mark is a character: [x] chosen, [ ] not.
        await pilot.press("space")
        await pilot.pause()
        from textual.widgets import OptionList

        options = picker.query_one(OptionList)
        first = options.get_option_at_index(0).prompt
        assert str(first).startswith("[x] ")
        await pilot.press("escape", "4")  # cancelled; every class again
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ValuePickerScreen)
        await pilot.press("s", "o")  # type-ahead: the first value starting with "so"
        await pilot.pause()
        options = picker.query_one(OptionList)
        assert picker.values is not None and options.highlighted is not None
        assert picker.values[options.highlighted][0] == "Softmax"


def test_detail_fields_agree_with_the_row_class() -> None:
    divergence = {"result": "divergence", "arbiter": "-", "rtol": 1e-5, "atol": 1e-6,
                  "max_abs_error": 0.806, "max_rel_error": 4.7e-7}
    assert "no float64 value" in explained_value("arbiter", divergence)
    assert "only a divergence" in explained_value("arbiter", {**divergence,
                                                              "result": "passed"})
    rel = explained_value("max_rel_error", divergence)
    assert rel.startswith("4.7e-07") and "r = 0" in rel
    failed = {"result": "execution", "max_abs_error": math.nan}
    assert "a path failed" in explained_value("max_abs_error", failed)


def test_the_side_by_side_says_which_columns_are_shown_and_that_more_lie_right() -> None:
    assert window_text(0, 4, 4, 0, 3, 32).plain == "rows 0–3 of 4 · columns 0–2 of 32 →"
    assert window_text(10, 20, 32, 1, 4, 4).plain == "rows 10–19 of 32 ↑↓ · columns 1–3 of 4 ←"
