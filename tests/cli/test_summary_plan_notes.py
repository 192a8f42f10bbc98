"""``gero summary`` (text and JSON) and the report's model section show what the
needed-paths plan left out, with why, and the rows' notes, and count neither (issue 41)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gero_processes import gero
from shared_helpers import dense_softmax


def _gero(*args: str) -> subprocess.CompletedProcess[str]:
    done = gero(*args)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr + done.stdout
    return done


def _run(tmp_path: Path, *flags: str) -> str:
    """`gero run -q` of the dense model on ONNX Runtime alone (one job, one repeat, nothing
    reused) into ``tmp_path/root``, which is returned."""
    model, inputs = dense_softmax(tmp_path)
    root = str(tmp_path / "root")
    _gero("run", "--model", str(model), "--inputs", str(inputs), "--backends", "onnxruntime",
          *flags, "--repeats", "1", "--jobs", "1", "--no-reuse", "--data-dir", root,
          "--run-id", "r1", "-q")
    return root


@pytest.mark.slow
def test_summary_shows_the_settings_not_run_and_the_notes(tmp_path: Path) -> None:
    # ORT only, with an fp16 file: disable_all and all agree (basic, extended not needed),
    # and ORT computes the fp16 file's float16 nodes in float32 (a note on a row)
    root = _run(tmp_path, "--variants", "fp16")
    summary = json.loads(_gero("summary", "--data-dir", root, "--format", "json").stdout)
    settings = {(e["model"], e["setting"]) for e in summary["not_run"]}
    assert settings == {("dense", "ort-basic"), ("dense", "ort-extended")}
    assert all("disable_all and onnxruntime all agree" in e["why"] for e in summary["not_run"])
    assert [n["model"] for n in summary["notes"]] == ["dense"]
    assert "computes the fp16 file in float32" in summary["notes"][0]["note"]
    # shown, not counted: no class holds a row for a setting that did not run
    assert sum(summary["counts"].values()) == sum(
        e["passed"] + e["divergence"] + e["contract_issue"] + e["execution"]
        for e in summary["operations"])

    text = _gero("summary", "--data-dir", root).stdout
    assert "not run (not needed): ort basic on dense — onnxruntime disable_all" in text
    assert "not run (not needed): ort extended on dense" in text
    assert "note on dense: ONNX Runtime computes the fp16 file in float32" in text

    # the report's model section says the same
    _gero("report", "--data-dir", root, "-o", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('id="verdict"'):]
    section = section[:section.index("</section>")]
    assert "<h3>Not run (not needed)</h3>" in section
    assert "<li>ort basic on dense — onnxruntime disable_all" in section
    assert "<h3>Notes</h3>" in section
    assert "<strong>dense</strong>: ONNX Runtime computes the fp16 file in float32" in section


@pytest.mark.slow
def test_summary_of_an_exhaustive_run_lists_nothing_not_run(tmp_path: Path) -> None:
    root = _run(tmp_path, "--paths", "all")
    summary = json.loads(_gero("summary", "--data-dir", root, "--format", "json").stdout)
    assert summary["not_run"] == [] and summary["notes"] == []
    assert "not run (not needed)" not in _gero("summary", "--data-dir", root).stdout
    _gero("report", "--data-dir", root, "-o", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    assert "Not run (not needed)" not in page and 'class="notes"' not in page
