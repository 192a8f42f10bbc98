"""The report opens on the verdict card: a row per runtime setting, a cell per file, what is
not safe below it; first on the page, seen on the first screen in headless Chromium."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from chromium import Browser, find_chromium
from verdict_rows import model_row, write_model_run

import gero

ORT, OV = ("onnxruntime", "all"), ("openvino", "f32")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-verdicts")
    rows = [model_row(ORT, "model:fp32", scaled_error=1e-7, scaled_limit=1e-4),
            model_row(OV, "model:fp32", "divergence", scaled_error=2.7e-3, scaled_limit=1e-4),
            model_row(ORT, "model:fp16:vs-fp32", reference="fp32:onnxruntime:all",
                      scaled_error=5e-4, limit=4e-3),
            model_row(OV, "model:fp16", "execution", output="",
                      reason="fp16:openvino-f32 failed: <no kernel>")]
    write_model_run(root, rows, "r")
    with gero.open_run("r", root) as run:
        return run.report(root.parent / "report.html")


def test_the_card_comes_first_with_its_figures_and_reasons(page: Path) -> None:
    text = page.read_text()
    card = text.index('<section id="verdict"')
    assert card < min(text.index('<section id="comparison"'), text.index('<section id="counts"'))
    section = text[card:text.index("</section>", card)]
    assert "m: 2 safe, 1 off, 1 cannot run" in section
    cells = [html.unescape(c) for c in section.split('<td class="v v-')[1:]]
    assert [c.split('"')[0] for c in cells] == ["safe", "safe", "off", "cannot-run"]
    assert "scaled error 0.0027 &gt; 0.0001 against the float64 shadow" in section
    # the reason is the run's text, escaped
    assert "cannot run: fp16:openvino-f32 failed: &lt;no kernel&gt;" in section


@pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")
def test_the_card_is_on_the_first_screen(page: Path, tmp_path: Path) -> None:
    with Browser(width=1280, height=800) as b:
        b.open(page)
        (table,) = b.nodes("table.verdict")
        box = b.box(table)
        assert box is not None and box[1] + box[3] < 800  # the whole card, unscrolled
        shot = b.screenshot(tmp_path / "first-screen.png", "#verdict")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
