"""The overview's counts on a small real run of a stock ONNX Runtime (Max fed NaN, Elu in
float64 without a kernel, float16 Softmax off float64): the issues card counts what a user
acts on, a fourth card what cannot be assessed by construction, at 120 and 80 columns (cards
side by side, then one line a card)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from conftest import settle
from rich.console import Console

import gero
from gero_cli import main
from gero_tui.app.app import GeroApp
from gero_tui.app.widgets.class_counts import ClassCounts


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("apart")
    assert main(["run", "--ops", "Max,Elu,Softmax", "--dtypes", "float16,float64", "--backends",
                 "onnxruntime", "--repeats", "1", "--jobs", "1",
                 "--data-dir", str(path), "-q"]) == 1
    return path


def _lines(widget: ClassCounts) -> list[str]:
    console = Console(width=widget.size.width, record=True, file=io.StringIO())
    console.print(widget.render())
    return [" ".join(line.split()) for line in console.export_text().splitlines()]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_issues_card_counts_what_can_be_assessed(root: Path,
                                                          size: tuple[int, int]) -> None:
    with gero.open_run(None, root) as run:
        summary = run.summary()
    apart = {e["reason"]: e["observations"] for e in summary["not_assessable"]}
    act = summary["assessable_counts"]
    assert apart["nan"] > 0 and apart["not-implemented"] > 0
    app = GeroApp(root)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        widget = app.screen.query_one(ClassCounts)
        lines = _lines(widget)
        # every line of the cards on screen: their height follows their text
        assert widget.size.height >= len([line for line in lines if line]), lines
        findings = " ".join(str(app.screen.query_one("#findings-count").render()).split())
    counts = summary["counts"]
    # the issues figure: contract issues and failures a user acts on, not the NaN-fed rows
    issues = act["contract_issue"] + act["execution"]
    total = sum(apart.values())
    assert 0 < issues < counts["contract_issue"] + counts["execution"]
    figures = [f"{counts['passed']:,}", f"{counts['divergence']:,}", f"{issues:,}",
               f"{total:,}"]
    titles = ["Within contract", "Backend divergences", "Contract / execution issues",
              "Cannot be assessed"]
    if size[0] >= 100:  # the cards side by side: titles, then figures, in one order
        assert lines[0] == " ".join(titles) and lines[1] == " ".join(figures), lines
    else:  # one line a card: its title and its figure
        for line, title, figure in zip(lines, titles, figures, strict=True):
            assert re.match(rf"{re.escape(title)} {figure}\b", line), lines
    shown = " ".join(lines)  # the fourth card's breakdown may wrap after "not"
    assert f"{apart['nan']:,} NaN inputs · {apart['not-implemented']:,} not" in shown
    assert "implemented" in shown
    assert "the last 2 cannot be assessed" in findings
