"""Every artifact is an ONNX backend test directory that runs without gero."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pyarrow.parquet as pq
import pytest
from evidence_helpers import artifact_dirs, small_run
from onnx import numpy_helper

from gero_runner.storage.artifacts import load_array
from gero_runner.storage.store import DataRoot


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    return small_run(tmp_path_factory.mktemp("onnx-dir-data"))


def _load_pb(path: object) -> np.ndarray:
    tensor = onnx.TensorProto()
    with open(str(path), "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


@pytest.mark.slow
def test_test_data_set_runs_in_onnxruntime(root: DataRoot) -> None:
    rows = pq.read_table(root.observation_files()[0]).to_pylist()
    from onnx.backend.test.loader import load_model_tests

    # onnx's own loader discovers the artifacts as model tests (kind = the AB/ shard folder).
    discovered = {Path(str(c.model_dir)) for d in artifact_dirs(root)
                  for c in load_model_tests(str(root.path / "artifacts"), d.parent.name)}
    assert discovered == set(artifact_dirs(root))
    for directory in sorted(discovered):
        model = onnx.load(str(directory / "model.onnx"))
        onnx.checker.check_model(model)
        data = directory / "test_data_set_0"
        inputs = sorted(data.glob("input_*.pb"))
        outputs = sorted(data.glob("output_*.pb"))
        assert len(inputs) == len(model.graph.input) and outputs
        feeds = {}
        for i, (path, graph_input) in enumerate(zip(inputs, model.graph.input, strict=True)):
            array = _load_pb(path)
            np.testing.assert_array_equal(
                array, load_array(directory, f"inputs/input_{i}.npy"))
            feeds[graph_input.name] = array
        session = ort.InferenceSession(str(directory / "model.onnx"),
                                       providers=["CPUExecutionProvider"])
        got = session.run(None, feeds)
        relative = directory.relative_to(root.path).as_posix()
        mine = [r for r in rows if r["artifact_path"] == relative and r["check"] == "analytic"
                and r["backend"] == "onnxruntime" and r["result"] == "passed"]
        assert mine, "each case has passing analytic rows to take the tolerance from"
        rtol, atol = mine[0]["rtol"], mine[0]["atol"]
        for path, actual in zip(outputs, got, strict=True):
            expected = _load_pb(path)
            assert expected.dtype == actual.dtype and expected.shape == actual.shape
            finite = np.isfinite(expected)
            np.testing.assert_allclose(actual[finite], expected[finite], rtol=rtol, atol=atol)
