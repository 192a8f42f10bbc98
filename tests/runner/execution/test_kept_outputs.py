"""A path's result whose outputs lie in a kept entry crosses processes without its arrays
(issue 41, memory): the parent and the part that judges a model case read each path's
outputs from the entry when they use them, instead of receiving every path's at once."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from gero_runner.backends import ort
from gero_runner.case import CaseInstance
from gero_runner.execution.context import PathResult
from gero_runner.execution.paths import run_path
from gero_runner.storage.path_outputs import PathOutputs

N = 50_000  # 200 KB of float32 output


def _case() -> CaseInstance:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    return CaseInstance(suite="model", case_id="model/relu", op_type="Relu", case_name="relu",
                        dtype="float32", seed=0, model=onnx.load_from_string(
                            model.SerializeToString()).SerializeToString(), inputs={"x": x})


def _run(root: Path) -> tuple[CaseInstance, PathResult]:
    case = _case()
    spec = ort.RUNTIME.paths(1)[0]
    return case, run_path(ort.RUNTIME, spec, case, 1, reuse=PathOutputs(root))


def test_a_kept_result_is_pickled_without_its_arrays_and_reads_them_back(
        tmp_path: Path) -> None:
    case, path = _run(tmp_path)
    assert path.kept is not None and path.outputs is not None
    sent = pickle.dumps(path)
    assert len(sent) < N  # the 200 KB output stayed behind
    got = pickle.loads(sent)
    assert got.ok and got.error is None and got.outputs is not None
    np.testing.assert_array_equal(got.outputs[0], np.maximum(case.inputs["x"], 0))
    # A reused result (a rerun) is sent the same way.
    _, again = _run(tmp_path)
    assert again.reused and len(pickle.dumps(again)) < N


def test_outputs_set_to_none_stay_none_across_processes(tmp_path: Path) -> None:
    _, path = _run(tmp_path)
    cleared = dataclasses.replace(path, outputs=None)
    assert pickle.loads(pickle.dumps(cleared)).outputs is None


def test_an_entry_gone_before_it_is_read_leaves_the_path_failed_with_a_sentence(
        tmp_path: Path) -> None:
    _, path = _run(tmp_path)
    sent = pickle.dumps(path)
    for entry in (tmp_path / "cache" / "outputs").iterdir():
        entry.write_bytes(b"not a zip")
    got = pickle.loads(sent)
    assert got.outputs is None and not got.ok
    assert got.error is not None and "could not be used" in got.error


def test_without_a_kept_entry_the_arrays_travel(tmp_path: Path) -> None:
    case = _case()
    path = run_path(ort.RUNTIME, ort.RUNTIME.paths(1)[0], case, 1)
    assert path.kept is None
    got = pickle.loads(pickle.dumps(path))
    assert got.outputs is not None and path.outputs is not None
    np.testing.assert_array_equal(got.outputs[0], path.outputs[0])
