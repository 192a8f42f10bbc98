"""The error distribution of every comparison (mean, median, p90, p99 of |a − r| and of the
scaled error) beside its maximum: computed over finite pairs like NumPy's quantiles, stored
on every row (schema version 2), read as NULL from the files of an older gero."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gero_processes import gero
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import save

from gero.query.detail import explained_value, fetch_observation
from gero.query.source import open_source
from gero_runner.distribution import DISTRIBUTION_NAMES, SINCE_SCHEMA
from gero_runner.metrics.compare import Distribution, compare, distribution
from gero_runner.schema import COLUMN_NAMES, OBSERVATION_SCHEMA, SCHEMA_VERSION
from gero_runner.storage.reader import open_run


def _figures(a: np.ndarray, r: np.ndarray) -> dict[str, float]:
    c = compare(a, r, 1e-5, 1e-6)
    return {name: getattr(c, name) for name in DISTRIBUTION_NAMES}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 4097])
def test_quantiles_are_numpys_over_the_finite_pairs(n: int) -> None:
    rng = np.random.default_rng(n)
    r = rng.standard_normal(n)
    a = r + rng.standard_normal(n) * 1e-3
    if n > 3:  # non-finite pairs are counted elsewhere, never in the distribution
        a[0], r[1], a[2], r[2] = np.nan, np.inf, np.inf, np.inf
    got = _figures(a, r)
    finite = np.isfinite(a) & np.isfinite(r)
    diff = np.abs(a[finite] - r[finite])
    expected = [diff.mean(), *np.quantile(diff, [0.5, 0.9, 0.99])]
    scale = np.abs(r[np.isfinite(r)]).max()
    assert np.allclose([got[k] for k in DISTRIBUTION_NAMES[:4]], expected, rtol=1e-12, atol=0)
    assert np.allclose([got[k] for k in DISTRIBUTION_NAMES[4:]], np.array(expected) / scale,
                       rtol=1e-12, atol=0)
    assert got["p99_abs_error"] <= compare(a, r, 1e-5, 1e-6).max_abs_error


@pytest.mark.parametrize(("a", "r", "expected"), [
    # identical bits: every figure 0
    (np.ones(5, np.float32), np.ones(5, np.float32), 0.0),
    # signed zero is no difference
    (np.array([0.0, -0.0]), np.array([-0.0, 0.0]), 0.0),
    # nothing finite to compare: NaN, never 0
    (np.array([np.nan, np.inf]), np.array([np.nan, -np.inf]), math.nan),
    (np.zeros(0, np.float32), np.zeros(0, np.float32), math.nan),
    # float16 limits: 65504 against itself
    (np.array([65504.0], np.float16), np.array([65504.0], np.float16), 0.0),
])
def test_edges(a: np.ndarray, r: np.ndarray, expected: float) -> None:
    got = _figures(a, r)
    for name in DISTRIBUTION_NAMES:
        assert (math.isnan(got[name]) if math.isnan(expected) else got[name] == expected), name


def test_a_zero_reference_scales_like_scaled_error() -> None:
    assert distribution(np.zeros(4), 0.0)["p99_scaled_error"] == 0.0
    assert distribution(np.array([0.0, 1e-30]), 0.0)["p99_scaled_error"] == math.inf


def test_integers_are_measured_exactly() -> None:
    got = _figures(np.array([1, 2, 3, 10], np.int64), np.array([1, 2, 3, 4], np.int64))
    assert got["median_abs_error"] == 0.0 and got["mean_abs_error"] == 1.5
    assert got["p99_abs_error"] == pytest.approx(0.97 * 6)


def test_the_schema_names_them_since_version_2() -> None:
    assert list(Distribution.__annotations__) == list(DISTRIBUTION_NAMES)
    assert SINCE_SCHEMA == 2 <= SCHEMA_VERSION
    assert OBSERVATION_SCHEMA.metadata[b"gero.schema_version"] == str(SCHEMA_VERSION).encode()
    assert set(DISTRIBUTION_NAMES) <= set(COLUMN_NAMES)


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model run (MatMul, Softmax) with its fp16 file, by a real `gero run`, under a
    float32 tolerance nothing meets (findings with figures)."""
    tmp = tmp_path_factory.mktemp("distribution")
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32) * 4
    path = save(tmp / "m.onnx", [helper.make_node("MatMul", ["x", "W"], ["h"]),
                                 helper.make_node("Softmax", ["h"], ["y"], axis=-1)],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
                [numpy_helper.from_array(w, "W")])
    np.savez(tmp / "x.npz", x=np.random.default_rng(1).standard_normal((16, 8)).astype(
        np.float32))
    data = tmp / "data"
    out = gero("run", "--model", path, "--inputs", str(tmp / "x.npz"), "--variants", "fp16",
               "--backends", "onnxruntime", "--paths", "all", "--no-contracts", "--jobs", "1",
               "--repeats", "1",
               "--rtol", "float32=1e-9", "--atol", "float32=0", "--run-id", "new",
               "--data-dir", str(data))
    assert out.returncode in (0, 1), out.stderr
    return data


