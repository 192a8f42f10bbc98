"""On a malformed model (``CaseInstance.malformed``) the row builder keys a path's failure by
the malformed node only where the error is one a path met on the model itself and no known
cause names; a failure with another error, or an operator a runtime lacks, keeps its own key
(issue 40 D6)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gero_runner.execution.context import CaseContext, PathResult, RunSettings
from gero_runner.run import RunRequest, collect_cases
from gero_runner.storage.artifacts import EvidenceWriter

KEY = "malformed:ai.onnx.ml::LinearClassifier"
BROADCAST = "ValueError: operands could not be broadcast together with shapes (3,6) (3,) (3,6)"


def _ctx(malformed: bool) -> CaseContext:
    (case, *_) = collect_cases(RunRequest(ops=["Exp"], dtypes=["float32"]))
    case = dataclasses.replace(case, malformed=(
        (KEY, "LinearClassifier 'lc' holds 12 coefficients for 3 classes × 2 features "
              "(the spec needs 6)"),) if malformed else ())
    ref = PathResult("onnx-reference", "onnx-reference", "1", "-", 1, {}, error=BROADCAST)
    return CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                       {"onnx-reference": ref}, ["y"], "g", "i")


def _failure(ctx: CaseContext, error: str, check: str = "agreement") -> tuple[str, str, str]:
    path = PathResult("tract-optimized", "tract", "1", "optimized", 1, {}, error=error)
    row = ctx.row(check=check, output_name="y", actual=path, reference_name="onnx-reference",
                  reference_version="1", dtype="float32", cmp=None, rtol=math.nan,
                  atol=math.nan, result="execution", reason=f"x failed: {error}",
                  failed_path="tract-optimized", cause=error, error=error)
    return row.result, row.failure_kind, row.cause_key


@pytest.mark.parametrize(("error", "malformed"), [
    (BROADCAST, True),
    # the same error on another shape (a variant file's): masked, the same key
    (BROADCAST.replace("(3,6)", "(4,6)"), True),
    ("RuntimeError: a kernel crashed", False),
    ("TractError: Unimplemented(LinearClassifier)", False),
])
def test_only_the_models_own_error_is_the_malformed_nodes(error: str, malformed: bool) -> None:
    result, kind, key = _failure(_ctx(True), error, check="model:fp16")
    assert (kind == "malformed") == malformed and (key == KEY) == malformed, (kind, key)
    assert result == "execution"
    assert _failure(_ctx(False), error)[1] != "malformed"  # a well-formed model: never


def test_a_yardstick_failing_with_the_models_error_is_a_contract_issue_of_the_model() -> None:
    ctx = _ctx(True)
    shadow = PathResult("float64-shadow", "float64-shadow", "1", "-", 0, {})
    for words, expected in ((BROADCAST, ("contract_issue", "malformed", KEY)),
                            ("ShadowUnavailable: no exact float64 computation of X",
                             ("passed", "", ""))):
        row = ctx.row(check="model:float64-shadow", output_name="", actual=shadow,
                      reference_name="-", reference_version="1", dtype="float32", cmp=None,
                      rtol=math.nan, atol=math.nan, result="execution",
                      reason=f"the float64 shadow could not run: {words}",
                      failure_kind="tooling", cause_key="tooling:shadow")
        assert (row.result, row.failure_kind, row.cause_key) == expected
