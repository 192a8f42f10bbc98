"""Commands that explain a run, under faults, in real ``gero`` processes (issue 45).

A localization stored beside the evidence (``localize/ID.json``, outside the manifest,
editable by anyone who can write the data root) whose fields have the wrong types is read as
far as it is valid, never as a traceback. ``gero localize`` of a divergence inside an If
branch names the If; a child that crashes or is killed is named so (exit status 1, not a
usage error); no temporary file outlives a localization, however it ends (what a kill -9 of
``gero localize`` leaves, the next one removes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows, process_gone
from test_fault_injection import ENV, WAIT_S, wait_for

GATED = Path(__file__).with_name("gated_localize.py")
FOUND = 1
"""``gero findings`` on a run with findings; ``gero localize`` whose child did not finish."""

pytestmark = pytest.mark.slow


def if_model(path: Path) -> Path:
    """A LayerNorm-like variance E[x²] − E[x]² inside an If's then_branch (the condition a
    constant true): for x near 30,000 both terms are near 9e8, where float32 keeps 3 digits
    of their difference, so every float32 path diverges from the float64 shadow, from the
    Sub inside the branch. The Mul after the If only carries it."""
    def f(name: str, value: float) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    out = [4, 1]
    then = helper.make_graph([
        helper.make_node("ReduceMean", ["X", "axes"], ["m"], name="Branch/Mean"),
        helper.make_node("Mul", ["X", "X"], ["x2"], name="Branch/Square"),
        helper.make_node("ReduceMean", ["x2", "axes"], ["ex2"], name="Branch/MeanSquare"),
        helper.make_node("Mul", ["m", "m"], ["m2"], name="Branch/SquareMean"),
        helper.make_node("Sub", ["ex2", "m2"], ["var"], name="Branch/Sub"),
        helper.make_node("Abs", ["var"], ["avar"], name="Branch/Abs"),
        helper.make_node("Add", ["avar", "eps"], ["ve"], name="Branch/AddEps"),
        helper.make_node("Sqrt", ["ve"], ["sd"], name="Branch/Sqrt"),
    ], "then", [], [helper.make_tensor_value_info("sd", TensorProto.FLOAT, out)])
    other = helper.make_graph(
        [helper.make_node("ReduceMean", ["X", "axes"], ["mean"], name="Else/Mean")], "else",
        [], [helper.make_tensor_value_info("mean", TensorProto.FLOAT, out)])
    nodes = [
        helper.make_node("Constant", [], ["cond"], name="Cond",
                         value=numpy_helper.from_array(np.array(True), "cond")),
        helper.make_node("If", ["cond"], ["s"], name="Branch", then_branch=then,
                         else_branch=other),
        helper.make_node("Mul", ["s", "one"], ["Y"], name="After"),
    ]
    graph = helper.make_graph(
        nodes, "if_variance", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, out)],
        [numpy_helper.from_array(np.array([-1], np.int64), "axes"), f("eps", 1e-5),
         f("one", 1.0)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def gero(*args: str, cwd: Path, tmp: Path, check: int | None = 0
         ) -> subprocess.CompletedProcess[str]:
    """``gero ARGS`` with $TMPDIR at ``tmp``, so that what it leaves there can be counted."""
    done = subprocess.run([sys.executable, "-m", "gero_cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=WAIT_S, env={**ENV, "TMPDIR": str(tmp)})
    if check is not None:
        assert done.returncode == check, done.stderr
    return done


def gero_files(folder: Path) -> list[str]:
    """What gero left in ``folder`` (anything named gero, hidden or not)."""
    return sorted(p.name for p in folder.iterdir() if p.name.lstrip(".").startswith("gero"))


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = stderr.strip().splitlines()
    return line


Run = tuple[Path, list[dict[str, Any]]]
"""A folder holding a data root (``data``) of one run, and the run's rows."""


@pytest.fixture(scope="module")
def if_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    cwd = tmp_path_factory.mktemp("if-branch")
    tmp = cwd / "tmp"
    tmp.mkdir()
    model = if_model(cwd / "m.onnx")
    gero("run", "--data-dir", "data", "--model", str(model), "--input-range",
         "X=29990,30010", "--repeats", "1", "--backends", "onnxruntime", "-q", cwd=cwd,
         tmp=tmp, check=FOUND)
    rows = obs_rows(cwd / "data")
    return cwd, rows


