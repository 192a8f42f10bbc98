"""ORT-only is cheap: a model with an operator the ReferenceEvaluator has no implementation
of (ONNX Runtime's com.microsoft contrib ops) gets no float64 shadow whatever its inputs, so
none is started (a child process that imported onnx and failed: about half of a
`--backends onnxruntime` run of the int8 ddddocr model's own time); the case says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from onnx import TensorProto, helper
from shared_helpers import save

from gero_runner.cases import user_models
from gero_runner.request import RunRequest


def test_no_shadow_is_started_for_an_operator_the_evaluator_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = save(tmp_path / "gelu.onnx",
                 [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                 opsets={"": 17, "com.microsoft": 1})

    def started(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the float64 shadow was started")

    monkeypatch.setattr(user_models, "_shadow", started)
    (case,) = user_models.cases_for_request(RunRequest(models=[model],
                                                       data_root=tmp_path / "data"))
    assert case.expected is None and case.expected_exact is None
    assert case.shadow_error == ("the ReferenceEvaluator has no implementation of "
                                 "com.microsoft Gelu, so no float64 arbiter exists for this "
                                 "model")


def _relu(tmp_path: Path) -> str:
    return save(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])


@pytest.mark.slow
def test_a_rerun_reuses_the_float64_shadow_a_run_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gero_runner.process import isolate

    request = RunRequest(models=[_relu(tmp_path)], data_root=tmp_path / "data")
    (first,) = user_models.cases_for_request(request)
    assert first.expected_exact is not None
    assert list((tmp_path / "data" / "cache" / "outputs").glob("*.npz"))

    def started(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the float64 shadow was started")

    monkeypatch.setattr(isolate, "call_isolated", started)
    (again,) = user_models.cases_for_request(request)
    assert again.expected_exact is not None and again.expected is not None
    for name, x in first.expected_exact.items():
        assert again.expected_exact[name].dtype == x.dtype == "float64"
        assert again.expected_exact[name].tobytes() == x.tobytes()
    assert again.expected["y"].dtype == "float32"
    with pytest.raises(AssertionError, match="was started"):  # --no-reuse computes it
        user_models.cases_for_request(RunRequest(models=request.models, reuse=False,
                                                 data_root=tmp_path / "data"))
