"""Per-operation max abs error histogram in DuckDB: decades, zero and missing figures, NaN
read back from Parquet (whose statistics leave NaN out)."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero.query.histograms import operation_histogram


def _con(rows: list[tuple[str, str, str, float | None]],
         tmp_path: Path) -> duckdb.DuckDBPyConnection:
    table = pa.table({
        "op_type": [r[0] for r in rows], "optimization": [r[1] for r in rows],
        # "-" is the onnx ReferenceEvaluator's path: the histogram names it "reference".
        "backend": ["onnx-reference" if r[1] == "-" else "onnxruntime" for r in rows],
        "dtype": [r[2] for r in rows], "max_abs_error": pa.array([r[3] for r in rows],
                                                                 pa.float64()),
    })
    path = tmp_path / "obs.parquet"
    pq.write_table(table, path)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW obs AS SELECT * FROM read_parquet('{path}')")
    return con


def test_groups_by_level_and_dtype_with_decades(tmp_path: Path) -> None:
    con = _con([
        ("Softmax", "all", "float16", 3e-4), ("Softmax", "all", "float16", 7e-4),
        ("Softmax", "all", "float16", 2e-2), ("Softmax", "all", "float16", 0.0),
        ("Softmax", "basic", "float32", 1e-7), ("Softmax", "-", "float32", math.nan),
        ("Softmax", "basic", "float32", None), ("Softmax", "basic", "float32", math.inf),
        ("Relu", "all", "float16", 5.0),
    ], tmp_path)
    h = operation_histogram(con, "Softmax")
    assert [(g.optimization, g.dtype) for g in h.groups] == [
        ("basic", "float32"), ("all", "float16"), ("reference", "float32")]
    by = {(g.optimization, g.dtype): g for g in h.groups}
    assert by["all", "float16"].decades == {-4: 2, -2: 1}
    assert by["all", "float16"].zero == 1
    assert by["basic", "float32"].decades == {-7: 1, 999: 1}
    assert by["basic", "float32"].no_figure == 1
    # NaN in Parquet: its footer statistics exclude NaN, which must not hide it.
    assert by["reference", "float32"].no_figure == 1
    assert h.total == 8
    assert h.decade_range == (-7, -2)


@pytest.mark.parametrize("op", ["Nope", "Softmax' OR '1'='1"])
def test_unknown_operation_is_empty_and_parameterised(tmp_path: Path, op: str) -> None:
    con = _con([("Softmax", "all", "float16", 1e-3)], tmp_path)
    h = operation_histogram(con, op)
    assert h.groups == () and h.total == 0 and h.decade_range == (0, -1)


@pytest.mark.parametrize("value,decade", [(1e-300, -300), (9.99e-5, -5), (1e-5, -5),
                                          (1.0, 0), (123.0, 2), (5e-324, -324)])
def test_decade_edges(tmp_path: Path, value: float, decade: int) -> None:
    con = _con([("Op", "all", "float64", value)], tmp_path)
    assert operation_histogram(con, "Op").groups[0].decades == {decade: 1}
