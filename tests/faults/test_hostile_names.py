"""Hostile names in real ``gero`` processes: a model whose node and output names, file and
directory, and a data root whose path carry terminal escapes, a bidi override, HTML and
Markdown. Whatever gero prints or writes shows them escaped, in every format; none retitles
or clears the terminal, reorders text, or becomes a link, an image, HTML or a table cell."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import onnx
import pytest
from markdown_it import MarkdownIt
from onnx import TensorProto, helper, numpy_helper
from test_fault_injection import gero

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e<script>alert(1)</script>[x](http://e)`` ` ``|"
"""In every node's name and in the output's: a title change, a clear screen, a right-to-left
override, HTML, a link, a code span, a table cell."""
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\u202e<script>alert(1)</script>[x](http://e)`` ` ``|"
"""HOSTILE as gero shows it: each control character a visible escape."""
DIRECTORY = "\x1b]0;pwned\x07\x1b[2J\u202e<script>alert(1)</script>[x](e)`` ` ``|"
"""The same in a directory name (a file name holds no slash)."""
DIRECTORY_SHOWN = SHOWN.replace("http://e", "e")
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must never reach a terminal or a file: controls (a newline aside), bidi overrides."""


def _model(path: Path) -> Path:
    """X in [1, 2] times 200, times 400 (past float16's 65,504), scaled back down
    (tests/runner/evidence/localize_models.fp16_overflow): the ReferenceEvaluator computes the
    fp16 file in float16, so its output is inf where the fp32 model's is finite (a contract
    issue no noise floor covers), and `gero localize` names the origin, the second Mul. Every
    name is hostile."""
    def node(op: str, inputs: list[str], output: str, name: str) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [output], name=f"{HOSTILE}/{name}")

    def constant(name: str, value: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    y = f"Y{HOSTILE}"
    nodes = [node("Mul", ["X", "k200"], "a", "Pre"),
             node("Mul", ["a", "k400"], "b", "Up"),
             node("Mul", ["b", "k001"], "c", "Down"),
             node("Add", ["c", "one"], y, "Shift")]
    graph = helper.make_graph(
        nodes, "hostile", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [2, 8])],
        [constant("k200", 200.0), constant("k400", 400.0), constant("k001", 0.001),
         constant("one", 1.0)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True)
    onnx.save(model, path)
    return path


@dataclass(frozen=True)
class Hostile:
    cwd: Path
    root: Path
    """The data root: its path is hostile too."""
    origin: str
    """The observation `gero localize` localized (its localization is stored)."""

    def gero(self, *args: str, check: int | None = None) -> str:
        """stdout and stderr of ``gero ARGS --data-dir ROOT``, checked for raw controls."""
        done = gero(*args, "--data-dir", str(self.root), cwd=self.cwd, check=check)
        for stream in (done.stdout, done.stderr):
            found = RAW.search(stream)
            assert found is None, f"raw {found.group()!r} in the output of gero {args[0]}"
        return done.stdout + done.stderr


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    cwd = tmp_path_factory.mktemp("hostile")
    model = _model(cwd / f"models{DIRECTORY}" / "m\x07<b>[i].onnx")
    root = cwd / f"root{DIRECTORY}"
    found = 1
    gero("run", "--model", str(model), "--input-range", "X=1,2", "--variants", "fp16",
         "--backends", "onnxruntime", "--repeats", "1", "--jobs", "1", "--run-id", "plain",
         "--data-dir", str(root), cwd=cwd, check=found)
    gero("export", "--where",
         "\"check\" = 'model:fp16:vs-fp32' AND backend = 'onnx-reference'",
         "-o", str(cwd / "rows.json"), "--data-dir", str(root), cwd=cwd)
    rows = json.loads((cwd / "rows.json").read_text())
    assert [r["result"] for r in rows] == ["contract_issue"]  # the float16 overflow
    assert rows[0]["output_name"] == f"Y{HOSTILE}"  # JSON keeps the raw value: it is data
    return Hostile(cwd, root, rows[0]["observation_id"])


def test_the_summary_shows_the_model_escaped(hostile: Hostile) -> None:
    out = hostile.gero("summary", check=1)
    assert f"models{DIRECTORY_SHOWN}/m\\x07<b>[i].onnx" in out
    assert "\nm\\x07<b>[i] " in out  # the model's operation row


