"""Faults of a Dask cluster under a real ``gero run --executor dask``: a worker that joins
late with other versions, the scheduler killed mid-run, addresses that are not a Dask
scheduler. Every process listens on 127.0.0.1 only and is stopped by its test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from shared_helpers import DASK_SITE
from test_fault_injection import ENV, WAIT_S, gero, record, stored_ids, wait_for

from gero_runner.storage.reader import sighted_ids

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

OPS = ["--ops", "Exp,Relu", "--dtypes", "float32", "--repeats", "1"]


class Cluster:
    """A scheduler and workers, each a process group of its own, stopped by ``close``."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.processes: list[subprocess.Popen[bytes]] = []
        self.file = where / "scheduler.json"
        self.scheduler = self._start("scheduler", "--host", "127.0.0.1", "--port", "0",
                                     "--no-dashboard", "--scheduler-file", str(self.file),
                                     log="scheduler")
        wait_for(self.file.is_file, "the scheduler's address file")
        self.address = str(json.loads(self.file.read_text())["address"])

    def _start(self, *args: str, log: str, env: dict[str, str] | None = None
               ) -> subprocess.Popen[bytes]:
        with open(self.where / f"{log}.log", "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]],
                stdout=out, stderr=subprocess.STDOUT, env=env or ENV, start_new_session=True)
        self.processes.append(process)
        return process

    def worker(self, name: str, **env: str) -> None:
        """A worker of one thread; ``env`` reaches its ``sitecustomize`` (the faults)."""
        environment = {**ENV, **env,
                       "PYTHONPATH": os.pathsep.join([str(DASK_SITE), ENV["PYTHONPATH"]])}
        self._start("worker", "--scheduler-file", str(self.file), "--host", "127.0.0.1",
                    "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                    "--local-directory", str(self.where / name), log=name, env=environment)
        log = self.where / f"{name}.log"
        wait_for(lambda: b"Starting established connection" in log.read_bytes(),
                 f"worker {name} to join")

    def close(self) -> None:
        for p in reversed(self.processes):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    (tmp_path / "dask").mkdir()
    made = Cluster(tmp_path / "dask")
    try:
        yield made
    finally:
        made.close()


def _start_run(tmp_path: Path, cluster: Cluster, run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gero_cli", "run", "--data-dir", str(tmp_path / "data"), *OPS,
         "--run-id", run_id, "--executor", "dask", "--scheduler", cluster.address],
        cwd=tmp_path, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _versions(root: Path, run_id: str) -> set[str]:
    table = pq.read_table(root / "runs" / run_id / "observations.parquet",
                          columns=["backend", "backend_version"])
    return {f"{b} {v}" for b, v in zip(table.column(0).to_pylist(),
                                       table.column(1).to_pylist(), strict=True)}


def test_a_late_worker_with_other_versions_computes_nothing(tmp_path: Path,
                                                           cluster: Cluster) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    local = gero("run", "--data-dir", str(tmp_path / "local"), *OPS, "--run-id", "local",
                 "--jobs", "1", cwd=tmp_path, check=1)
    assert local.returncode == 1
    cluster.worker("on-time", GERO_TEST_GATE=str(gate), GERO_TEST_GATED="Exp,Relu")
    run = _start_run(tmp_path, cluster, "dask")
    wait_for(lambda: record(root, "dask").get("status") == "running", "the run to start")
    # Joins after the run checked the workers, with another onnxruntime; the worker that
    # was there holds its batches at the gate meanwhile.
    cluster.worker("late", GERO_TEST_FAKE_VERSIONS=json.dumps({"onnxruntime": "1.31.1"}))
    time.sleep(6.0)  # the run counts the workers every 5 s and sends the late one batches
    gate.touch()
    _, err = run.communicate(timeout=4 * WAIT_S)
    assert run.returncode == 1, err
    assert "Traceback" not in err
    assert record(root, "dask")["status"] == "complete"
    assert not any("1.31.1" in v for v in _versions(root, "dask"))
    assert "has onnxruntime 1.31.1 (this machine " in err, err
    assert sorted(sighted_ids(root, "dask")) == sorted(sighted_ids(tmp_path / "local", "local"))
    ids = stored_ids(root)
    assert len(ids) == len(set(ids))


def test_a_cluster_of_other_versions_only_stops_the_run_with_its_cases_kept(
        tmp_path: Path, cluster: Cluster) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    cluster.worker("on-time", GERO_TEST_GATE=str(gate), GERO_TEST_GATE_AFTER="4")
    run = _start_run(tmp_path, cluster, "dask")
    wait_for(lambda: bool(record(root, "dask").get("case_count")), "a first save")
    cluster.worker("late", GERO_TEST_FAKE_VERSIONS=json.dumps({"onnxruntime": "1.31.1"}))
    os.killpg(cluster.processes[1].pid, signal.SIGKILL)  # the on-time worker goes away
    _, err = run.communicate(timeout=4 * WAIT_S)
    assert run.returncode == 2, err
    assert "Traceback" not in err
    assert "no Dask worker left with this machine's versions" in err
    assert "gero run --resume dask" in err
    saved = record(root, "dask")
    assert saved["status"] == "interrupted" and int(str(saved["case_count"])) > 0
    assert not any("1.31.1" in v for v in _versions(root, "dask"))


def test_the_scheduler_killed_mid_run_is_one_sentence_and_a_final_save(
        tmp_path: Path, cluster: Cluster) -> None:
    root, gate = tmp_path / "data", tmp_path / "gate"
    cluster.worker("only", GERO_TEST_GATE=str(gate), GERO_TEST_GATE_AFTER="4")
    run = _start_run(tmp_path, cluster, "dask")
    wait_for(lambda: bool(record(root, "dask").get("case_count")), "a first save")
    os.killpg(cluster.scheduler.pid, signal.SIGKILL)
    _, err = run.communicate(timeout=4 * WAIT_S)
    assert run.returncode == 2, err[-3000:]
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line.startswith("gero:")]
    assert len(lines) == 1 and "Dask scheduler" in lines[0], err
    assert "gero run --resume dask" in lines[0]
    saved = record(root, "dask")
    assert saved["status"] == "interrupted"
    kept = sighted_ids(root, "dask")
    assert kept and len(kept) == len(set(kept))


@contextlib.contextmanager
def _not_dask_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and answers nothing (not a Dask scheduler)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for s in held:
            s.close()
        server.close()


@pytest.mark.parametrize("address", ["not-dask", "not a url", "tcp://127.0.0.1:1"])
def test_an_address_that_is_no_dask_scheduler_fails_within_seconds(
        tmp_path: Path, address: str) -> None:
    with _not_dask_server() as port:
        given = f"tcp://127.0.0.1:{port}" if address == "not-dask" else address
        start = time.monotonic()
        done = gero("run", "--data-dir", str(tmp_path / "data"), *OPS, "--executor", "dask",
                    "--scheduler", given, cwd=tmp_path, check=2)
        assert time.monotonic() - start < 25.0
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("gero: error: ") and "Dask scheduler" in line, line
    assert not (tmp_path / "data" / "runs").exists()
