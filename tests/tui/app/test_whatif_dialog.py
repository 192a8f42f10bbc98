"""The what-if dialog: `w` on the findings, a dtype's tolerances typed in, results live."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import settle
from rich.console import Console
from textual.widgets import Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.whatif_dialog import WhatIfDialog


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("whatif")
    # A fresh process: forking workers from one that has run Textual apps is not safe.
    done = subprocess.run([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(root),
                           "--ops", "LayerNormalization", "--dtypes", "float16", "--jobs", "1",
                           "--repeats", "1"], capture_output=True)
    assert done.returncode == 1, done.stderr  # 1: the run has findings, which this test needs
    return root


def _text(app: GeroApp) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(app.screen.query_one("#whatif-result", Static).content)
    return console.export_text()


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
