"""Small real runs for the evidence tests (a few Exp cases, one timed repeat)."""

from __future__ import annotations

from pathlib import Path

from gero_runner.run import RunRequest, execute
from gero_runner.storage.store import DataRoot


def small_run(root: Path, run_id: str = "base", **overrides: object) -> DataRoot:
    request = RunRequest(suite="synthetic", data_root=root, ops=["Exp"], limit=3, repeats=1,
                         jobs=1, run_id=run_id, **overrides)  # type: ignore[arg-type]
    execute(request)
    return DataRoot(root)


def artifact_dirs(root: DataRoot) -> list[Path]:
    return sorted(p for p in (root.path / "artifacts").glob("*/*") if p.is_dir())


def never_ending_model() -> bytes:
    """An ONNX model whose Loop never ends (no trip count, the condition stays true)."""
    from onnx import TensorProto
    from onnx import helper as h

    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["x_in", "one"], ["x_out"])], "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_in", TensorProto.FLOAT, [2])],
        [h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_out", TensorProto.FLOAT, [2])],
        [h.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    graph = h.make_graph(
        [h.make_node("Loop", ["", "cond", "X"], ["Y"], body=body)], "hang",
        [h.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [h.make_tensor_value_info("Y", TensorProto.FLOAT, [2])],
        [h.make_tensor("cond", TensorProto.BOOL, [], [True])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)], ir_version=10)
    return bytes(model.SerializeToString())
