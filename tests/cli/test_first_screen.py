"""The first screen ranks what a user acts on, on a small real run of a stock ONNX Runtime:
Max fed NaN (NaN in, NaN out on every path), Elu in float64 (no ONNX Runtime kernel) and
float16 Softmax (ONNX Runtime off float64 by 0.40). ``gero summary`` counts the first two
apart, the findings list ONNX Runtime's wrong numbers before them; ``gero report`` lands on
the counts, then one row per operation, with every representative's evidence beside it and
commands that work from any folder (Chromium, 1280×800)."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import Browser, find_chromium
from verdict_rows import model_row, write_model_run

import gero
from gero.query.assessable import NAN, NOT_IMPLEMENTED
from gero_cli import main

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                    "(apt-get install chromium; .ci/run installs it)")
FIRST_SCREEN = (1280, 800)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("first-screen")
    assert main(["run", "--ops", "Max,Elu,Softmax", "--dtypes", "float16,float64",
                 "--backends", "onnxruntime", "--repeats", "2", "--jobs", "1",
                 "--data-dir", str(path), "-q"]) == 1
    return path


def test_summary_counts_what_cannot_be_assessed_apart(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(root), "--format", "json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    apart = {e["reason"]: e for e in summary["not_assessable"]}
    assert set(apart) == {NAN, NOT_IMPLEMENTED}
    assert set(apart[NAN]["by_class"]) == {"contract_issue"}
    assert apart[NOT_IMPLEMENTED]["by_class"] == {"execution": summary["counts"]["execution"]}
    act = summary["assessable_counts"]
    assert act["divergence"] == summary["counts"]["divergence"] > 0
    for result in ("divergence", "contract_issue", "execution"):
        assert act[result] + sum(e["by_class"].get(result, 0) for e in apart.values()) \
            == summary["counts"][result]
    assert main(["summary", "--data-dir", str(root)]) == 1
    text = capsys.readouterr().out
    total = sum(e["observations"] for e in apart.values())
    assert f"counted apart, cannot be assessed by construction: {total:,}" in text
    assert f"to act on: {sum(act.values()):,} non-passed" in text
    nan = apart[NAN]["observations"]
    assert f"{nan:,}  NaN in, NaN out: NaN == NaN cannot be assessed (contract)" in text


def test_findings_list_a_runtimes_wrong_numbers_before_what_cannot_be_assessed(
        root: Path) -> None:
    with gero.open_run(None, root) as run:
        findings = run.findings()
    kinds = [f.cannot_assess for f in findings]
    assert kinds[-2:] == [NAN, NOT_IMPLEMENTED] and not any(kinds[:-2])
    softmax = next(i for i, f in enumerate(findings)
                   if f.result == "divergence" and f.operators == ("Softmax",))
    error = findings[softmax].max_abs_error
    assert error is not None and error > 0.3
    assert softmax < len(findings) - 2


def _gero(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def _bottom(b: Browser, selector: str) -> float:
    (node,) = b.nodes(selector)
    box = b.box(node)
    assert box is not None, selector
    return box[1] + box[3]


_HISTOGRAM_BOXES = """JSON.stringify([...document.querySelectorAll('svg.hist')].map(svg => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  return {rects: [...svg.querySelectorAll('rect')].map(box),
          texts: [...svg.querySelectorAll('text')].map(e => [...box(e), e.textContent])};
}))"""
"""Each histogram's bars and texts as laid out (page pixels), by the page's own geometry."""


def _overlap(a: list[float], b: list[float], slack: float = 0.5) -> bool:
    return (a[0] + slack < b[0] + b[2] and b[0] + slack < a[0] + a[2]
            and a[1] + slack < b[1] + b[3] and b[1] + slack < a[1] + a[3])


@pytest.fixture(scope="module")
def report(root: Path) -> Path:
    """``gero report`` as a user runs it, from the data root's parent with a relative
    ``--data-dir``, into a folder of its own."""
    out = root.parent / "reports" / "first.html"
    out.parent.mkdir()
    done = _gero("report", "--data-dir", root.name, "-o", str(out), cwd=root.parent)
    assert done.returncode == 0, done.stderr
    return out


@needs_chromium
def test_the_report_lands_on_the_counts_and_the_table_of_operations(
        root: Path, report: Path, tmp_path: Path) -> None:
    with gero.open_run(None, root) as run:
        summary = run.summary()
    apart = sum(e["observations"] for e in summary["not_assessable"])
    act = summary["assessable_counts"]
    with Browser(CHROMIUM, *FIRST_SCREEN) as b:
        b.open(report)
        shot = tmp_path / "first-screen.png"
        b.screenshot(shot, selector=None, max_height=FIRST_SCREEN[1])
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # the counts, every tile and the sentence under them, on the first screen
        assert _bottom(b, "#counts") <= FIRST_SCREEN[1]
        tiles = {b.attribute(n, "id"): html.unescape(b.text(n)) for n in b.nodes(".tile")}
        assert f">{act['contract_issue'] + act['execution']:,}<" in tiles["tile-contract_issue"]
        assert f">{apart:,}<" in tiles["tile-apart"]
        if b.nodes("#verdict"):
            assert _bottom(b, "#verdict") <= FIRST_SCREEN[1]
        # then the table of operations; what ran is below it, one row a runtime
        (table,) = b.nodes("table.landing")
        top = b.box(table)
        assert top is not None and top[1] > _bottom(b, "#counts")
        rows = b.nodes("table.landing tbody tr")
        cells = [html.unescape(b.text(n)) for n in rows]
        assert len(cells) == len(summary["operations"]) + 1  # and the divider
        assert "Softmax" in cells[0] and 'class="apart"' not in cells[0]
        divider = next(i for i, c in enumerate(cells) if 'class="divider"' in c)
        assert all('class="apart"' in c for c in cells[divider + 1:])
        assert {re.search(r'href="#op-\d+">(\w+)<', c).group(1)  # type: ignore[union-attr]
                for c in cells[divider + 1:]} == {"Max", "Elu"}
        compared = b.nodes("#compared table")[0]
        box = b.box(compared)
        assert box is not None and box[1] > top[1]
        assert len(b.nodes("#compared > div.scroll:first-of-type tbody tr")) == 2  # ORT, reference
        # no histogram text on a bar, or on another text
        histograms = json.loads(b.page("Runtime.evaluate", expression=_HISTOGRAM_BOXES,
                                       returnByValue=True)["result"]["value"])
        assert len(histograms) >= 3
        for h in histograms:
            rects, texts = h["rects"], h["texts"]
            assert rects and len(texts) >= 2 * len(rects)
            for i, (*t, words) in enumerate(texts):
                assert t[2] > 0 and t[3] > 0, words  # drawn
                assert not any(_overlap(t, r) for r in rects), words
                assert not any(_overlap(t, u[:4]) for u in texts[i + 1:]), words
    assert b.requests == []


def test_each_representatives_evidence_is_beside_the_report_with_its_digest(
        root: Path, report: Path) -> None:
    text = html.unescape(report.read_text(encoding="utf-8"))
    with gero.open_run(None, root) as run:
        findings = run.findings()
    links = re.findall(r'<a href="([^"]+)" download>([^<]+)</a></td><td>(\w+)</td>'
                       r'<td class="n">[^<]+</td><td><code class="sha">([0-9a-f]{64})<', text)
    labels = {label for *_, label, _ in links}
    assert labels == {"graph", "inputs", "case", "manifest"}
    for href, name, _, digest in links:
        file = report.parent / href
        assert file.name == name and hashlib.sha256(file.read_bytes()).hexdigest() == digest
    for f in findings:  # each card lists its own graph, whose digest the manifest records
        card = text[text.index(f"<span class=\"title\">{f.title}"):].split("</article>")[0]
        manifest = json.loads((root / f.representative.artifact_path / "manifest.json")
                              .read_text())
        assert manifest["files"]["model.onnx"] in card
        assert "as the manifest records it" in card
        # a determinism row compares hashes: it never says a path failed
        if f.representative.result != "execution":
            assert "failed before producing output" not in card


def test_the_reproduce_commands_work_from_another_folder(root: Path, report: Path,
                                                         tmp_path: Path) -> None:
    text = html.unescape(report.read_text(encoding="utf-8"))
    with gero.open_run(None, root) as run:
        softmax = next(f for f in run.findings() if f.result == "divergence")
    card = text[text.index(f"<span class=\"title\">{softmax.title}"):].split("</article>")[0]
    replay, bundle = card.split("<pre><code>")[1].split("</code></pre>")[0].splitlines()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for command in (replay, bundle):
        argv = shlex.split(command)
        assert argv[0] == "gero"
        done = _gero(*argv[1:], cwd=elsewhere)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    assert "reproduced bit-exact" in _gero(*shlex.split(replay)[1:], cwd=elsewhere).stdout
    assert (elsewhere / f"finding-{softmax.finding_id}.tar.gz").is_file()


@needs_chromium
def test_a_models_verdict_card_and_the_counts_share_the_first_screen(tmp_path: Path) -> None:
    ort, ov = ("onnxruntime", "all"), ("openvino", "f32")
    rows = [model_row(ort, "model:fp32", scaled_error=1e-7, scaled_limit=1e-4),
            model_row(ov, "model:fp32", "divergence", scaled_error=2.7e-3, scaled_limit=1e-4),
            model_row(ort, "model:fp16:vs-fp32", reference="fp32:onnxruntime:all",
                      scaled_error=5e-4, limit=4e-3),
            model_row(ov, "model:fp16", "execution", output="",
                      reason="fp16:openvino-f32 failed: <no kernel>")]
    write_model_run(tmp_path / "data", rows, "r")
    with gero.open_run("r", tmp_path / "data") as run:
        page = run.report(tmp_path / "model.html")
    with Browser(CHROMIUM, *FIRST_SCREEN) as b:
        b.open(page)
        assert _bottom(b, "#verdict") < _bottom(b, "#counts") <= FIRST_SCREEN[1]
        b.screenshot(tmp_path / "model-first-screen.png", max_height=FIRST_SCREEN[1])
