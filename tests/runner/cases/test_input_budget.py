"""A model input too large for memory is refused, with its shape, before it is allocated."""

from __future__ import annotations

from pathlib import Path

from gero_runner.run import RunRequest, execute


def test_an_input_too_large_is_refused_before_allocating(tmp_path: Path) -> None:
    import onnx
    import pytest
    from onnx import TensorProto
    from onnx import helper as h

    from gero_runner.errors import GeroError

    graph = h.make_graph([h.make_node("Relu", ["X"], ["Y"])], "big",
                         [h.make_tensor_value_info("X", TensorProto.FLOAT, [100000, 100000])],
                         [h.make_tensor_value_info("Y", TensorProto.FLOAT, [100000, 100000])])
    path = tmp_path / "big.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 19)], ir_version=10),
              str(path))
    with pytest.raises(GeroError, match=r"shape \[100000, 100000\] \(model\) would take 37.3 GiB"):
        execute(RunRequest(data_root=tmp_path / "data", models=[str(path)], jobs=1))
