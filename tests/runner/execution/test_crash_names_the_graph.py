"""A runtime that aborts the worker on a contract graph (tract 0.22.4 panics across its C
API and aborts on magika's batch-1 partition graph: SIGABRT, exit 134) has a row naming the
crash, its signal, the path and the graph with its inputs, in a real ``gero run`` (issue 40).

``aborting`` (registered from a temporary module, $GERO_RUNTIME_MODULES) is the onnx
ReferenceEvaluator that calls ``os.abort()`` on an input whose batch is 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper

from gero_runner.storage.reader import open_run

ABORTING = '''
import os

from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("aborting", "aborting", "the aborting runtime", "abort", levels=("top",)),
         __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Aborting(Backend):
    name = "aborting"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        return ReferenceEvaluator(model)

    def run(self, session, inputs):
        if any(v.shape[:1] == (1,) for v in inputs.values()):
            os.abort()  # what a Rust panic across a C API does
        return [as_array(o) for o in session.run(None, dict(inputs))]


RUNTIME = Aborting()
'''


@pytest.mark.slow
def test_a_worker_aborted_on_a_contract_graph_names_the_graph(tmp_path: Path) -> None:
    env = runtime_modules_env(tmp_path, {"aborting_runtime": ABORTING})
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    # a symbolic batch, as magika's: the batch contracts run on it
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "dense",
                              [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((2, 8)).astype(np.float32))
    root = tmp_path / "root"
    done = gero("run", "--model", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
                "--backends", "aborting", "--repeats", "1", "--jobs", "1", "--no-reuse",
                "--data-dir", str(root), "--run-id", "r1", "-q", env=env)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr + done.stdout
    with open_run(root, "r1") as run:
        reasons = [r for (r,) in run.connection.execute(
            "SELECT reason FROM obs WHERE backend = 'aborting' AND result = 'execution'"
        ).fetchall()]
    crashed = [r for r in reasons if "SIGABRT" in r]
    assert len(crashed) == 1, reasons
    assert ("worker process crashed with SIGABRT while running aborting top on the contract "
            "graphs, on contract:partition's graph (the model with a symbolic batch), inputs "
            "x float32[1, 8]") in crashed[0], crashed[0]