def test_localize_shows_the_nodes_and_the_output_escaped(hostile: Hostile) -> None:
    out = hostile.gero("localize", hostile.origin, "-o", str(hostile.cwd / "repro"),
                       check=0)
    assert f"Y{SHOWN}: fp16:onnx-reference against fp32:onnx-reference" in out
    assert f"origin     {SHOWN}/Up (Mul)" in out


def test_the_findings_text_shows_the_names_escaped(hostile: Hostile) -> None:
    out = hostile.gero("findings", check=1)
    assert "fp16 file of m\\x07<b>[i] is off" in out


def test_the_findings_markdown_renders_the_names_as_text(hostile: Hostile) -> None:
    hostile.gero("localize", hostile.origin, check=0)  # its origin goes into the report
    html = _render(hostile.gero("findings", "--format", "md", check=1))
    assert html.tags <= {"h1", "h2", "p", "ul", "li", "code", "pre"}, html.tags
    assert f"the error enters at {SHOWN}/Up (Mul)" in html.text
    assert f"origin: {SHOWN}/Up (Mul; 1 node(s))" in html.text
    assert any("fp16 file of m\\x07<b>[i] is off" in h for h in html.headings)
    root = f"{hostile.cwd}/root{DIRECTORY_SHOWN}"
    assert f"gero replay '{root}/artifacts/" in html.text  # the command a person sees
    assert f" --data-dir '{root}' -o finding-" in html.text


def test_the_exported_report_keeps_each_name_in_its_cell(hostile: Hostile) -> None:
    report = hostile.cwd / "report.md"
    out = hostile.gero("export", "--format", "md", "-o", str(report), check=0)
    assert "report.md" in out
    text = report.read_text()
    assert RAW.search(text) is None
    html = _render(text)
    assert html.tags <= {"h1", "h2", "p", "table", "thead", "tbody", "tr", "th", "td",
                         "code"}, html.tags
    command = next(c for c in html.cells if c.startswith("gero run "))
    assert f"models{DIRECTORY_SHOWN}/m\\x07<b>[i].onnx" in command
    assert command.endswith(f"root{DIRECTORY_SHOWN}'")  # nothing split off
    assert "model/m\\x07<b>[i]/static" in html.cells


def test_a_diff_shows_the_output_escaped_in_text_and_in_its_cell(hostile: Hostile) -> None:
    runtimes = ("diff", "plain", "--backend", "onnxruntime", "--against", "onnx-reference")
    assert f"onnxruntime/all  Y{SHOWN}: " in hostile.gero(*runtimes, check=0)
    html = _render(hostile.gero(*runtimes, "--format", "md", check=0))
    assert html.tags <= {"h1", "h2", "p", "table", "thead", "tbody", "tr", "th", "td"}
    assert f"Y{SHOWN}" in html.cells


def test_the_html_report_shows_the_names_as_text(hostile: Hostile) -> None:
    page = hostile.cwd / "report.html"
    hostile.gero("report", "-o", str(page), check=0)
    text = page.read_text()
    assert RAW.search(text) is None
    html = _Page()
    html.feed(text)
    assert "script" not in html.tags
    assert "m\\x07<b>[i]" in html.text


def test_junit_carries_the_names_escaped(hostile: Hostile) -> None:
    xml = hostile.gero("findings", "--format", "junit", check=1)
    root = ET.fromstring(xml.split("\n", 1)[1])
    texts = " ".join(" ".join([*e.attrib.values(), e.text or ""]) for e in root.iter())
    assert "fp16 file of m\\x07<b>[i] is off" in texts


def test_an_error_naming_a_hostile_path_is_escaped(hostile: Hostile) -> None:
    out = hostile.gero("replay", str(hostile.root / "gone"), check=2)
    assert out.startswith("gero: error: ") and f"root{DIRECTORY_SHOWN}/gone" in out


class _Page(HTMLParser):
    """The tags of an HTML page, and its text as a browser shows it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.parts: list[str] = []
        self.cells: list[str] = []
        self.headings: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag in ("td", "th", "h2"):
            self._open.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th", "h2") and self._open:
            (self.cells if tag != "h2" else self.headings).append(self._open.pop().strip())

    def handle_data(self, data: str) -> None:
        self.parts.append(data)
        if self._open:
            self._open[-1] += data

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _render(markdown: str) -> _Page:
    """Markdown as a CommonMark renderer with GitHub's tables shows it, raw HTML allowed
    (as where a report is pasted)."""
    page = _Page()
    page.feed(MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))
    return page
