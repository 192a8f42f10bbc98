"""NaN figures stay findable through DuckDB after a round trip through our Parquet writer."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pyarrow as pa

from gero_runner.storage.store import atomic_write_table


def test_isnan_filter_finds_nan_rows(tmp_path: Path) -> None:
    values = [1.0, math.nan, 2.0, math.nan] * 500
    path = tmp_path / "t.parquet"
    atomic_write_table(path, pa.table({"x": values, "k": list(range(len(values)))}))
    ((count,),) = duckdb.execute(
        f"SELECT count(*) FROM read_parquet('{path}') WHERE isnan(x)").fetchall()
    assert count == 1000
