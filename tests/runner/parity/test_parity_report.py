"""The parity run's Markdown summary: a module's output names are shown as text."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

from gero_runner.parity.report import _report
from gero_runner.schema import RunRecord

HOSTILE = "\x1b]0;pwned\x07\u202e<script>alert(1)</script>[x](http://e)`` ` ``|"
SHOWN = "\\x1b]0;pwned\\x07\\u202e<script>alert(1)</script>[x](http://e)`` ` ``|"


def _record() -> RunRecord:
    return RunRecord(
        run_id="plain", started_at="2026-01-01T00:00:00+00:00", finished_at="", status="complete",
        suite="parity", command_line="gero parity", seed=0, jobs=1, threads=1, cpu_model="cpu",
        python_version="3", numpy_version="2", onnx_version="1", onnxruntime_version="1",
        tolerances={}, case_count=1, observation_count=1, new_observation_count=1,
        counts={"divergence": 1}, wall_seconds=0.0, backend_seconds=0.0)


def test_a_hostile_output_name_stays_text_in_its_cell_and_in_the_findings() -> None:
    row: dict[str, Any] = {
        "result": "divergence", "case_name": "sample 0: x", "output_name": HOSTILE,
        "optimization": "all", "reason": f"{HOSTILE} differs", "rtol": 1e-3, "atol": 1e-4,
        "artifact_path": f"artifacts/{HOSTILE}", "reference_version": "2.13", "details": "{}"}
    text = _report(_record(), [row], f"pkg.{HOSTILE}:make")
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in text
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<script" not in html and "<a " not in html
    assert f"<td>{SHOWN.replace('<', '&lt;').replace('>', '&gt;')}</td>" in html
    assert f"<code>pkg.{SHOWN.replace('<', '&lt;').replace('>', '&gt;')}:make</code>" in html
