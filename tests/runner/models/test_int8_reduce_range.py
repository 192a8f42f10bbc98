"""int8 variants on x86 CPUs without VNNI: 7-bit weights, said in the model file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gero_runner.models import variants


@pytest.mark.parametrize(("machine", "flags", "reduced"), [
    ("x86_64", "flags : fpu sse avx2 fma", True),
    ("x86_64", "flags : fpu avx2 avx512f avx512_vnni", False),
    ("x86_64", "flags : fpu avx2 avx_vnni", False),
    ("aarch64", "Features : fp asimd asimddp", False),
])
def test_reduce_range_follows_the_cpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      machine: str, flags: str, reduced: bool) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(flags)
    monkeypatch.setattr("platform.machine", lambda: machine)
    monkeypatch.setattr("gero_runner.models.variants.Path",
                        lambda p: cpuinfo if p == "/proc/cpuinfo" else Path(p))
    variants.int8_reduce_range.cache_clear()
    try:
        assert bool(variants.int8_reduce_range()) is reduced
    finally:
        variants.int8_reduce_range.cache_clear()


def test_the_variant_says_when_its_weights_have_7_bits() -> None:
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    built = variants.build(variants.INT8_DYNAMIC, model.SerializeToString(),
                           {"x": np.ones((2, 8), np.float32)}, seed=0)
    props = {p.key: p.value for p in onnx.load_from_string(built).metadata_props}
    assert props.get("gero.int8_reduce_range", "") == variants.int8_reduce_range()
