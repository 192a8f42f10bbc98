"""A runtime's defect, found by asking it (``backends.runtime_defects``): a 1-node probe with
a known exact answer, run once per runtime, version and setting and kept in the data root;
where it fails and a file holds the probed pattern, the runtime's divergent rows there are
that defect's, one finding over every file (tract 0.22's per-axis DequantizeLinear was three
findings on three int8 models, issue 40 D6).

Real ``gero`` processes; the runtime is registered from a temporary module
($GERO_RUNTIME_MODULES): the onnx ReferenceEvaluator that, with $WRONG_DQ set, computes each
per-axis DequantizeLinear with its first scale (a defect of its own), else correctly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows

from gero_runner.backends import find
from gero_runner.backends.runtime_defects import (
    CACHE_DIR,
    PROBES,
    defect_of,
    pattern_counts,
    probe_errors,
)
from gero_runner.schema import DIVERGENCE

PROBED = '''
"""The onnx ReferenceEvaluator as a runtime whose per-axis DequantizeLinear takes the first
scale for every axis when $WRONG_DQ is set (a test's, outside gero)."""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("probed", "probed", "the probed runtime", "probed"), __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Probed(Backend):
    name = "probed"
    distribution = "onnx"
    module = "onnx"
    keeps_intermediates = False
    keeps_optimized_graph = False

    def paths(self, threads):
        return [self.spec("-", threads, {})]

    def build(self, model, settings):
        proto = onnx.load_from_string(model)
        scales = {n.input[1] for n in proto.graph.node if n.op_type == "DequantizeLinear"}
        for t in proto.graph.initializer:
            x = numpy_helper.to_array(t)
            if os.environ.get("WRONG_DQ") and t.name in scales and x.size > 1:
                t.CopyFrom(numpy_helper.from_array(np.full_like(x, x.flat[0]), t.name))
        return ReferenceEvaluator(proto)

    def run(self, session, inputs):
        return [as_array(o) for o in session.run(None, dict(inputs))]


RUNTIME = Probed()
'''


def _model(tmp: Path, name: str, columns: int, per_axis: bool = True) -> Path:
    """Y = X · DequantizeLinear(W), W int8 (4, columns) with one scale per column (or one
    scale for all)."""
    w = (np.arange(4 * columns).reshape(4, columns) * 29 % 200 - 100).astype(np.int8)
    scale = (np.linspace(0.01, 0.08, columns) if per_axis else np.array(0.02)).astype(np.float32)
    zero = np.zeros(scale.shape, np.int8)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["W"], axis=1)
         if per_axis else helper.make_node("DequantizeLinear", ["w", "s", "z"], ["W"]),
         helper.make_node("MatMul", ["X", "W"], ["Y"])], name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, columns])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s"),
         numpy_helper.from_array(zero, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    path = tmp / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _run(tmp: Path, wrong: bool) -> tuple[Path, dict[str, str]]:
    env = runtime_modules_env(tmp, {"probed_runtime": PROBED},
                              **({"WRONG_DQ": "1"} if wrong else {}))
    root = tmp / "data"
    done = gero("run", "--model", str(_model(tmp, "qa", 3)), "--model",
                str(_model(tmp, "qb", 5)), "--backends", "probed",
                "--jobs", "1", "--data-dir", str(root), "-q", env=env)
    assert done.returncode == (1 if wrong else 0), done.stderr
    return root, env


def _findings(root: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    done = gero("findings", "--data-dir", str(root), "--format", "json", env=env)
    found: list[dict[str, Any]] = json.loads(done.stdout)["findings"] if done.stdout else []
    return found


@pytest.mark.slow
def test_a_runtime_that_fails_the_probe_is_one_finding_over_both_files(tmp_path: Path
                                                                        ) -> None:
    root, env = _run(tmp_path, wrong=True)
    off = [r for r in obs_rows(root) if r["result"] == DIVERGENCE]
    assert off and {r["cause_key"] for r in off} == {"defect:probed:dequantize-per-axis"}
    assert {r["op_type"] for r in off} == {"qa", "qb"}
    (finding,) = _findings(root, env)
    assert finding["cause_key"] == "defect:probed:dequantize-per-axis"
    assert finding["cases"] == 2 and finding["outlier"] == "probed"
    assert finding["title"].startswith(
        "The probed runtime computes per-axis DequantizeLinear wrong (a 1-node probe is ")
    assert "off the spec) and the model has 1 such node: off on " in finding["title"]
    # the probe ran once for the runtime, version and setting, and is kept in the root
    (kept,) = Path(root, *CACHE_DIR).glob("*.json")
    errors = json.loads(kept.read_text())
    assert errors["dequantize-per-axis"] > 0.1 and errors["dequantize-per-tensor"] == 0.0


@pytest.mark.slow
def test_a_runtime_that_passes_the_probe_has_no_finding(tmp_path: Path) -> None:
    root, env = _run(tmp_path, wrong=False)
    assert not [r for r in obs_rows(root) if r["result"] != "passed"]
    assert _findings(root, env) == []


def _settings() -> str:
    runtime = find("onnxruntime")
    assert runtime is not None
    return json.dumps(dict(runtime.paths(1)[-1].settings))


def test_a_correct_runtime_passes_every_probe_and_explains_nothing(tmp_path: Path) -> None:
    runtime = find("onnxruntime")
    assert runtime is not None
    errors = probe_errors("onnxruntime", runtime.version(), json.loads(_settings()),
                          str(tmp_path))
    assert errors == {p.key: 0.0 for p in PROBES}
    counts = pattern_counts(onnx.load(str(_model(tmp_path, "qa", 3))))
    assert defect_of("onnxruntime", runtime.version(), _settings(), counts, "model",
                     str(tmp_path)) is None


def test_a_file_without_the_pattern_keeps_the_rows_own_cause(tmp_path: Path) -> None:
    per_axis = pattern_counts(onnx.load(str(_model(tmp_path, "qa", 3))))
    per_tensor = pattern_counts(onnx.load(str(_model(tmp_path, "qt", 3, per_axis=False))))
    assert per_axis == {"dequantize-per-axis": 1, "dequantize-per-tensor": 0}
    assert per_tensor == {"dequantize-per-axis": 0, "dequantize-per-tensor": 1}
    # a kept probe result says the runtime fails: only the file with the pattern is its
    runtime = find("onnxruntime")
    assert runtime is not None
    probe_errors("onnxruntime", runtime.version(), json.loads(_settings()), str(tmp_path))
    (kept,) = Path(tmp_path, *CACHE_DIR).glob("*.json")
    kept.write_text(json.dumps({"dequantize-per-axis": 0.5, "dequantize-per-tensor": 0.0}))
    assert defect_of("onnxruntime", runtime.version(), _settings(), per_tensor, "model",
                     str(tmp_path)) is None
    found = defect_of("onnxruntime", runtime.version(), _settings(), per_axis,
                      "int8-static", str(tmp_path))
    assert found is not None
    key, cause, facts = found
    assert key == "defect:onnxruntime:dequantize-per-axis"
    assert cause == ("computes per-axis DequantizeLinear wrong (a 1-node probe is 0.5 off "
                     "the spec) and the int8-static file has 1 such node")
    assert facts["probe_error"] == 0.5 and facts["nodes"] == 1
