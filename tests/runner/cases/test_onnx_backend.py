"""The onnx-backend suite on a sample of cases, verdicts checked against assert_allclose."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gero_runner.cases import onnx_backend
from gero_runner.checks.task import evaluate_case
from gero_runner.execution.context import RunSettings
from gero_runner.schema import EXECUTION, PASSED
from gero_runner.storage.artifacts import load_array

NAMED = ["test_abs", "test_relu", "test_softmax_axis_0", "test_softmax_axis_0_expanded",
         "test_cast_FLOAT_to_FLOAT16", "test_equal_int8", "test_argmax_default_axis_random",
         "test_gemm_default_no_bias", "test_layer_normalization_2d_axis0",
         "test_mod_mixed_sign_float32",
         "test_dropout_default_mask", "test_resize_upsample_scales_cubic"]
UNSUPPORTED = {"test_celu_bfloat16": "bfloat16",
               "test_cast_FLOAT_to_FLOAT8E4M3FN": "float8_e4m3fn"}
# Strings, sequences and optionals (of tensors) get verdicts like any other case.
NON_TENSOR = ["test_sequence_insert_at_back", "test_split_to_sequence_nokeepdims",
              "test_if_seq", "test_loop13_seq", "test_identity_sequence",
              "test_strnormalizer_nostopwords_nochangecase", "test_string_concat_utf8",
              "test_string_split_basic", "test_equal_string"]


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


@pytest.mark.slow
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
        if case.unsupported or case.wrapped:
            continue  # wrapped cases rename their outputs: checked below
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
            want = (np.array_equal(actual, expected) if actual.dtype.kind == "U" else
                    _allclose(actual, expected, row["rtol"], row["atol"]) and not nan_both)
            assert (row["result"] == PASSED) == want, (name, row["backend"], row["reason"])
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(("name", "what"), sorted(UNSUPPORTED.items()))
def test_non_tensor_and_exotic_types_are_execution_rows(tmp_path: Path,
                                                        testcases: dict[str, Any],
                                                        ops: dict[str, str], name: str,
                                                        what: str) -> None:
    case = onnx_backend.to_case(testcases[name], ops[name])
    assert what in case.unsupported
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


@pytest.mark.parametrize("name", NON_TENSOR)
def test_string_sequence_and_optional_cases_get_verdicts(tmp_path: Path,
                                                         testcases: dict[str, Any],
                                                         ops: dict[str, str], name: str) -> None:
    case = onnx_backend.to_case(testcases[name], ops[name])
    assert case.unsupported == ""
    rows = evaluate_case(case, RunSettings(data_root=str(tmp_path), repeats=1, checks=())).rows
    ort = [r for r in rows if r["backend"] == "onnxruntime" and r["check"] == "expected"]
    assert ort and all(r["result"] == PASSED for r in ort), [r["reason"] for r in ort]
    outputs = testcases[name].data_sets[0][1]
    for vo, value in zip(testcases[name].model.graph.output, outputs, strict=True):
        if isinstance(value, list):  # one row per tensor of the sequence, and its length
            names = {r["output_name"] for r in ort}
            assert {f"{vo.name}.length", *(f"{vo.name}[{i}]" for i in range(len(value)))} \
                <= names
            length = next(r for r in ort if r["output_name"] == f"{vo.name}.length")
            art = tmp_path / length["artifact_path"]
            assert int(load_array(art, length["actual_file"])) == len(value)


def test_a_string_that_differs_is_a_divergence() -> None:
    from gero_runner.classify import classify
    from gero_runner.metrics.compare import compare

    a, r = np.array(["abc", "déjà vu", ""]), np.array(["abc", "deja vu", ""], dtype="<U9")
    result, reason = classify(compare(a, r, 1e-3, 1e-7), 1e-3, 1e-7)
    assert (result, reason) == ("divergence", "1 of 3 strings differ (compared exactly)")
    assert classify(compare(a, a.astype("<U12"), 0, 0), 0, 0)[0] == PASSED


def test_the_reference_optional_defect_is_named_where_the_wrapper_adds_one(
        testcases: dict[str, Any], ops: dict[str, str]) -> None:
    case = onnx_backend.to_case(testcases["test_identity_opt"], ops["test_identity_opt"])
    assert "op_optional.py returns ([x],)" in case.wrapped
