"""`gero localize`, as a real process, where no node differs on its own but a QuantizeLinear
moves values to another int8 step from inputs within the roundings (smart_turn's float16
file on ONNX Runtime, issue 40 defect 12: "the error builds up from many small ones"). A
runtime from outside gero's tree (``nudge``: the onnx ReferenceEvaluator, whose ``nudged``
level multiplies by 1 + 2^-22 where the graph multiplies by 1) makes the last-bit
difference; the QuantizeLinear after it is named the origin, its cause the step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows

NUDGE = '''
"""The onnx ReferenceEvaluator with a level that nudges a Mul by one (a test's)."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("nudge", "nudge", "the nudging runtime", "nudge", levels=("exact", "nudged")),
         __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


def rewritten(model: bytes, settings: dict) -> onnx.ModelProto:
    proto = onnx.load_from_string(model)
    if settings["level"] == "nudged":
        for i, t in enumerate(proto.graph.initializer):
            if t.name == "one":
                value = np.array(1 + 2.0 ** -22, np.float32)
                proto.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, "one"))
    return proto


class Nudge(Backend):
    name = "nudge"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        return ReferenceEvaluator(rewritten(model, settings))

    def run(self, session, inputs):
        return [as_array(o) for o in session.run(None, dict(inputs))]


RUNTIME = Nudge()
'''


def _model(path: Path) -> Path:
    nodes = [helper.make_node("Mul", ["X", "one"], ["h"], name="Scale"),
             helper.make_node("QuantizeLinear", ["h", "s", "zp"], ["q"], name="Quantize"),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["Y"], name="Dequantize")]
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.01, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "zp")]
    graph = helper.make_graph(nodes, "step", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, [1, 200])], [helper.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [1, 200])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


@pytest.mark.slow
def test_a_quantizer_moved_a_step_by_a_last_bit_difference_is_the_origin(tmp_path: Path
                                                                         ) -> None:
    env = runtime_modules_env(tmp_path, {"nudge_runtime": NUDGE})
    model = _model(tmp_path / "step.onnx")
    # Half-way between two int8 steps: a last-bit nudge moves some to the next one.
    x = ((np.arange(-100, 100) + 0.5) * 0.01).astype(np.float32).reshape(1, 200)
    np.savez(tmp_path / "inputs.npz", X=x)
    root = tmp_path / "data"
    done = gero("run", "--model", str(model), "--inputs", str(tmp_path / "inputs.npz"),
                "--backends", "nudge", "--data-dir", str(root), "-q", env=env)
    assert done.returncode == 1, done.stderr
    rows = [r for r in obs_rows(root) if r["backend"] == "nudge"
            and r["optimization"] == "nudged" and r["result"] != "passed"]
    assert rows, "the nudged level should fail a row"
    done = gero("localize", str(rows[0]["observation_id"])[:16], "--data-dir", str(root),
                "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # Before: no origin, "the error builds up from many small ones".
    assert "builds up" not in found["summary"], found["summary"]
    (origin,) = found["origins"]
    assert origin["node"] == "Quantize" and origin["op_type"] == "QuantizeLinear"
    assert origin["cause"].startswith("a rounding step: its input differs by ")
    assert "to another integer step (at most 1 step(s))" in origin["cause"]
    assert "the error enters at Quantize (QuantizeLinear)" in found["summary"]


