"""`gero parity` runs PyTorch, the exporter and ONNX Runtime in worker processes: a sample
whose worker crashes or hangs is an ``execution`` observation naming the stage, the run goes
on, and the ``gero`` process itself survives (run here as a real process)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "torch", reason="PyTorch is not installed; the parity tests need: pip install 'gero[torch]'")

import onnx
import pyarrow.parquet as pq
from onnx import TensorProto
from onnx import helper as h

import gero_runner
import gero_tui

HELPERS = Path(__file__).with_name("parity_modules.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(gero_tui.__file__).parents[1]), str(Path(gero_runner.__file__).parents[1]),
     os.environ.get("PYTHONPATH", "")])}
WAIT_S = 120.0

pytestmark = pytest.mark.slow


def gero_parity(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gero_cli", "parity", "--data-dir",
                           str(workdir / "data"), "--repeats", "1", *args], cwd=workdir,
                          text=True, capture_output=True, timeout=WAIT_S, env=ENV)


def stored_rows(workdir: Path) -> list[dict[str, Any]]:
    (path,) = (workdir / "data" / "runs").glob("*/observations.parquet")
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copy(HELPERS, tmp_path / "parity_modules.py")
    return tmp_path


def _never_ending_loop(path: Path) -> None:
    """An ONNX graph of the MLP's signature (x [batch, 8] -> output) whose Loop never ends."""
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Identity", ["x_in"], ["x_out"])], "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_in", TensorProto.FLOAT, ["batch", 8])],
        [h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_out", TensorProto.FLOAT, ["batch", 8])])
    graph = h.make_graph(
        [h.make_node("Loop", ["", "cond", "x"], ["output"], body=body)], "hang",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [h.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 8])],
        [h.make_tensor("cond", TensorProto.BOOL, [], [True])])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8),
              str(path))


@pytest.mark.slow
def test_onnx_runtime_that_never_ends_is_stopped_by_the_timeout(workdir: Path) -> None:
    _never_ending_loop(workdir / "hang.onnx")
    start = time.monotonic()
    done = gero_parity(workdir, "--module", "parity_modules:make_mlp", "--input", "x=2x8",
                       "--onnx", "hang.onnx", "--timeout", "2", "--max-pairs", "2")
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < WAIT_S
    assert "Traceback" not in done.stderr
    rows = stored_rows(workdir)
    assert [(r["seed"], r["result"]) for r in rows] == [
        (0, "execution"), (1, "execution")]
    for row in rows:
        assert row["backend"] == "onnxruntime" and row["optimization"] == "disable_all"
        assert row["reason"] == ("ONNX Runtime (disable_all): timed out after 2 s; worker "
                                 "killed")
    assert "ERROR" in done.stdout


@pytest.mark.slow
def test_a_module_that_crashes_is_an_execution_observation(workdir: Path) -> None:
    done = gero_parity(workdir, "--module", "parity_modules:make_crashing", "--input",
                       "x=2x8", "--max-pairs", "2")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Fatal Python error" not in done.stderr
    rows = stored_rows(workdir)
    assert [r["result"] for r in rows] == ["execution", "execution"]
    assert sorted(r["seed"] for r in rows) == [0, 1]
    for row in rows:
        assert row["backend"] == "pytorch" and row["reference"] == "pytorch"
        assert row["reason"] == ("PyTorch: worker process crashed with SIGSEGV while running "
                                 "this case")
        assert json.loads(row["details"])["stage"] == "pytorch"
    summary = subprocess.run([sys.executable, "-m", "gero_cli", "summary", "--data-dir",
                              str(workdir / "data"), "--format", "json"], cwd=workdir,
                             text=True, capture_output=True, timeout=WAIT_S, env=ENV)
    assert json.loads(summary.stdout)["run"]["counts"]["execution"] == 2


@pytest.mark.slow
def test_a_factory_that_never_returns_is_bounded(workdir: Path) -> None:
    done = gero_parity(workdir, "--module", "parity_modules:make_hanging_factory", "--input",
                       "x=2x8", "--timeout", "2")
    assert done.returncode == 1, done.stderr
    (row,) = stored_rows(workdir)
    assert row["result"] == "execution"
    assert row["reason"] == "PyTorch: timed out after 2 s; worker killed"
