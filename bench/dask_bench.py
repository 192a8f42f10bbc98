"""Benchmark: the onnx-backend suite on the local pool against a Dask cluster, one machine.

Starts a Dask scheduler and two single-threaded workers on 127.0.0.1 (no dashboards; the
workers preload ``gero_runner.execution.cluster``, as the README recommends), then runs
``gero run --suite onnx-backend`` alternately with ``--jobs 2`` (the local pool) and with
``--executor dask``, each into a fresh data root, and reports each command's wall time, the
medians and their ratio. Target (issue 18): Dask within 1.25x of the local pool. It also
checks that both executors stored the same observation ids. The cluster is stopped at the
end. Timings on a shared machine are disturbed by other processes: the load average is
printed before and after.

    python bench/dask_bench.py [--rounds 2] [--limit N] [--backends onnxruntime]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq


def start_cluster(where: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A scheduler and two single-threaded workers on loopback; their address."""
    address_file = where / "scheduler.json"

    def dask(*args: str, log: str) -> subprocess.Popen[bytes]:
        with open(where / log, "wb") as out:
            return subprocess.Popen([sys.executable, "-m", f"distributed.cli.dask_{args[0]}",
                                     *args[1:]], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    processes = [dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(address_file), log="scheduler.log")]
    wait(address_file.is_file, "the scheduler")
    for i in range(2):
        processes.append(dask("worker", "--scheduler-file", str(address_file), "--host",
                              "127.0.0.1", "--nthreads", "1", "--no-dashboard", "--preload",
                              "gero_runner.execution.cluster", "--local-directory",
                              str(where / f"worker{i}"), log=f"worker{i}.log"))
    logs = [where / f"worker{i}.log" for i in range(2)]
    wait(lambda: all(b"Starting established connection" in p.read_bytes() for p in logs),
         "two workers")
    return json.loads(address_file.read_text())["address"], processes


def stop_cluster(processes: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(processes):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def wait(predicate: object, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def run(root: Path, extra: list[str], limit: int | None, runtimes: str) -> float:
    command = [sys.executable, "-m", "gero_cli", "run", "--suite", "onnx-backend",
               "--backends", runtimes, "--data-dir", str(root), "--run-id", "bench", "-q",
               *extra]
    if limit is not None:
        command += ["--limit", str(limit)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return wall


def compare(local: Path, dask: Path) -> str:
    """Whether both runs stored the same observation ids; where not, which cases differ
    and how many of those hit the per-case timeout in either run (a loaded machine)."""
    def by_case(root: Path) -> dict[str, tuple[set[str], bool]]:
        table = pq.read_table(root / "runs/bench/observations.parquet",
                              columns=["case_id", "observation_id", "reason"])
        cases: dict[str, tuple[set[str], bool]] = {}
        for case, oid, reason in zip(*(table.column(i).to_pylist() for i in range(3)),
                                     strict=True):
            ids, timed_out = cases.get(case, (set(), False))
            ids.add(oid)
            cases[case] = (ids, timed_out or "timed out after" in reason)
        return cases

    a, b = by_case(local), by_case(dask)
    differ = sorted(c for c in set(a) | set(b) if a.get(c, (set(),))[0] != b.get(c, (set(),))[0])
    if not differ:
        return "same observation ids"
    timeouts = [c for c in differ if a.get(c, (set(), False))[1] or b.get(c, (set(), False))[1]]
    return (f"observation ids differ in {len(differ)} case(s), {len(timeouts)} of which timed "
            f"out in one run: {', '.join(differ[:4])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--backends", default="onnxruntime",
                        help="runtimes under test (default: ONNX Runtime, as the README's "
                        "onnx-backend figure)")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="gero-dask-bench-") as tmp:
        where = Path(tmp)
        start = time.perf_counter()
        address, processes = start_cluster(where)
        print(f"cluster up in {time.perf_counter() - start:.1f} s at {address}")
        times: dict[str, list[float]] = {"local": [], "dask": []}
        try:
            for r in range(args.rounds):
                order = ["local", "dask"] if r % 2 == 0 else ["dask", "local"]
                for name in order:
                    extra = (["--jobs", "2"] if name == "local"
                             else ["--executor", "dask", "--scheduler", address])
                    root = where / f"{name}-{r}"
                    wall = run(root, extra, args.limit, args.backends)
                    times[name].append(wall)
                    record = json.loads((root / "runs/bench/run.json").read_text())
                    print(f"round {r} {name:5}: {wall:7.1f} s "
                          f"({record['case_count']} cases, run wall "
                          f"{record['wall_seconds']:.1f} s)", flush=True)
                print(f"round {r}: {compare(where / f'local-{r}', where / f'dask-{r}')}")
        finally:
            stop_cluster(processes)
    local, dask = statistics.median(times["local"]), statistics.median(times["dask"])
    print(f"median local pool (--jobs 2): {local:.1f} s; Dask (2 workers x 1 thread): "
          f"{dask:.1f} s; ratio {dask / local:.2f} (target <= 1.25)")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
