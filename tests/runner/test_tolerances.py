"""A run's tolerances are one frozen value: the flag's items, the API's mappings, the run
record, a resumed request and a worker's pickled settings all hold the same value."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gero_runner.errors import GeroError
from gero_runner.request import RunRequest
from gero_runner.run import request_from_json, request_to_json
from gero_runner.tolerances import (
    DEFAULT_TOLERANCES,
    DEFAULTS,
    FLOAT_DTYPES,
    Tolerance,
    Tolerances,
)

figures = st.floats(min_value=0, max_value=1e3, allow_nan=False, allow_infinity=False)
overrides = st.dictionaries(st.sampled_from(FLOAT_DTYPES), figures, max_size=3)


@given(rtol=overrides, atol=overrides)
def test_every_form_of_a_tolerance_is_the_same_value(rtol: dict[str, float],
                                                     atol: dict[str, float]) -> None:
    value = Tolerances.with_overrides(rtol, atol)
    items = ([f"{d}={v!r}" for d, v in rtol.items()], [f"{d}={v!r}" for d, v in atol.items()])
    assert Tolerances.parse(*items) == value
    assert Tolerances.from_dict(json.loads(json.dumps(value.as_dict()))) == value
    assert pickle.loads(pickle.dumps(value)) == value
    request = RunRequest(tolerances=value)
    stored = json.loads(json.dumps(request_to_json(request)))
    assert request_from_json(stored, Path("data"), jobs=1).tolerances == value
    for dtype in FLOAT_DTYPES:
        default = DEFAULT_TOLERANCES[dtype]
        assert value.for_dtype(dtype) == Tolerance(rtol.get(dtype, default.rtol),
                                                   atol.get(dtype, default.atol))
    changed = {d: {k: v for k, v in t.items() if v != getattr(DEFAULT_TOLERANCES[d], k)}
               for d, t in value.as_dict().items()}
    assert value.overrides() == {d: c for d, c in changed.items() if c}


def test_the_per_case_rule_is_the_case_tolerance_for_float_outputs_only() -> None:
    tight = Tolerances.parse(["float32=1e-7"])
    assert tight.for_case(None, "float32") == Tolerance(1e-7, 1e-6)
    assert tight.for_case((1e-3, 1e-4), "float32") == Tolerance(1e-3, 1e-4)
    assert tight.for_case((1e-3, 1e-4), "int64") == Tolerance(0.0, 0.0)
    assert tight.for_case(None, "bool") == Tolerance(0.0, 0.0)


def test_an_older_request_keeps_its_pairs() -> None:
    """A request stored before the value had a form of its own: dtype -> [rtol, atol]."""
    old = {"float16": [0.01, 5e-4], "float32": [1e-5, 1e-6], "float64": [1e-12, 1e-13]}
    assert Tolerances.from_dict(old) == Tolerances.with_overrides({"float16": 0.01})
    assert Tolerances.from_dict({}) == DEFAULTS


@pytest.mark.parametrize(("rtol", "message"), [
    (["float16"], "expected DTYPE=VALUE"), (["int8=1"], "expected DTYPE=VALUE"),
    (["float16=-1"], "finite, non-negative"), (["float16=inf"], "finite, non-negative"),
    (["float16=nan"], "finite, non-negative"), (["float16=x"], "not a number")])
def test_a_bad_item_is_one_sentence(rtol: list[str], message: str) -> None:
    with pytest.raises(GeroError, match=message):
        Tolerances.parse(rtol)


@pytest.mark.parametrize(("tolerances", "dtype", "model", "expected"), [
    (Tolerances(), "float32", True, Tolerance(1e-4, 1e-6)),   # the fp32 model bound
    (Tolerances(), "float32", False, Tolerance(1e-5, 1e-6)),  # the operator table
    (Tolerances(), "float16", True, Tolerance(5e-3, 5e-4)),
    (Tolerances(), "int64", True, Tolerance(0.0, 0.0)),
    (Tolerances.parse(rtol=["float32=3e-5"]), "float32", True, Tolerance(3e-5, 1e-6)),
    (Tolerances.parse(atol=["float32=0"]), "float32", True, Tolerance(1e-5, 0.0)),
])
def test_a_model_case_takes_the_model_table_where_the_user_set_nothing(
        tolerances: Tolerances, dtype: str, model: bool, expected: Tolerance) -> None:
    assert tolerances.for_case(None, dtype, model=model) == expected
    assert tolerances.for_case((0.1, 0.2), "float32", model=model) == (0.1, 0.2)


def test_the_model_tables_float32_bound_is_the_model_gate() -> None:
    from gero_runner.metrics.model_level import FP32_SCALED_LIMIT
    from gero_runner.tolerances import MODEL_TOLERANCES

    assert MODEL_TOLERANCES["float32"].rtol == FP32_SCALED_LIMIT
