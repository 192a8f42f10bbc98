"""A path is judged against a yardstick of its own kind (issue 40, item 3), in real ``gero
run`` processes: a variant file against the same runtime's fp32 output, never another
engine's; without a float64 shadow two engines that disagree on the model blame neither.

``gap`` is a runtime from outside gero's tree: ONNX Runtime whose every output comes out
reversed along its last axis, an engine gap (as OpenVINO sat 0.0286 from ONNX Runtime on the
speaker embedder) on the model and on its variant files alike.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows

pytestmark = pytest.mark.slow

GAP = '''
"""ONNX Runtime with its outputs reversed along their last axis: an engine gap (a test's
runtime)."""
from __future__ import annotations

import numpy as np

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("gap", "gap", "the gap runtime", "gap"), __name__)

from gero_runner.backends import ort  # noqa: E402
from gero_runner.backends.base import Backend  # noqa: E402


class Gap(Backend):
    name = "gap"
    distribution = "onnxruntime"
    module = "onnxruntime"

    def paths(self, threads):
        return [self.spec("plain", threads, ort.session_settings("all", threads))]

    def build(self, model, settings):
        return ort.make_session(model, settings)

    def run(self, session, inputs):
        return [np.ascontiguousarray(o[..., ::-1]) for o in ort.run(session, inputs)]


RUNTIME = Gap()
'''


def _gero(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return gero(*args, env=env)


def _env(tmp: Path) -> dict[str, str]:
    return runtime_modules_env(tmp, {"gap_runtime": GAP})


def _dense(tmp: Path) -> Path:
    """X[4, 16] → MatMul → Sigmoid → Mul: float ops every engine runs."""
    w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32) * 0.3
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["h"]),
         helper.make_node("Sigmoid", ["h"], ["s"]),
         helper.make_node("Mul", ["s", "h"], ["Y"])], "dense",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 8])],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    path = tmp / "dense.onnx"
    onnx.save(model, str(path))
    return path


def test_a_variant_file_is_judged_against_its_own_runtimes_fp32_output(
        tmp_path: Path) -> None:
    """The gap runtime's fp16 file is far off ONNX Runtime's fp32 output (the engine gap,
    over the 4e-3 gate) but as close to its own fp32 output as ONNX Runtime's file is to
    ONNX Runtime's: its vs-fp32 row passes, judged against 'fp32:gap:plain'."""
    env = _env(tmp_path)
    root = tmp_path / "data"
    done = _gero(env, "run", "--model", str(_dense(tmp_path)), "--variants", "fp16",
                 "--backends", "onnxruntime,gap", "--jobs", "1", "--data-dir", str(root), "-q")
    assert done.returncode in (0, 1), done.stderr
    rows = obs_rows(root)
    (gap,) = [r for r in rows if r["check"] == "model:fp16:vs-fp32" and r["backend"] == "gap"]
    assert gap["reference"] == "fp32:gap:plain", gap["reference"]
    assert gap["result"] == "passed", gap["reason"]
    assert gap["scaled_error"] < 4e-3  # ~1e-3: the file's own float16 error, no engine gap
    ort_rows = [r for r in rows if r["check"] == "model:fp16:vs-fp32"
                and r["backend"] == "onnxruntime"]
    assert {r["reference"] for r in ort_rows} == {f"fp32:onnxruntime:{r['optimization']}"
                                                   for r in ort_rows}
    # On the model the gap runtime is off the float64 shadow: the shadow names it.
    (fp32,) = [r for r in rows if r["check"] == "model:fp32" and r["backend"] == "gap"]
    assert (fp32["result"], fp32["arbiter"]) == ("divergence", "reference"), fp32["reason"]


def _contrib(tmp: Path) -> Path:
    """X → MatMul → com.microsoft FastGelu: ONNX Runtime runs it, the ReferenceEvaluator
    cannot, so no float64 shadow exists (of the model nor of its int8 file)."""
    w = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32) * 0.3
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["h"]),
         helper.make_node("FastGelu", ["h"], ["Y"], domain="com.microsoft")], "contrib",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 16])],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    path = tmp / "contrib.onnx"
    onnx.save(model, str(path))
    return path


def test_without_a_shadow_two_engines_that_disagree_blame_neither(tmp_path: Path) -> None:
    """No float64 shadow: the gap runtime's model:fp32 row against ONNX Runtime is a
    disagreement nothing arbitrates (arbiter '-', its sentence says neither is blamed), as is
    its row on the int8-dynamic file (no exact computation of the file either), and the
    findings name the pair, not the gap runtime."""
    env = _env(tmp_path)
    root = tmp_path / "data"
    done = _gero(env, "run", "--model", str(_contrib(tmp_path)), "--backends",
                 "onnxruntime,gap", "--variants", "int8-dynamic", "--jobs", "1",
                 "--data-dir", str(root), "-q")
    assert done.returncode == 1, done.stderr
    rows = obs_rows(root)
    (row,) = [r for r in rows if r["check"] == "model:fp32" and r["backend"] == "gap"]
    assert row["result"] == "divergence" and row["arbiter"] == "-"
    assert row["reference"] == "onnxruntime:all"
    assert "two engines disagree and nothing arbitrates" in row["reason"]
    assert "neither gap:plain nor onnxruntime:all is blamed" in row["reason"]
    (int8,) = [r for r in rows if r["check"] == "model:int8-dynamic:cosine"
               and r["backend"] == "gap"]
    assert int8["result"] == "divergence" and int8["arbiter"] == "-", int8["reason"]
    assert "nothing arbitrates" in int8["reason"] and "neither is blamed" in int8["reason"]
    found = _gero(env, "findings", "--data-dir", str(root), "--format", "json")
    assert found.returncode in (0, 1), found.stderr
    outliers = [f["outlier"] for f in json.loads(found.stdout)["findings"]]
    assert "gap" not in outliers and "gap vs onnxruntime" in outliers, outliers


def test_a_runtime_computing_the_fp16_file_in_float32_is_a_note(tmp_path: Path) -> None:
    """ONNX Runtime widens the fp16 file's MatMul, Sigmoid and Mul to float32: a note on a
    passed row of the level whose graph it counts (disable_all), not an execution row; with
    every gate passed, `gero run` exits 0 (issue 40, item 9)."""
    root = tmp_path / "data"
    done = _gero(dict(os.environ), "run", "--model", str(_dense(tmp_path)), "--variants",
                 "fp16", "--backends", "onnxruntime", "--jobs", "1", "--data-dir", str(root),
                 "-q")
    rows = obs_rows(root)
    assert done.returncode == 0, [(r["check"], r["backend"], r["reason"]) for r in rows
                                  if r["result"] != "passed"]
    (note,) = [r for r in rows if r["check"] == "model:fp16:precision"]
    assert (note["result"], note["backend"], note["optimization"]) == (
        "passed", "onnxruntime", "disable_all")
    assert note["note"].startswith("ONNX Runtime computes the fp16 file in float32 at ")
    assert note["failure_kind"] == "" and note["cause_key"] == ""
