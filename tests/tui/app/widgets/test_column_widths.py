"""The evaluations table sizes its columns from the run's values: at 120 columns the names
that tell rows apart (case, path, check, blamed) are whole (both "model:fp16:vs-fp32" and
"model:fp16:vs-model" read "model:fp16:v…" before); where they must be cut (80 columns), no
two values read the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_rows, settle, write_run

from gero.query.table import COLUMNS
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.widgets.evaluations_table import MARK_WIDTH

RUN = "20260101-120000-abcdef"
PATHS = (("tract", "unoptimized"), ("tract", "optimized"), ("openvino", "bf16-default"),
         ("onnxruntime", "all"))
CHECKS = ("model:fp16:vs-fp32", "model:fp16:vs-model", "contract:probability_extreme",
          "contract:probability", "model:int8-dynamic:vs-model", "model:int8-static:vs-model")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("column-widths")
    template = fixture_rows(RUN)[0]
    rows = []
    for n, ((backend, setting), check) in enumerate(
            (p, c) for p in PATHS for c in CHECKS):
        # A divergence the float64 arbiter puts on the path itself: it blames the path.
        rows.append({**template, "observation_id": f"{n:064x}", "backend": backend,
                     "optimization": setting, "check": check, "op_type": "MaskedSoftmax",
                     "case_name": "MaskedSoftmax.additive 3x4x10",
                     "case_id": "synthetic/MaskedSoftmax.additive/3x4x10/float16",
                     "result": "divergence", "arbiter": "reference",
                     "reason": "3 of 64 elements outside atol=5e-4 + rtol=5e-3·|r|"})
    write_run(path, RUN, rows)
    return path


def _cells(screen: EvaluationsScreen) -> list[tuple[int, dict[str, str]]]:
    """Each row on screen as drawn: its index, and its cells' text by column key."""
    table = screen.table
    width = table.size.width - (1 if table.row_count > table.visible_rows else 0)
    columns = table.columns_for(width)
    drawn = []
    for y in range(1, table.visible_rows + 1):
        if table.top + y - 1 >= table.row_count:
            break
        line = "".join(s.text for s in table.render_line(y))
        cells, x = {}, MARK_WIDTH
        for index, w in columns:
            cells[COLUMNS[index].key] = line[x:x + w].strip()
            x += w + 1
        drawn.append((table.top + y - 1, cells))
    return drawn


async def _table(pilot: Any) -> EvaluationsScreen:
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, EvaluationsScreen)
    assert screen.table.run_content is not None, "the run's values were read"
    return screen


async def test_names_are_whole_at_120_columns(root: Path) -> None:
    app = GeroApp(root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _table(pilot)
        drawn = _cells(screen)
        assert len(drawn) == len(PATHS) * len(CHECKS)
        for index, cells in drawn:
            row = screen.table.row(index)
            assert row is not None
            for key in ("case", "optimization", "check", "blamed"):
                assert cells[key] == row.cells[key], (key, cells[key])
        assert {c["check"] for _, c in drawn} == set(CHECKS)


async def test_cut_names_still_differ_at_80_columns(root: Path) -> None:
    app = GeroApp(root, screen="evaluations")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _table(pilot)
        seen: dict[str, dict[str, str]] = {"optimization": {}, "check": {}, "blamed": {}}
        for _ in range(3):  # every row, a page at a time
            for index, cells in _cells(screen):
                row = screen.table.row(index)
                assert row is not None
                for key, shown in seen.items():
                    shown[str(row.cells[key])] = cells[key]
            await pilot.press("pagedown")
            await settle(pilot)
        assert set(seen["check"]) == set(CHECKS)
        assert any("…" in text for text in seen["check"].values()), "80 columns cut some"
        for key, shown in seen.items():
            assert len(set(shown.values())) == len(shown), (key, shown)


def test_an_error_with_a_three_digit_exponent_keeps_its_exponent() -> None:
    """float64 overflow rows (4.49e+307) read "4.49e+3…" in the narrow error column."""
    from gero_tui.app.widgets.evaluations_table import format_value

    assert format_value("max_abs_error", 4.49e307, 8) == "4.5e+307"
    assert format_value("max_abs_error", 4.49e307, 9) == "4.49e+307"
    assert format_value("max_abs_error", 1.19e-7, 8) == "1.19e-07"
