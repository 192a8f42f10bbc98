"""`gero report`: one self-contained HTML page, checked as Chromium renders it (headless,
driven over its DevTools pipe): every finding and every operation's bar present with a box,
the segment links land on their rows, nothing is fetched, hostile names stay text."""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from chromium import Browser, find_chromium

import gero
from gero.html_markup import esc, fill
from gero.html_report import CONTENT_SECURITY_POLICY, render
from gero.query.report import FindingEvidence, gather
from gero_cli import main
from gero_runner.backends import installed_runtimes
from gero_runner.result_classes import RESULT_CLASSES

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; .ci/run "
                             "installs it)")
# Anything that names a resource: a URL with a scheme or a protocol-relative one, or an
# attribute that loads (src, srcset, url(), @import). The page links only to #fragments.
EVIDENCE = re.compile(r"[\w.-]+-evidence/finding-[0-9a-f]{12}/[\w.-]+")
"""A download beside the report: NAME-evidence/finding-ID/FILE (gero.query.evidence_files)."""
EXTERNAL = re.compile(r"(?i)\b(?:https?|ftp|wss?):|=\s*[\"']?//|\bsrc(?:set)?\s*=|"
                      r"url\(\s*[\"']?(?!#)|@import|<script|<link|<iframe|<object|<embed")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ORT runs of one suite: as is, then under tolerances tight enough to add findings."""
    path = tmp_path_factory.mktemp("report")
    gero.run(ops=["Softmax", "Add"], dtypes=["float16", "float32"], repeats=1, jobs=1,
             run_id="base", data_dir=path, backends=["onnxruntime"])
    gero.run(ops=["Softmax", "Add"], dtypes=["float16", "float32"], repeats=1, jobs=1,
             run_id="tight", data_dir=path, backends=["onnxruntime"],
             rtol={"float32": 1e-9}, atol={"float32": 0.0})
    return path


def _report(root: Path, out: Path, *args: str) -> str:
    assert main(["report", "--data-dir", str(root), *args, "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def _static_checks(text: str) -> None:
    assert f'content="{CONTENT_SECURITY_POLICY}"' in text
    found = EXTERNAL.findall(text)
    assert not found, f"the page names a resource: {found[:5]}"
    hrefs = re.findall(r'href="([^"]*)"', text)
    # fragments of the page, and the evidence downloads in the folder beside it
    assert hrefs and all(h.startswith("#") or EVIDENCE.fullmatch(h) for h in hrefs)
    ids = set(re.findall(r' id="([^"]*)"', text))
    assert {h[1:] for h in hrefs if h.startswith("#")} <= ids, "a link points at nothing"
    assert "A difference is a starting point." in text


def _check_rendered(b: Browser, run: gero.Run, out: Path) -> None:
    """Every finding and every operation's bar as Chromium laid them out."""
    findings = run.findings()
    summary = run.summary()
    dom = html.unescape(b.dom())
    cards = b.nodes("article.finding")
    assert len(cards) == len(findings)
    for i, finding in enumerate(findings, 1):
        (card,) = b.nodes(f"#finding-{i}")
        box = b.box(card)
        assert box is not None and box[2] > 300 and box[3] > 100
        assert finding.title in html.unescape(b.text(card))
        assert finding.representative.observation_id in dom
    rows = b.nodes("li.op")
    operations = summary["operations"]
    assert len(rows) == len(operations) > 0
    for i, op in enumerate(operations, 1):
        (name,) = b.nodes(f"#op-{i} .op-name")
        assert html.unescape(b.text(name)).endswith(f">{op['op_type']}</span>")
        (bar,) = b.nodes(f"#op-{i} svg.bar")
        box = b.box(bar)
        assert box is not None and box[2] > 200 and box[3] >= 20
        for result in RESULT_CLASSES:
            links = b.nodes(f'#op-{i} a[href="#op-{i}-{result}"]')
            if op[result]:
                # the bar's segment and the count beside it, and the rows they lead to
                assert len(links) == 2, (op["op_type"], result)
                text = html.unescape(b.text(links[1]))
                assert f"{op[result]:,} " in text
                (section,) = b.nodes(f"#op-{i}-{result}")
                rendered = b.box(section)
                assert rendered is not None and rendered[3] > 50
                shown = b.nodes(f"#op-{i}-{result} tbody tr")
                assert len(shown) == min(op[result], 5)
            else:
                assert links == []
    shot = b.screenshot(out)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