def test_every_comparison_of_a_real_run_stores_them(model_run: Path) -> None:
    rows = open_run(model_run).query(
        f"SELECT max_abs_error, {', '.join(DISTRIBUTION_NAMES)} FROM obs "
        "WHERE isfinite(max_abs_error) AND element_count > 0")
    assert len(rows) > 20
    for max_abs, mean, median, p90, p99, *scaled in rows:
        assert 0 <= median <= p90 <= p99 <= max_abs and mean <= max_abs
        assert all(s is not None and s >= 0 for s in scaled)
    # the fp16 file against the fp32 model: not every element is off by the maximum
    assert any(row[4] < row[0] for row in rows)


def test_findings_json_carries_the_representatives(model_run: Path) -> None:
    out = gero("findings", "--data-dir", str(model_run), "--format", "json")
    reps = [f["representative"] for f in json.loads(out.stdout)["findings"]]
    measured = [r for r in reps if r["max_abs_error"] is not None
                and math.isfinite(r["max_abs_error"])]
    assert measured
    for r in measured:
        assert r["median_abs_error"] <= r["p99_abs_error"] <= r["max_abs_error"]


def _old_run(root: Path, run_id: str) -> None:
    """A run as a gero before schema version 2 wrote it: no distribution columns."""
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    row: dict[str, Any] = {c: None for c in COLUMN_NAMES if c not in DISTRIBUTION_NAMES}
    row.update(observation_id="ab" * 32, run_id=run_id, suite="synthetic", case_id="c",
               op_type="Exp", check="agreement", backend="onnxruntime", optimization="all",
               result="divergence", max_abs_error=0.5, element_count=4, mismatch_count=1)
    schema = pa.schema([f for f in OBSERVATION_SCHEMA if f.name not in DISTRIBUTION_NAMES])
    pq.write_table(pa.Table.from_pylist([row], schema=schema),
                   directory / "observations.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": run_id, "suite": "synthetic",
                                                     "observation_count": 1}))


def test_an_older_run_reads_them_as_null(tmp_path: Path) -> None:
    _old_run(tmp_path, "20250101-000000-aaaaaa")
    view = open_run(tmp_path)
    assert view.query("SELECT max_abs_error, p99_abs_error, mean_scaled_error FROM obs") == [
        (0.5, None, None)]
    # the explorer's numbered view and the detail view too
    record = fetch_observation(open_source(tmp_path).connection, "ab" * 32, 0)
    assert record["p99_abs_error"] is None
    assert explained_value("p99_abs_error", record.fields).startswith(
        "- (recorded by a gero before error percentiles")
    # beside a newer run, in one store: NULL for the old rows, figures for the new
    out = gero("run", "--ops", "Exp", "--dtypes", "float32", "--backends", "onnxruntime",
               "--no-contracts", "--jobs", "1", "--repeats", "1", "--data-dir", str(tmp_path))
    assert out.returncode in (0, 1), out.stderr
    assert gero("compact", "--data-dir", str(tmp_path)).returncode == 0
    old = open_run(tmp_path, "20250101").query("SELECT p99_abs_error FROM obs")
    new = open_run(tmp_path).query("SELECT count(p99_abs_error), count(*) FROM obs")
    assert old == [(None,)] and new[0][0] == new[0][1] > 0


def test_the_report_shows_the_representatives(model_run: Path, tmp_path: Path) -> None:
    out = gero("report", "--data-dir", str(model_run), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "r.html").read_text()
    shown = text.split("|a − r| p99 / median</dt><dd>")[1:]
    # a representative that compared nothing (a path failed) has none
    numbers = [float(v) for v in (s.split(" / ")[0] for s in shown) if v != "—"]
    assert numbers and all(n >= 0 for n in numbers)
