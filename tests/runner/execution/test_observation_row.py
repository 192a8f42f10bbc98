"""The typed observation row: its fields are the schema's columns, the metric columns come
from ``Comparison`` by name, and a row is frozen."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime

import numpy as np
import pyarrow as pa
import pytest

from gero_runner import schema
from gero_runner.execution.context import (
    METRIC_COLUMNS,
    CaseContext,
    PathResult,
    RunSettings,
    finish_row,
)
from gero_runner.execution.evaluate import execution_rows
from gero_runner.metrics.compare import Comparison, compare
from gero_runner.run import RunRequest, collect_cases
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.store import batch_bytes, batch_from_bytes

_PYTHON_TYPES = {pa.string(): str, pa.float64(): float, pa.int32(): int, pa.int64(): int,
                 pa.bool_(): bool}


def test_the_row_type_is_the_schema() -> None:
    fields = dataclasses.fields(schema.Observation)
    assert tuple(f.name for f in fields) == schema.COLUMN_NAMES
    for f, column in zip(fields, schema.OBSERVATION_COLUMNS, strict=True):
        expected = _PYTHON_TYPES.get(column.type, datetime)
        assert expected.__name__ in str(f.type), (f.name, f.type, column.type)


def test_metric_columns_are_the_comparisons_figures_by_name() -> None:
    names = {f.name for f in dataclasses.fields(Comparison)}
    assert set(METRIC_COLUMNS) == names & set(schema.COLUMN_NAMES)
    assert {"max_abs_error", "min_rtol", "bit_exact", "inf_reference"} <= set(METRIC_COLUMNS)
    with pytest.raises(TypeError):
        Comparison(1, 0)  # type: ignore[call-arg, misc]  # keyword-only: 16 positions were a trap


@pytest.fixture
def ctx() -> CaseContext:
    (case, *_) = collect_cases(RunRequest(ops=["Exp"], dtypes=["float32"]))
    return CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                       {}, ["y"], "g", "i")


def test_a_row_carries_every_figure_and_round_trips_through_arrow(ctx: CaseContext) -> None:
    path = PathResult("ort-all", "onnxruntime", "1", "all", 1, {"level": "all"}, repeats=3)
    a = np.array([1.0, np.nan, np.inf], dtype=np.float32)
    r = np.array([1.5, 1.0, np.inf], dtype=np.float32)
    cmp = compare(a, r, 1e-5, 1e-6)
    row = finish_row(ctx.row(check="agreement", output_name="y", actual=path,
                             reference_name="onnx-reference", reference_version="1",
                             dtype="float32", cmp=cmp, rtol=1e-5, atol=1e-6,
                             result="divergence", reason="r"), "ab/cd")
    for name in METRIC_COLUMNS:
        assert row[name] == getattr(cmp, name)
    assert row.artifact_path == "ab/cd" and len(row.observation_id) == 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.result = "passed"  # type: ignore[misc]
    (back,) = batch_from_bytes(batch_bytes([row])).to_pylist()
    # repr: NaN equals NaN here, and a float that changed type or value would show.
    assert {k: repr(v) for k, v in back.items()} == {k: repr(v) for k, v in row.as_dict().items()}


def test_a_row_without_comparison_has_nan_errors_and_zero_counts(ctx: CaseContext) -> None:
    (row,) = execution_rows(ctx.case, "worker crashed")
    assert math.isnan(row.max_abs_error) and math.isnan(row.min_atol)
    assert row.element_count == 0 and row.bit_exact is False and row.result == "execution"
