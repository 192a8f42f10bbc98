"""The onnx-backend suite on a sample of cases, verdicts checked against assert_allclose."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gero_runner.cases import onnx_backend
from gero_runner.execution.evaluate import RunSettings, evaluate_case
from gero_runner.schema import EXECUTION, PASSED
from gero_runner.storage.artifacts import load_array

NAMED = ["test_abs", "test_relu", "test_softmax_axis_0", "test_softmax_axis_0_expanded",
         "test_cast_FLOAT_to_FLOAT16", "test_equal_int8", "test_argmax_default_axis_random",
         "test_gemm_default_no_bias", "test_layer_normalization_2d_axis0",
         "test_mod_mixed_sign_float32",
         "test_dropout_default_mask", "test_resize_upsample_scales_cubic"]
UNSUPPORTED = {"test_sequence_insert_at_back": "sequence",
               "test_strnormalizer_nostopwords_nochangecase": "string",
               "test_celu_bfloat16": "bfloat16",
               "test_optional_get_element_optional_tensor": "optional"}


@pytest.fixture(scope="module")
def testcases() -> dict[str, Any]:
    return {tc.name: tc for tc in onnx_backend.collect()}


@pytest.fixture(scope="module")
def ops(testcases: dict[str, Any]) -> dict[str, str]:
    return onnx_backend.op_types(list(testcases.values()))


def _sample(testcases: dict[str, Any]) -> list[str]:
    rng = np.random.default_rng(7)
    names = sorted(testcases)
    return sorted({*NAMED, *rng.choice(names, size=40, replace=False).tolist()})


def _allclose(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    except AssertionError:
        return False
    return True


def test_collects_the_whole_generated_suite(testcases: dict[str, Any],
                                            ops: dict[str, str]) -> None:
    assert len(testcases) > 1500  # ~1,900 at onnx 1.23, generated in memory
    assert ops["test_softmax_axis_0_expanded"] == "Softmax"
    assert ops["test_relu_expanded_ver18"] == "Relu"


def test_verdicts_match_assert_allclose(tmp_path: Path, testcases: dict[str, Any],
                                        ops: dict[str, str]) -> None:
    settings = RunSettings(data_root=str(tmp_path), repeats=1, checks=())
    checked = 0
    for name in _sample(testcases):
        tc = testcases[name]
        case = onnx_backend.to_case(tc, ops[name])
        if case.metadata.get("unsupported"):
            continue
        assert case.tolerance == (tc.rtol, tc.atol)
        rows = evaluate_case(case, settings).rows
        for row in rows:
            if row["check"] != "expected" or row["result"] == EXECUTION:
                continue
            art = tmp_path / row["artifact_path"]
            actual = load_array(art, row["actual_file"])
            expected = load_array(art, row["reference_file"])
            j = [o.name for o in tc.model.graph.output].index(row["output_name"])
            np.testing.assert_array_equal(expected, onnx_backend._normalise(
                tc.data_sets[0][1][j], "x").array)
            if actual.dtype.kind == "f":
                assert (row["rtol"], row["atol"]) == (tc.rtol, tc.atol)
            # gero never lets NaN == NaN pass; assert_allclose does (equal_nan=True).
            nan_both = actual.dtype.kind == "f" and bool(
                (np.isnan(actual) & np.isnan(expected)).any())
            want = _allclose(actual, expected, row["rtol"], row["atol"]) and not nan_both
            assert (row["result"] == PASSED) == want, (name, row["backend"], row["reason"])
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(("name", "what"), sorted(UNSUPPORTED.items()))
def test_non_tensor_and_exotic_types_are_execution_rows(tmp_path: Path,
                                                        testcases: dict[str, Any],
                                                        ops: dict[str, str], name: str,
                                                        what: str) -> None:
    case = onnx_backend.to_case(testcases[name], ops[name])
    assert what in case.metadata["unsupported"]
    rows = evaluate_case(case, RunSettings(data_root=str(tmp_path), repeats=1, checks=())).rows
    assert [r["result"] for r in rows] == [EXECUTION]
    assert what in rows[0]["reason"] and "Traceback" not in rows[0]["reason"]


def test_unsupported_operator_keeps_ort_message(tmp_path: Path, testcases: dict[str, Any],
                                                ops: dict[str, str]) -> None:
    name = next(n for n in sorted(testcases) if ops[n] == "ImageDecoder")
    case = onnx_backend.to_case(testcases[name], ops[name])
    rows = evaluate_case(case, RunSettings(data_root=str(tmp_path), repeats=1, checks=())).rows
    ort_rows = [r for r in rows if r["backend"] == "onnxruntime"]
    assert ort_rows and all(r["result"] == EXECUTION for r in ort_rows)
    assert all("ONNXRuntimeError" in r["reason"] for r in ort_rows)
    assert json.loads(ort_rows[0]["session_settings"])["graph_optimization_level"]
