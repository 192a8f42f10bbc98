"""Run order and the files gero writes for a person, under real ``gero`` processes (issue 45).

Runs are ordered by the start time their records say, not by id (``ci-100`` after
``ci-99``): the default run, the previous-run baseline, the run picker and ``gc
--keep-runs``. No ``-o`` lands inside the data root. Every file written for a person is
whole or not there (a full disk leaves the old file). ``localize`` and ``blame`` on a bad
``-o``, a read-only root or a full disk: one sentence, nothing left behind.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_fault_injection import ENV, WAIT_S, gero

from gero_runner.storage.runs import list_runs

pytestmark = pytest.mark.slow

EXP = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
       "--no-contracts", "--limit", "1"]
"""A run of one case (about a second)."""


def _sentence(done: subprocess.CompletedProcess[str]) -> str:
    """The one line of stderr (warnings aside), with no traceback."""
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("gero: warning:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file of a data root but its lock and the findings cache (the store's own)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock" and "cache" not in p.relative_to(root).parts}


def _entries(root: Path) -> set[str]:
    """Every path in a data root (directories and empty files too) but its lock and cache."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.name != ".lock" and "cache" not in p.relative_to(root).parts}


# Run order ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ci-99`` then ``ci-100``: in string order ci-100 comes first."""
    root = tmp_path_factory.mktemp("ci") / "data"
    for run_id in ("ci-99", "ci-100"):
        gero("run", "--data-dir", str(root), *EXP, "--run-id", run_id, cwd=root.parent)
    return root


def _newest(root: Path, cwd: Path) -> tuple[str, str]:
    """(the run `gero summary` opens by default, the baseline `gero findings` takes)."""
    done = gero("summary", "--data-dir", str(root), "--format", "json", cwd=cwd, check=None)
    assert done.returncode in (0, 1), done.stderr
    findings = gero("findings", "--data-dir", str(root), "--format", "json", cwd=cwd,
                    check=None)
    assert findings.returncode in (0, 1), findings.stderr
    report = json.loads(findings.stdout)
    assert report["run_id"] == json.loads(done.stdout)["run"]["run_id"]
    return report["run_id"], report["baseline_run_id"]


def test_runs_are_ordered_by_their_start_not_by_their_id(tmp_path: Path,
                                                         ci_runs: Path) -> None:
    root = tmp_path / "data"
    shutil.copytree(ci_runs, root)
    assert _newest(root, tmp_path) == ("ci-100", "ci-99")
    assert [r.run_id for r in list_runs(root)] == ["ci-100", "ci-99"]  # the run picker
    done = gero("gc", "--data-dir", str(root), "--keep-runs", "1", "--apply", cwd=tmp_path)
    assert "runs/ci-99" in done.stdout and "runs/ci-100" not in done.stdout
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["ci-100"]
    assert _newest(root, tmp_path)[0] == "ci-100"


def test_runs_without_a_recorded_start_are_ordered_by_their_files(
        tmp_path: Path, ci_runs: Path) -> None:
    """A record without ``started_at`` (a gero before it, a hand-made run): its id's
    date when it has one, else the oldest modification time of its run's files."""
    root = tmp_path / "data"
    shutil.copytree(ci_runs, root)
    when = 1_700_000_000.0
    for offset, run_id in ((0.0, "ci-99"), (60.0, "ci-100")):
        record_file = root / "runs" / run_id / "run.json"
        record = json.loads(record_file.read_text())
        del record["started_at"]
        record_file.write_text(json.dumps(record))
        for path in (root / "runs" / run_id).iterdir():
            os.utime(path, (when + offset, when + offset))
    assert _newest(root, tmp_path)[0] == "ci-100"
    gero("gc", "--data-dir", str(root), "--keep-runs", "1", "--apply", cwd=tmp_path)
    assert sorted(p.name for p in (root / "runs").iterdir()) == ["ci-100"]


# A model run to localize, blame, bundle and report ---------------------------------------

