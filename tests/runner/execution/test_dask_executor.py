"""``gero run --executor dask`` against a real Dask cluster on loopback.

A scheduler and two single-threaded workers (``dask scheduler`` / ``dask worker``, no
dashboards, 127.0.0.1 only) are started once for the module and stopped by its finalizer.
A small suite run through them must store what a local run stores (observation ids and
evidence, byte for byte); a case that kills its worker process and one that hangs become
``execution`` observations and the run completes. The faults live in the workers only
(``tests/support/dask_site/sitecustomize.py``, driven by a JSON file).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest
from shared_helpers import DASK_SITE

import gero_runner
import gero_tui
from gero_runner.errors import GeroError
from gero_runner.execution import cluster

PATHS = [str(Path(gero_tui.__file__).parents[1]), str(Path(gero_runner.__file__).parents[1])]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [*PATHS, os.environ.get("PYTHONPATH", "")])}
OPS = ["--ops", "Exp,Relu", "--dtypes", "float32", "--repeats", "1"]
HANG_TIMEOUT_S = 20
"""--timeout of the run with a hanging case: what the hang costs, and what every other case
must stay under on a loaded machine (its first case in a fresh process included)."""
WAIT_S = 90.0
"""Bound on any wait: far above what a loaded two-core machine needs."""


def _dask(*args: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_" + args[0],
                                 *args[1:]], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {WAIT_S:g} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    pytest.importorskip("distributed")
    where = tmp_path_factory.mktemp("dask")
    faults = where / "faults.json"
    faults.write_text("{}")
    scheduler_file = where / "scheduler.json"
    processes = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                       "--scheduler-file", str(scheduler_file), log=where / "scheduler.log",
                       env=ENV)]
    worker_env = {**ENV, "GERO_TEST_FAULTS": str(faults),
                  "PYTHONPATH": os.pathsep.join([str(DASK_SITE), ENV["PYTHONPATH"]])}
    try:
        _wait_for(scheduler_file.is_file, "the scheduler's address file")
        for i in range(2):
            processes.append(_dask(
                "worker", "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1",
                "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                "--local-directory", str(where / f"worker{i}"),
                log=where / f"worker{i}.log", env=worker_env))
        logs = [where / f"worker{i}.log" for i in range(2)]
        _wait_for(lambda: all(b"Starting established connection" in log.read_bytes()
                              for log in logs), "two workers to join")
        address = json.loads(scheduler_file.read_text())["address"]
        yield SimpleNamespace(address=address, faults=faults, where=where)
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)


def gero(*args: str, cwd: Path, env_scheduler: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    env = ENV if env_scheduler is None else {**ENV, cluster.SCHEDULER_ENV: env_scheduler}
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=WAIT_S, env=env)


def rows(root: Path, run_id: str) -> list[dict[str, Any]]:
    table = pq.read_table(root / "runs" / run_id / "observations.parquet",
                          columns=["observation_id", "case_id", "result", "reason"])
    return table.to_pylist()  # type: ignore[no-any-return]


def evidence(root: Path) -> dict[str, str]:
    """Every evidence file under the data root: its path and the hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((root / "artifacts").rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("local")
    done = gero("run", "--data-dir", str(root), "--run-id", "local", *OPS, "--jobs", "2",
                cwd=root)
    assert done.returncode == 1, done.stderr  # the Relu cases have findings
    return root


@pytest.mark.slow
def test_a_dask_run_stores_what_a_local_run_stores(dask_cluster: SimpleNamespace,
                                                   local_run: Path, tmp_path: Path) -> None:
    done = gero("run", "--data-dir", str(tmp_path), "--run-id", "dask", *OPS,
                "--executor", "dask", "--scheduler", dask_cluster.address, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    ours, theirs = rows(tmp_path, "dask"), rows(local_run, "local")
    assert sorted(r["observation_id"] for r in ours) == sorted(
        r["observation_id"] for r in theirs)
    assert all(r["result"] != "execution" for r in ours)
    assert evidence(tmp_path) == evidence(local_run)
    assert (sorted((tmp_path / "runs/dask/cases.txt").read_text().splitlines())
            == sorted((local_run / "runs/local/cases.txt").read_text().splitlines()))


@pytest.mark.slow
def test_a_case_that_kills_or_hangs_its_worker_is_an_execution_observation(
        dask_cluster: SimpleNamespace, local_run: Path, tmp_path: Path) -> None:
    cases = (local_run / "runs/local/cases.txt").read_text().splitlines()
    crash, hang = cases[0], cases[3]
    dask_cluster.faults.write_text(json.dumps({"crash": [crash], "hang": [hang]}))
    try:
        done = gero("run", "--data-dir", str(tmp_path), "--run-id", "faults", *OPS,
                    "--timeout", str(HANG_TIMEOUT_S), "--executor", "dask", cwd=tmp_path,
                    env_scheduler=dask_cluster.address)
    finally:
        dask_cluster.faults.write_text("{}")
    assert done.returncode == 1, done.stderr
    record = json.loads((tmp_path / "runs/faults/run.json").read_text())
    assert record["status"] == "complete" and record["case_count"] == len(cases)
    ours = rows(tmp_path, "faults")
    by_case = {c: [r for r in ours if r["case_id"] == c] for c in cases}
    assert [r["result"] for r in by_case[crash]] == ["execution"]
    assert "exited with code 3" in by_case[crash][0]["reason"]
    assert [r["result"] for r in by_case[hang]] == ["execution"]
    assert f"timed out after {HANG_TIMEOUT_S} s" in by_case[hang][0]["reason"]
    # Every other case is what the local run found, id for id.
    local = rows(local_run, "local")
    differ = [(c, [r["reason"][:200] for r in ours
                   if r["case_id"] == c and r["result"] != "passed"])
              for c in cases if c not in (crash, hang)
              and {r["observation_id"] for r in ours if r["case_id"] == c}
              != {r["observation_id"] for r in local if r["case_id"] == c}]
    assert not differ


def test_a_batch_whose_dask_worker_died_is_execution_rows() -> None:
    distributed = pytest.importorskip("distributed")
    from gero_runner.cases.synthetic.registry import cases_for_request
    from gero_runner.request import RunRequest

    cases = cases_for_request(RunRequest(ops=["Exp"], dtypes=["float32"]))[:2]

    class Lost:
        def result(self) -> None:
            raise distributed.KilledWorker("gero-batch-0",
                                           SimpleNamespace(address="tcp://127.0.0.1:1"), 3)

    results = cluster._batch_results(Lost(), [1, 0], cases, distributed)
    assert not isinstance(results, cluster.Refused)
    assert [i for i, _ in results] == [1, 0]
    for index, result in results:
        (row,) = result.rows
        assert (row.result, row.case_id, result.evidence) == (
            "execution", cases[index].case_id, None)
        assert "Dask worker running this case's batch died" in row.reason
        assert "KilledWorker" in row.reason


def test_dask_options_say_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)
    with pytest.raises(GeroError, match="GERO_DASK_SCHEDULER"):
        cluster.DaskCluster(None)
    if importlib.util.find_spec("distributed") is not None:
        with pytest.raises(GeroError, match="bad Dask scheduler address 'nonsense://x'"):
            cluster.DaskCluster("nonsense://x")
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were missing
    with pytest.raises(GeroError, match=r"pip install 'gero\[dask\]'"):
        cluster.DaskCluster("tcp://127.0.0.1:1")