@needs_chromium
@pytest.mark.slow
def test_report_renders_every_finding_and_bar_and_fetches_nothing(root: Path,
                                                                  tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    text = _report(root, page, "--run", "tight", "--baseline", "base")
    _static_checks(text)
    with gero.open_run("tight", root) as run, Browser(CHROMIUM) as b:
        b.open(page)
        _check_rendered(b, run, tmp_path / "report.png")
        assert run.findings()
    assert b.requests == []


@needs_chromium
@pytest.mark.slow
def test_the_request_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """The control: the same check catches a page that loads from the network (and the
    static check catches it in the text)."""
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://example.invalid/x.png">'
                    '<link rel="stylesheet" href="//cdn.example.invalid/a.css"></body></html>')
    with Browser(CHROMIUM) as b:
        b.open(page)
    assert "http://example.invalid/x.png" in b.requests
    with pytest.raises(AssertionError):
        _static_checks(page.read_text())


@needs_chromium
@pytest.mark.slow
def test_report_of_a_run_with_every_runtime(tmp_path: Path) -> None:
    missing = {"openvino", "tract"} - set(installed_runtimes())
    if missing:
        pytest.skip(f"{', '.join(sorted(missing))} not installed (the openvino and tract "
                    "extras)")
    root = tmp_path / "data"  # the report goes beside it: never inside the data root
    gero.run(ops=["Add", "LayerNormalization"], dtypes=["float64"], repeats=1,
             jobs=1, data_dir=root, backends=["onnxruntime", "openvino", "tract"])
    page = tmp_path / "every.html"
    text = _report(root, page)
    _static_checks(text)
    with gero.open_run(None, root) as run, Browser(CHROMIUM) as b:
        b.open(page)
        _check_rendered(b, run, tmp_path / "every.png")
        (comparison,) = b.nodes("#comparison")
        shown = html.unescape(b.text(comparison))
        for name in ("ONNX Runtime", "OpenVINO", "tract", "ReferenceEvaluator"):
            assert f"<strong>{name}</strong>" in shown
        (timing,) = b.nodes("#timing")
        assert "OpenVINO median" in b.text(timing) and "tract median" in b.text(timing)
        assert len(run.findings()) >= 3
    assert b.requests == []


def test_against_a_baseline_new_still_and_gone(root: Path, tmp_path: Path) -> None:
    with gero.open_run("tight", root) as tight, gero.open_run("base", root) as base:
        new = tight.findings_report("base")
        back = base.findings_report("tight")
    added = [f for f in new.findings if f.status == "new"]
    assert added and back.gone, "the tight tolerance adds findings that are gone again"
    text = html.unescape(_report(root, tmp_path / "new.html", "--run", "tight",
                                 "--baseline", "base"))
    assert (f"{len(added)} new</strong>, {len(new.findings) - len(added)} still, "
            f"<strong>{len(new.gone)} gone</strong>") in text
    assert text.count('<span class="status status-new">new</span>') == len(added)
    text = html.unescape(_report(root, tmp_path / "gone.html", "--run", "base",
                                 "--baseline", "tight"))
    gone = text[text.index("Gone: their cases ran again"):]
    for f in back.gone:
        assert f.title in gone and f.finding_id in gone


def test_no_baseline_is_said(root: Path, tmp_path: Path) -> None:
    text = _report(root, tmp_path / "first.html", "--run", "base")
    assert "Not compared: no earlier run of this suite" in text


def _card(text: str, i: int) -> str:
    return text[text.index(f'id="finding-{i}"'):].split("</article>")[0]


