"""Benchmark of the batch runner on the default synthetic suite.

Reports wall time with --jobs 1 and --jobs 2, cases per second, the speed-up, and the share
of wall time spent outside the backends (case generation, hashing, artifacts, Parquet,
process overhead). Targets (issue 2): <= 90 s with --jobs 2, speed-up >= 1.7x, outside < 20%.

    python bench/runner_bench.py [--ops A,B] [--no-contracts]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from gero_runner.run import RunRequest, execute


def measure(jobs: int, ops: list[str], checks: tuple[str, ...]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="gero-bench-") as tmp:
        start = time.perf_counter()
        record = execute(RunRequest(data_root=Path(tmp), jobs=jobs, ops=ops, checks=checks))
        wall = time.perf_counter() - start
    # Backend time is summed over workers; per worker it is at most the wall time.
    outside = max(0.0, 1.0 - record.backend_seconds / (wall * jobs))
    return {"jobs": jobs, "cases": record.case_count, "observations": record.observation_count,
            "wall_s": round(wall, 2), "cases_per_s": round(record.case_count / wall, 1),
            "backend_s": round(record.backend_seconds, 2),
            "outside_backends_share": round(outside, 3), "counts": record.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="")
    parser.add_argument("--no-contracts", action="store_true")
    args = parser.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    checks = () if args.no_contracts else ("contracts", "variants")
    one = measure(1, ops, checks)
    two = measure(2, ops, checks)
    print(json.dumps({"jobs_1": one, "jobs_2": two,
                      "speedup": round(one["wall_s"] / two["wall_s"], 2)}, indent=2))


if __name__ == "__main__":
    main()
