"""The what-if dialog: `w` on the findings, a dtype's tolerances typed in, results live."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import gero_run, settle, static_text

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.whatif_dialog import WhatIfDialog


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("whatif")
    done = gero_run(root, "--ops", "LayerNormalization", "--dtypes", "float16", "--repeats", "1")
    assert done.returncode == 1, done.stderr  # 1: the run has findings, which this test needs
    return root


def _text(app: GeroApp) -> str:
    return static_text(app, "#whatif-result")


@pytest.mark.slow
async def test_typing_tolerances_regrades_live(real_run: Path) -> None:
    app = GeroApp(real_run, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, WhatIfDialog)
        await pilot.press("1", "tab", "1")  # float16 rtol = 1, atol = 1: everything passes
        await settle(pilot)
        text = _text(app)
        assert "would pass" in text and "0 would diverge" in text
        # The LayerNorm finding's law rows (layernorm_variance) are not re-graded: its
        # tolerance-graded rows would pass, the finding would shrink but not go.
        assert "not re-graded" in text
        # In the CLI's words: "N of M would pass" (it read "less N of M").
        assert re.search(r"\b\d+ of \d+ +would pass", text) and " less " not in text
        assert not text.startswith("0 would pass")
        await pilot.press("backspace", "x")  # a bad value says so, in one line
        await settle(pilot)
        shown = _text(app)
        assert "atol: 'x' is not a number" in shown and "--atol" not in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, WhatIfDialog)