def test_a_stored_localization_is_shown_with_its_finding(root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    with gero.open_run("tight", copy) as run:
        findings = run.findings()
    i, finding = next((i, f) for i, f in enumerate(findings, 1)
                      if f.representative.check in ("agreement", "levels"))
    rep = finding.representative
    assert main(["localize", rep.observation_id[:16], "--data-dir", str(copy)]) == 0
    stored = json.loads((copy / rep.artifact_path / "localize" /
                         f"{rep.observation_id}.json").read_text())
    text = html.unescape(_report(copy, tmp_path / "loc.html", "--run", "tight"))
    assert stored["summary"] in _card(text, i)
    assert all("Not localized" in _card(text, k) for k in range(1, len(findings) + 1) if k != i)


def test_origins_are_listed_and_unreadable_results_tolerated(root: Path, tmp_path: Path) -> None:
    """An origin as ``gero localize`` stores it (node, op type, figures, share); a blame file
    that cannot be read is as if absent."""
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    with gero.open_run("tight", copy) as run:
        first, second, *_ = run.findings()
    rep = first.representative
    (copy / rep.artifact_path / "localize").mkdir()
    (copy / rep.artifact_path / "localize" / f"{rep.observation_id}.json").write_text(
        json.dumps({"summary": "the error enters at Softmax_0 (Softmax)", "repro": "/tmp/r",
                    "origins": [{"node": "Softmax_0", "op_type": "Softmax", "share": 0.93,
                                 "inputs_scaled_error": 1.4e-6, "local_scaled_error": 1.9e-5}]}))
    other = second.representative
    (copy / other.artifact_path / "blame").mkdir(exist_ok=True)
    (copy / other.artifact_path / "blame" / f"{other.observation_id}.json").write_text("{not")
    text = html.unescape(_report(copy, tmp_path / "loc.html", "--run", "tight"))
    card = _card(text, 1)
    assert "the error enters at Softmax_0 (Softmax)" in card
    assert ("Softmax_0 (Softmax): inputs agree to 1.4e-06 scaled, alone it adds 1.9e-05, "
            "explains 93% of the final error") in card
    assert "gero replay /tmp/r" in card
    assert "Not localized" in _card(text, 2)


@needs_chromium
def test_hostile_names_stay_text(root: Path, tmp_path: Path) -> None:
    """Graph names, run ids and messages are input: markup in them is shown, never run."""
    evil = '</code><script>alert(1)</script><img src=x onerror=alert(1)>"\'&'
    with gero.open_run("tight", root) as run:
        report = run.findings_report("base")
        data = gather(run.reader, report, lambda f: (f"gero replay {evil}", "bundle"))
    first = data.findings[0]
    hostile = replace(first.finding, title=evil, operators=(evil,),
                      representative=replace(first.finding.representative, reason=evil))
    bars = tuple(replace(b, op_type=evil + b.op_type) for b in data.bars)
    data = replace(data, run_id=evil, findings=(FindingEvidence(
        hostile, first.analysis, first.analysis_note, first.localized, first.replay_command,
        evil), *data.findings[1:]), bars=bars, problems=(evil,),
        record={**data.record, "command_line": evil, "cpu_model": evil})
    page = tmp_path / "hostile.html"
    page.write_text(render(data), encoding="utf-8")
    with Browser(CHROMIUM) as b:
        b.open(page)
        assert b.nodes("script, img, iframe, object, embed") == []
        (title,) = b.nodes("#finding-1 .title")
        assert html.unescape(b.text(title)) == f'<span class="title">{evil}</span>'
        assert len(b.nodes("li.op")) == len(bars)
    assert b.requests == []


def test_template_escapes_every_value() -> None:
    assert esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert fill('<p title="$t">$b</p>', t='" onload="x', b="<b>") == \
        '<p title="&quot; onload=&quot;x">&lt;b&gt;</p>'
    assert fill("<p>$b</p>", b=esc("<b>")) == "<p>&lt;b&gt;</p>"  # escaped once, not twice


def test_report_errors_are_one_sentence(root: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--data-dir", str(root), "--run", "nope", "-o",
                 str(tmp_path / "x.html")]) == 2
    (tmp_path / "a-file").write_text("")
    assert main(["report", "--data-dir", str(root), "-o",
                 str(tmp_path / "a-file" / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "gero: error: " in err and "cannot write it" in err and "not a directory" in err
    assert "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--data-dir", str(root)])  # -o is required
    assert exit_.value.code == 2


def test_tolerance_overrides_are_marked_and_nothing_else(root: Path, tmp_path: Path) -> None:
    def rows(text: str) -> list[str]:
        table = text[text.index(">Comparison tolerances<"):]
        table = table[:table.index("</table>")]
        return [re.sub(r"<[^>]+>", " ", "<tr" + r) for r in table.split("<tr")[2:]]

    tight = rows(_report(root, tmp_path / "tight.html", "--run", "tight"))
    assert [r.split()[0] for r in tight if "override" in r] == ["float32"]
    assert any("1e-09" in r and "override" in r for r in tight)
    base = rows(_report(root, tmp_path / "base.html", "--run", "base"))
    assert not any("override" in r for r in base)
    assert all("default" in r or "own bound" in r for r in base)


def test_a_clean_run_says_so(tmp_path: Path) -> None:
    run = gero.run(ops=["Exp"], dtypes=["float32"], contracts=False, repeats=1, jobs=1,
                   data_dir=tmp_path / "data", backends=["onnxruntime"])
    assert run.passed
    text = run.report(tmp_path / "clean.html").read_text(encoding="utf-8")
    run.close()
    _static_checks(text)
    assert "No findings: every observation of this run is within contract." in text
    assert text.count('class="op"') == 1 and 'href="#op-1-passed"' in text
    assert 'href="#op-1-divergence"' not in text
