"""A small real run end to end: paths, Parquet store read back through DuckDB, robustness."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import duckdb
import pytest
from shared_helpers import interrupted_after

from gero_runner import run as run_module
from gero_runner.checks import task
from gero_runner.errors import GeroError
from gero_runner.run import RunRequest, execute
from gero_runner.storage.reader import sighted_ids
from gero_runner.storage.store import DataRoot
from gero_runner.tolerances import Tolerances

OPS = ["Exp", "Relu"]


def _request(root: Path, **kw: object) -> RunRequest:
    base: dict[str, object] = {"data_root": root, "ops": OPS, "dtypes": ["float32"],
                               "repeats": 1, "checks": ()}
    base.update(kw)
    return RunRequest(**base)  # type: ignore[arg-type]


def _ids(root: Path, run_id: str) -> list[str]:
    return sorted(sighted_ids(root, run_id))


def test_small_run_writes_rows_artifacts_and_record(tmp_path: Path) -> None:
    record = execute(_request(tmp_path, jobs=1))
    assert record.status == "complete" and record.case_count >= 4
    obs = DataRoot(tmp_path).run_dir(record.run_id) / "observations.parquet"
    rows = duckdb.execute(
        f"""SELECT "check", backend, optimization, result, artifact_path, rtol, atol
            FROM read_parquet('{obs}')"""
    ).fetchall()
    assert len(rows) == record.observation_count
    checks = {(c, b, o) for c, b, o, *_ in rows}
    for level in ("disable_all", "basic", "extended", "all"):
        assert ("agreement", "onnxruntime", level) in checks
        assert ("analytic", "onnxruntime", level) in checks
    assert ("analytic", "onnx-reference", "-") in checks
    assert all(r[3] in {"passed", "divergence", "contract_issue", "execution"} for r in rows)
    assert {(r[5], r[6]) for r in rows} == {(1e-5, 1e-6)}
    for artifact in {r[4] for r in rows}:
        directory = tmp_path / artifact
        assert (directory / "manifest.json").is_file() and (directory / "model.onnx").is_file()
        assert (directory / "test_data_set_0" / "input_0.pb").is_file()


@pytest.mark.slow
def test_jobs_1_and_2_give_identical_observation_ids(tmp_path: Path) -> None:
    one = execute(_request(tmp_path / "a", jobs=1))
    two = execute(_request(tmp_path / "b", jobs=2))
    assert _ids(tmp_path / "a", one.run_id) == _ids(tmp_path / "b", two.run_id)


def test_rerun_into_same_root_is_deduplicated(tmp_path: Path) -> None:
    first = execute(_request(tmp_path))
    second = execute(_request(tmp_path))
    assert first.new_observation_count == first.observation_count
    assert second.new_observation_count == 0
    assert _ids(tmp_path, first.run_id) == _ids(tmp_path, second.run_id)


def test_tolerance_override_is_stored(tmp_path: Path) -> None:
    record = execute(_request(tmp_path, tolerances=Tolerances.with_overrides(
        {"float32": 1e-3}, {"float32": 1e-4})))
    obs = DataRoot(tmp_path).run_dir(record.run_id) / "observations.parquet"
    got = duckdb.execute(f"SELECT DISTINCT rtol, atol FROM read_parquet('{obs}')").fetchall()
    assert got == [(1e-3, 1e-4)]


def _crash_on_relu(case, settings):  # type: ignore[no-untyped-def]
    if case.op_type == "Relu":
        os.kill(os.getpid(), signal.SIGSEGV)
    return _real_evaluate(case, settings)


def _hang_on_relu(case, settings):  # type: ignore[no-untyped-def]
    if case.op_type == "Relu":
        time.sleep(60)
    return _real_evaluate(case, settings)


_real_evaluate = task.evaluate_case


@pytest.mark.parametrize(("fake", "message"), [(_crash_on_relu, "SIGSEGV"),
                                               (_hang_on_relu, "timed out")])
@pytest.mark.usefixtures("fork_workers")
@pytest.mark.slow
def test_crashing_or_hanging_case_becomes_execution_and_run_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: object, message: str) -> None:
    # Workers are forked, so they inherit the substituted evaluator.
    monkeypatch.setattr(task, "evaluate_case", fake)
    record = execute(_request(tmp_path, jobs=2, timeout_s=3.0))
    assert record.status == "complete"
    obs = DataRoot(tmp_path).run_dir(record.run_id) / "observations.parquet"
    rows = duckdb.execute(f"SELECT op_type, result, reason FROM read_parquet('{obs}')").fetchall()
    relu = [r for r in rows if r[0] == "Relu"]
    assert relu and all(r[1] == "execution" and message in r[2] for r in relu)
    assert any(r[0] == "Exp" and r[1] == "passed" for r in rows)


def test_ctrl_c_keeps_finished_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "run_cases", interrupted_after(2))
    # Ctrl-C is a status of the returned record, not an exception carrying it.
    kept = execute(_request(tmp_path))
    assert kept.status == "interrupted" and kept.case_count == 2
    root = DataRoot(tmp_path)
    (run_id,) = root.run_ids()
    record = root.read_run(run_id)
    assert run_id == kept.run_id
    assert record["status"] == "interrupted" and record["case_count"] == 2


@pytest.mark.parametrize(("change", "message"), [
    ({"threads": 0}, "threads (--threads) must be a whole number of at least 1, got 0"),
    ({"jobs": -1}, "jobs (--jobs) must be"),
    ({"repeats": 1.5}, "repeats (--repeats) must be"),
    ({"limit": -1}, "limit (--limit) must be a whole number of at least 1"),
    ({"timeout_s": float("nan")}, "timeout (--timeout) must be a positive number"),
    ({"dtypes": ["bfloat16"]}, "unknown dtype(s) bfloat16"),
    ({"suite": "nope"}, "unknown suite 'nope'"),
    ({"run_id": "a/b"}, "must be a plain name"),
])
def test_the_request_refuses_bad_values_from_python_too(
        tmp_path: Path, change: dict[str, object], message: str) -> None:
    # Before, only the CLI checked: threads=0 from Python ran and was recorded as 0.
    with pytest.raises(GeroError) as info:
        _request(tmp_path, **change)
    assert message in str(info.value)
    assert not (tmp_path / "runs").exists()