def _variance_model(path: Path) -> Path:
    """A one-pass variance (E[x²] − E[x]²) that loses its digits for inputs near 30,000
    (tests/runner/evidence/localize_models.one_pass_variance): findings, and an origin
    (the Sub) that `gero localize` names."""
    def node(op: str, inputs: list[str], output: str) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [output], name=output)

    nodes = [node("ReduceMean", ["X", "axes"], "m"), node("Mul", ["X", "X"], "x2"),
             node("ReduceMean", ["x2", "axes"], "ex2"), node("Mul", ["m", "m"], "m2"),
             node("Sub", ["ex2", "m2"], "var"), node("Abs", ["var"], "avar"),
             node("Add", ["avar", "eps"], "ve"), node("Sqrt", ["ve"], "sd"),
             node("Reciprocal", ["sd"], "inv"), node("Sub", ["X", "m"], "centred"),
             node("Mul", ["centred", "inv"], "Y")]
    graph = helper.make_graph(
        nodes, "variance", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 64])],
        [numpy_helper.from_array(np.array([-1], np.int64), "axes"),
         numpy_helper.from_array(np.array(1e-5, np.float32), "eps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@dataclass(frozen=True)
class ModelRun:
    root: Path
    diverged: str
    """An ONNX Runtime observation that diverges: localize and blame take it."""


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> ModelRun:
    cwd = tmp_path_factory.mktemp("model")
    root = cwd / "data"
    model = _variance_model(cwd / "variance.onnx")
    for run_id in ("first", "second"):
        gero("run", "--model", str(model), "--input-range", "X=29990,30010", "--backends",
             "onnxruntime", "--repeats", "1", "--jobs", "1", "--run-id", run_id,
             "--data-dir", str(root), cwd=cwd, check=1)
    gero("export", "--data-dir", str(root), "-o", str(cwd / "rows.json"), cwd=cwd)
    rows = json.loads((cwd / "rows.json").read_text())
    diverged = next(r["observation_id"] for r in rows
                    if (r["check"], r["backend"], r["optimization"], r["result"])
                    == ("expected", "onnxruntime", "all", "divergence"))
    return ModelRun(root, diverged)


@pytest.fixture
def copied(tmp_path: Path, model_run: ModelRun) -> Path:
    root = tmp_path / "data"
    shutil.copytree(model_run.root, root)
    return root


# -o inside the data root ----------------------------------------------------------------

def test_no_output_lands_inside_the_data_root(tmp_path: Path, copied: Path,
                                              model_run: ModelRun) -> None:
    root, oid = copied, model_run.diverged[:16]
    observations = root / "runs" / "second" / "observations.parquet"
    link = tmp_path / "link.parquet"
    link.symlink_to(observations)  # a link into the root is inside it too
    before = _tree(root)
    commands = [
        ["report", "-o", str(observations)],
        ["report", "-o", str(link)],
        ["export", "-o", str(observations)],
        ["findings", "-o", str(observations)],
        ["diff", "first", "second", "-o", str(observations)],
        ["bundle", oid, "-o", str(root / "runs" / "second" / "b.tar.gz")],
        ["localize", oid, "-o", str(root / "runs" / "x")],
        ["localize", oid, "-o", str(root)],
    ]
    for command in commands:
        done = gero(*command, "--data-dir", str(root), cwd=tmp_path, check=2)
        assert "is inside the data root" in _sentence(done), command
    assert _tree(root) == before
    assert not (root / "runs" / "x").exists()
    assert [r.run_id for r in list_runs(root)] == ["second", "first"]


# A full disk under an existing output ----------------------------------------------------

FILE_LIMIT = 512
"""Bytes a file may grow to in the process below: every output here is larger."""


def _no_room(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``gero ARGS`` in a process whose files cannot grow past FILE_LIMIT bytes (the
    kernel's RLIMIT_FSIZE: a write past it fails with EFBIG, as on a full disk)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))

    return subprocess.run([sys.executable, "-m", "gero_cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=WAIT_S, env=ENV, preexec_fn=limit)


@pytest.mark.parametrize("command", [
    ["report", "--run", "second"],
    ["findings", "--run", "second", "--format", "md"],
    ["diff", "first", "second", "--format", "junit"],
    ["export", "--run", "second"],
    ["bundle"],
], ids=lambda c: c[0])
def test_a_full_disk_leaves_the_old_output_whole(tmp_path: Path, copied: Path,
                                                 model_run: ModelRun,
                                                 command: list[str]) -> None:
    suffix = {"report": ".html", "findings": ".md", "diff": ".xml", "export": ".csv",
              "bundle": ".tar.gz"}[command[0]]
    old = tmp_path / f"old{suffix}"
    content = b"the output of an earlier command\n" * 200  # past FILE_LIMIT: it was whole
    old.write_bytes(content)
    args = [*command, model_run.diverged[:16]] if command[0] == "bundle" else command
    done = _no_room(*args, "-o", str(old), "--data-dir", str(copied), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = _sentence(done)
    assert str(old) in line and ("too large" in line or "disk is full" in line), line
    assert old.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", old.name]  # no temp left
    # With room, the same command replaces it.
    gero(*args, "-o", str(old), "--data-dir", str(copied), cwd=tmp_path, check=None)
    assert old.read_bytes() != content and old.stat().st_size > FILE_LIMIT


# localize and blame under faults ---------------------------------------------------------

def test_localize_refuses_an_output_that_is_no_directory(tmp_path: Path, copied: Path,
                                                         model_run: ModelRun) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    for output, said in ((a_file, "is not a directory"), (Path(os.devnull), "is not a directory"),
                         (dangling, "is a symbolic link"), (a_file / "sub", "is not a directory")):
        done = gero("localize", model_run.diverged[:16], "-o", str(output), "--data-dir",
                    str(copied), cwd=tmp_path, check=2)
        assert said in _sentence(done), output
    assert a_file.read_text() == "kept\n" and dangling.is_symlink()
    assert not (tmp_path / "nowhere").exists()
    assert Path(os.devnull).is_char_device()
    assert not list(tmp_path.glob(".gero-*"))


def _linux_root(what: str) -> None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip(f"needs root on Linux for {what}")


@pytest.fixture
def read_only(tmp_path: Path, model_run: ModelRun) -> Iterator[Path]:
    """The model run seen through a read-only bind mount (root ignores a directory's mode)."""
    _linux_root("a read-only bind mount")
    source, view = tmp_path / "source", tmp_path / "data"
    shutil.copytree(model_run.root, source)
    view.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


def test_localize_and_blame_on_a_read_only_root_say_so(tmp_path: Path, read_only: Path,
                                                       model_run: ModelRun) -> None:
    before = _tree(read_only)
    for command in ("localize", "blame"):
        done = gero(command, model_run.diverged[:16], "--data-dir", str(read_only),
                    cwd=tmp_path, check=2)
        assert "cannot write in the data root" in _sentence(done), command
    assert _tree(read_only) == before


@pytest.fixture
def full_disk(tmp_path: Path, model_run: ModelRun) -> Iterator[Path]:
    """The model run on a small file system with no byte left (a tmpfs, filled up)."""
    _linux_root("a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    used = sum(p.stat().st_size for p in model_run.root.rglob("*") if p.is_file())
    files = sum(1 for _ in model_run.root.rglob("*"))
    size_kib = used // 1024 + files * 4 + 256
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(small)],
                   check=True)
    try:
        root = small / "data"
        shutil.copytree(model_run.root, root)
        try:
            with open(small / "filler", "wb", buffering=0) as f:
                while True:
                    f.write(b"\0" * 4096)
        except OSError:
            pass
        yield root
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


def test_localize_and_blame_on_a_full_disk_say_so_and_leave_nothing(
        tmp_path: Path, full_disk: Path, model_run: ModelRun) -> None:
    before, entries = _tree(full_disk), _entries(full_disk)
    for command in ("localize", "blame"):
        done = gero(command, model_run.diverged[:16], "--data-dir", str(full_disk),
                    cwd=tmp_path, check=2)
        assert "the disk is full" in _sentence(done), command
        assert "During handling" not in done.stderr
    assert _entries(full_disk) == entries  # no 0-byte localize/ID.npz, blame/ID.json
    assert _tree(full_disk) == before
