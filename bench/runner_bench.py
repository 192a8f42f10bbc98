"""Benchmark of the batch runner on the default synthetic suite.

Reports wall time with --jobs 1 and --jobs 2, cases per second, the speed-up, and the share
of wall time spent outside the backends, split into checks (comparisons, laws, graph
variants, rows), evidence (files, observation ids) and the parent (case generation, worker
pool, Parquet). Targets (issue 2): <= 90 s with --jobs 2, speed-up >= 1.7x, outside < 20%.

    python bench/runner_bench.py [--ops A,B] [--no-contracts]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from gero_runner.run import RunRequest, execute


def measure(root: Path, jobs: int, ops: list[str], checks: tuple[str, ...]) -> dict[str, Any]:
    # Every run writes a fresh data root, kept until the bench ends: deleting ~6,000 files
    # makes the file system slow for a while and would disturb the next run's evidence.
    data_root = Path(tempfile.mkdtemp(prefix=f"jobs{jobs}-", dir=root))
    start = time.perf_counter()
    record = execute(RunRequest(data_root=data_root, jobs=jobs, ops=ops, checks=checks))
    wall = time.perf_counter() - start
    # Times are summed over workers; the machine offers wall * jobs seconds in all.
    budget = wall * jobs
    outside = max(0.0, 1.0 - record.backend_seconds / budget)
    checks = record.case_seconds - record.backend_seconds - record.evidence_seconds
    return {"jobs": jobs, "cases": record.case_count, "observations": record.observation_count,
            "wall_s": round(wall, 2), "cases_per_s": round(record.case_count / wall, 1),
            "backend_s": round(record.backend_seconds, 2),
            "outside_backends_share": round(outside, 3),
            # Where the time outside the backends goes:
            "checks_share": round(checks / budget, 3),  # comparisons, laws, graphs, rows
            "evidence_share": round(record.evidence_seconds / budget, 3),  # files, row ids
            "parent_share": round(1.0 - record.case_seconds / budget, 3),  # cases, pool, store
            "evidence_s": round(record.evidence_seconds, 2),
            "store_s": round(record.store_seconds, 2), "counts": record.counts}


def disk_probe(root: Path, count: int = 300) -> float:
    """Microseconds to create one small file or directory here: evidence is ~8 of them per
    case, and on a virtual machine this cost varies several-fold from hour to hour."""
    probe = Path(tempfile.mkdtemp(prefix="probe-", dir=root))
    start = time.perf_counter()
    for i in range(count):
        (probe / f"d{i}").mkdir()
        (probe / f"d{i}" / "f").write_bytes(b"x" * 2048)
    return round((time.perf_counter() - start) / (2 * count) * 1e6, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="")
    parser.add_argument("--no-contracts", action="store_true")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per job count, interleaved; medians are reported")
    args = parser.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    checks = () if args.no_contracts else ("contracts", "variants")
    # Interleave the job counts so that machine noise hits both alike.
    runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="gero-bench-") as tmp:
        disk = [disk_probe(Path(tmp))]
        for _ in range(args.repeats):
            for jobs in (1, 2):
                runs[jobs].append(measure(Path(tmp), jobs, ops, checks))
        disk.append(disk_probe(Path(tmp)))
    summary = {f"jobs_{j}": _median_run(r) for j, r in runs.items()}
    summary["walls_s"] = {f"jobs_{j}": [r["wall_s"] for r in rs] for j, rs in runs.items()}
    summary["speedup"] = round(summary["jobs_1"]["wall_s"] / summary["jobs_2"]["wall_s"], 2)
    summary["disk_us_per_file_before_after"] = disk
    print(json.dumps(summary, indent=2))


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time."""
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


if __name__ == "__main__":
    main()
