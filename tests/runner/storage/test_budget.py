"""What a tensor over the evidence budget keeps: hash, statistics over its finite values,
non-finite counts, its largest elements; and the worst elements of a comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gero_runner.storage.budget import oversized_output, tensor_summary, worst_elements
from gero_runner.storage.hashing import tensor_hash


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_summary_counts_non_finite_values_and_keeps_the_largest(dtype: str) -> None:
    x = np.array([[1.0, -0.0, np.nan], [np.inf, -np.inf, -7.5]], dtype)
    s = tensor_summary(x, 1024)
    assert s["shape"] == [2, 3] and s["dtype"] == dtype and s["sha256"] == tensor_hash(x)
    assert (s["nan"], s["inf"]) == (1, 2)
    assert (s["min"], s["max"]) == (-7.5, 1.0)  # over the finite values
    assert math.isclose(s["mean"], (1.0 - 7.5) / 3)
    largest = s["largest"]
    assert [e["value"] for e in largest[:3]] == ["inf", "-inf", -7.5]
    assert largest[0]["index"] == [1, 0] and largest[-1]["value"] == "nan"  # NaN last


def test_a_summary_of_integers_and_of_an_empty_tensor() -> None:
    s = tensor_summary(np.arange(20, dtype=np.int64).reshape(4, 5), 1024)
    assert (s["min"], s["max"], "nan" in s) == (0.0, 19.0, False)
    assert [e["value"] for e in s["largest"]] == [19.0, 18.0, 17.0, 16.0, 15.0, 14.0, 13.0, 12.0]
    assert "largest" not in tensor_summary(np.zeros((0, 3), np.float32), 1024)


def test_worst_elements_put_one_sided_nan_first_and_skip_agreement() -> None:
    a = np.array([1.0, np.nan, np.nan, 5.0, 2.0], np.float32)
    r = np.array([1.0, 3.0, np.nan, 4.0, 2.5], np.float32)
    worst = worst_elements(a, r)
    assert [w["index"] for w in worst] == [[1], [3], [4]]  # equal and both-NaN left out
    assert worst[0]["abs_error"] == "inf" and worst[1]["abs_error"] == 1.0
    assert worst_elements(a, r[:2]) == [] and worst_elements(None, r) == []


def test_an_output_over_the_tensor_budget_is_named() -> None:
    outputs = [np.zeros(4, np.float32), np.zeros((512, 1024), np.float32)]
    assert oversized_output(outputs, ["small", "big"], 2**21) is None
    assert oversized_output(outputs, ["small", "big"], 2**20) == (
        "output 'big' came out with shape [512, 1024] float32: 2.0 MiB, over the 1.0 MiB a "
        "tensor may take (--max-tensor-mb); not compared")
