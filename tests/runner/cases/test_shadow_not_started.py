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
