"""Issue 40, round 6 (oww's wake-word score, one float32 of 1.55e-5 per row): a gate on the
fp16 file accepts float16's own spacing at each value (a subnormal's step is 0.38 % there,
and ONNX Runtime one step from the correctly rounded value failed the 4e-3 gate: D4); on an
int8 file, rows of one element are compared element-wise, so a runtime far from the file
computed exactly is blamed on that file, not the file off the fp32 model (tract's per-axis
DequantizeLinear, 2.23 scaled, its row cosine 1: D6)."""

from __future__ import annotations

import math

import numpy as np

from gero_runner.checks.model import StatsRule, int8_exact_needed
from gero_runner.metrics import model_level as ml

STEP = 2.0 ** -24
"""float16's spacing below its smallest normal (6.1e-5)."""


def test_float16_steps_are_counted_at_each_reference_value() -> None:
    # oww: ONNX Runtime 262 subnormal steps, the fp16 file computed exactly 1.5543e-5
    assert math.isclose(ml.fp16_steps([262 * STEP], [1.5543e-5]), 1.23, abs_tol=0.01)
    # a normal value's step is 2^-10 of its binade: 1 + 3 steps at 1.0, 1.5 steps at 3.0
    assert ml.fp16_steps([1.0 + 3 * 2.0 ** -10], [1.0]) == 3.0
    assert ml.fp16_steps([3.0 + 3 * 2.0 ** -9], [3.0]) == 3.0
    assert ml.fp16_steps([65504.0, 1.0], [65504.0 - 64.0, 1.0]) == 2.0  # no overflow
    assert ml.fp16_steps([np.inf], [1.0]) == math.inf


def test_a_gate_on_the_fp16_file_accepts_a_float16_step_at_a_subnormal_output() -> None:
    ort, exact = np.array([[262 * STEP]]), np.array([[1.5543e-5]])
    gate = ml.fp16_reference_gate(ml.scaled_error(ort, exact), True)
    assert not gate.passed  # 0.0047 > 0.004: before, ONNX Runtime was off the file
    judged = ml.within_fp16_steps(gate, ort, exact)
    assert judged.passed, judged.reason
    assert judged.reason.startswith("within 1.23 float16 steps of it at every element (≤ 4: "
                                    "float16's spacing at each value, 5.96e-08 below 6.1e-05)")
    assert judged.figures["fp16_steps"] == ml.fp16_steps(ort, exact)
    # vs the fp32 model (ONNX Runtime at all: 1.5497e-5): 2 steps, also within
    vs = ml.fp16_vs_fp32_gate(ml.scaled_error(ort, [[1.5497e-5]]), 0.00385)
    assert not vs.passed and ml.within_fp16_steps(vs, ort, [[1.5497e-5]]).passed
    # 10 steps off is no rounding: the gate's failure stands, its figure recorded
    far = ml.within_fp16_steps(gate, exact + 10 * STEP, exact)
    assert not far.passed and far.reason == gate.reason and far.figures["fp16_steps"] > 9


def test_at_normal_values_four_steps_are_within_the_4e3_gate_already() -> None:
    r = np.linspace(0.5, 1.0, 8)
    a = r + 5 * 2.0 ** -11  # 5 steps of the [0.5, 1) binade: 0.0024 scaled, passing
    gate = ml.fp16_reference_gate(ml.scaled_error(a, r), False)
    assert gate.passed
    worse = r.copy()
    worse[-1] += 5 * 2.0 ** -10  # 5 steps at 1.0: 0.0049 scaled, failing, and > 4 steps
    gate = ml.fp16_reference_gate(ml.scaled_error(worse, r), False)
    assert not gate.passed and not ml.within_fp16_steps(gate, worse, r).passed


def test_one_element_rows_on_an_int8_file_are_compared_element_wise() -> None:
    rule = StatsRule(("p",), decision=False)
    ort, tract, exact = (np.array([[v]], np.float32) for v in (1.5527e-5, 5.02e-5, 1.5533e-5))
    # Before, the row cosine (1: both positive) passed and nothing asked for the exact file
    assert int8_exact_needed([ort], [[tract]], rule)
    assert not int8_exact_needed([ort], [[ort * np.float32(1.001)]], rule)
    stats = rule.stats(0, tract, ort)
    gate = ml.int8_single_gate(stats, ml.unmeasured_floor(stats))
    assert not gate.passed
    assert gate.reason == ("scaled error 2.23 > 0.0315 (rows of one element: a cosine only "
                           "compares their signs)")
    by = ml.int8_exact_single_gate(rule.stats(0, tract, exact), rule.stats(0, ort, exact))
    assert not by.passed, by.reason  # tract is off the file, the baseline is not
    assert "its scaled error is 2.23, the run's baseline's 0.000386" in by.reason
    near = ml.int8_exact_single_gate(rule.stats(0, exact * np.float32(1.01), exact),
                                     rule.stats(0, ort, exact))
    assert near.passed, near.reason  # 1 % off exact: within 8 int8 roundings