@pytest.fixture
def copied(if_run: Run, tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A copy of the run for one test (its localizations its own), and an empty $TMPDIR."""
    cwd, rows = if_run
    shutil.copytree(cwd / "data", tmp_path / "data")
    (tmp_path / "tmp").mkdir()
    return tmp_path, tmp_path / "tmp", rows


def shadow_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """ONNX Runtime (no rewrites) against the float64 shadow: diverges inside the branch."""
    (row,) = [r for r in rows if r["check"] == "expected" and r["backend"] == "onnxruntime"
              and r["optimization"] == "disable_all"]
    assert row["result"] == "divergence" and row["reference"] == "float64-shadow"
    return row


# ------------------------------------------------------------------ item 8: tampered files
GOOD_ORIGIN = {"node": "Branch", "op_type": "If", "nodes": ["If 'Branch'"],
               "inputs_scaled_error": 0.0, "local_scaled_error": 0.74, "share": 1.0}
TAMPERED: dict[str, Any] = {
    # each was a traceback from `gero findings --format md` (every wrong type of every field:
    # tests/query/test_stored_localization.py)
    "origins a string": {"origins": "Branch"},  # AttributeError
    "a figure a string": {"origins": [{**GOOD_ORIGIN, "inputs_scaled_error": "0",
                                       "local_scaled_error": [0.74]}]},  # ValueError
    "nodes a number, texts of other types": {  # TypeError: len()
        "origins": [{**GOOD_ORIGIN, "nodes": 3, "op_type": {"a": 1}}],
        "repro": ["/tmp/r"], "summary": 3, "actual": None, "reference": 7,
        "observation_id": [1]},
}


def representative_file(cwd: Path, tmp: Path) -> Path:
    found = json.loads(gero("findings", "--data-dir", "data", "--format", "json", cwd=cwd,
                            tmp=tmp, check=FOUND).stdout)
    rep = found["findings"][0]["representative"]
    folder = cwd / "data" / str(rep["artifact_path"]) / "localize"
    folder.mkdir()
    return folder / f"{rep['observation_id']}.json"


def test_findings_md_reads_tampered_localizations_as_far_as_they_are_valid(
        copied: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    cwd, tmp, _ = copied
    stored = representative_file(cwd, tmp)
    shown: dict[str, str] = {}
    for case, data in TAMPERED.items():
        stored.write_text(json.dumps(data))
        done = gero("findings", "--data-dir", "data", "--format", "md", cwd=cwd, tmp=tmp,
                    check=None)
        assert "Traceback" not in done.stderr, (case, done.stderr)
        assert done.returncode == FOUND, (case, done.stderr)
        assert done.stdout.startswith("# Findings of run "), (case, done.stdout)
        shown[case] = done.stdout
    # No origin to show: as if not localized.
    assert "Localized (" not in shown["origins a string"]
    # What is valid is still shown; a field of the wrong type is as if absent.
    assert ("- origin: `Branch` (If; 1 node(s)): inputs agree to — scaled, alone it differs "
            "by —, 100% of the final error") in shown["a figure a string"]
    text = shown["nodes a number, texts of other types"]
    # the file's name says which observation it localized
    assert (f"Localized (`gero localize {stored.stem[:16]}`,  against ): \n\n"
            "- origin: `Branch` (; 0 node(s)): inputs agree to 0 scaled, alone it differs by "
            "0.74, 100% of the final error\n\n```sh") in text, text
    # The report reads the same file.
    gero("report", "--data-dir", "data", "-o", "r.html", cwd=cwd, tmp=tmp, check=0)
    page = (cwd / "r.html").read_text()
    assert "Branch: inputs agree to 0 scaled, alone it adds 0.74" in page


# --------------------------------------------------- item 11: a divergence inside an If
def test_localize_names_the_if_whose_branch_diverges(
        copied: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    """It was 'the evaluator computed no value for avar, ex2, …' (the branch's own tensors
    asked of the main graph), exit 2, as a usage error."""
    cwd, tmp, rows = copied
    oid = str(shadow_row(rows)["observation_id"])
    done = gero("localize", oid[:12], "--data-dir", "data", "--format", "json", "-o", "repro",
                cwd=cwd, tmp=tmp, check=0)
    assert "Traceback" not in done.stderr
    loc = json.loads(done.stdout)
    assert [(o["node"], o["op_type"]) for o in loc["origins"]] == [("Branch", "If")]
    assert loc["origins"][0]["inputs_scaled_error"] == 0
    assert loc["summary"].startswith("the error enters at the If node 'Branch', inside its "
                                     "branch (tensors inside a subgraph are not traced")
    assert any("inside its then_branch" in note for note in loc["notes"]), loc["notes"]
    assert [a["node"] for a in loc["amplifiers"]] == ["After"]
    # The repro is the If alone, its branches with it.
    graph = onnx.load(str(cwd / "repro" / "model.onnx")).graph
    assert [n.op_type for n in graph.node] == ["If"]
    assert gero_files(tmp) == [] and gero_files(cwd) == []


# ------------------------------------- items 11, 17: a child that crashes or is killed
def start_gated(cwd: Path, tmp: Path, stop: str, *args: str) -> tuple[subprocess.Popen[str],
                                                                       int]:
    """``gero localize ARGS`` stopped at ``stop`` (gated_localize.py); the process and the
    pid of the stopped one."""
    ready = cwd / "ready"
    env = {**ENV, "TMPDIR": str(tmp), "GERO_TEST_STOP": stop, "GERO_TEST_READY": str(ready),
           "GERO_TEST_GATE": str(cwd / "gate")}
    process = subprocess.Popen([sys.executable, str(GATED), "localize", *args,
                                "--data-dir", "data"], cwd=cwd, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: ready.is_file() and ready.read_text() != "", f"{stop} stopped")
    return process, int(ready.read_text())


@pytest.mark.parametrize(("sent", "said"), [(signal.SIGKILL, "was killed (SIGKILL"),
                                            (signal.SIGABRT, "crashed with SIGABRT")])
def test_a_child_killed_or_crashed_is_named_so_and_leaves_nothing(
        copied: tuple[Path, Path, list[dict[str, Any]]], sent: int, said: str) -> None:
    """It was 'crashed with SIGKILL' as a usage error (exit 2), its work folder and tract's
    copy of a graph left in $TMPDIR."""
    cwd, tmp, rows = copied
    oid = str(shadow_row(rows)["observation_id"])
    process, child = start_gated(cwd, tmp, "child", oid[:12])
    assert child != process.pid
    assert any(name.startswith("gero-localize-") for name in gero_files(tmp))
    os.kill(child, sent)
    _, stderr = process.communicate(timeout=WAIT_S)
    line = one_line(stderr)
    assert process.returncode == FOUND, line
    assert line.startswith(f"gero: error: localizing {oid[:12]}: the child process that runs "
                           f"the paths again {said}"), line
    assert line.endswith("nothing was stored")
    assert gero_files(tmp) == []
    assert not list((cwd / "data").glob("artifacts/*/*/localize"))


def test_what_a_killed_localize_leaves_the_next_one_removes(
        copied: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    """kill -9 of ``gero localize`` itself: no finally runs, and its child dies with it. Its
    scratch folders are named after it, so the next ``gero localize`` removes them: in
    $TMPDIR, and the staging folder beside ``-o``."""
    cwd, tmp, rows = copied
    oid = str(shadow_row(rows)["observation_id"])
    out = cwd / "out"
    out.mkdir()
    left: list[list[str]] = []
    for stop in ("child", "staging"):
        # the second one's start removes what the first one left
        process, stopped = start_gated(cwd, tmp, stop, oid[:12], "-o", str(out / stop))
        process.kill()
        process.communicate(timeout=WAIT_S)
        wait_for(lambda: process_gone(stopped), "the stopped process to end")  # noqa: B023
        (cwd / "ready").unlink()
        left.append([*gero_files(tmp), *gero_files(out)])
        assert left[-1] and all(f"-{process.pid}-" in n for n in left[-1]), left
    assert [n.split("-")[:2] for n in left[0]] == [["gero", "localize"]]
    assert sorted(n.split("-")[:2] for n in left[1]) == [[".gero", "repro"], ["gero", "repro"]]
    gero("localize", oid[:12], "--data-dir", "data", "-o", str(out / "repro"), cwd=cwd,
         tmp=tmp, check=0)
    assert gero_files(tmp) == []
    assert gero_files(out) == [] and (out / "repro" / "model.onnx").is_file()
