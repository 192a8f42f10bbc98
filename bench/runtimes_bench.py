"""Benchmark of the default synthetic suite across runtimes.

Runs the suite at --jobs 2 with ONNX Runtime alone, then with ONNX Runtime, OpenVINO and
tract (whichever are installed), and reports both wall times, their ratio (target: ≤ 3×)
and each runtime setting's median session build and run times (context, not a ranking).

    python bench/runtimes_bench.py [--jobs 2] [--ops A,B] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gero.query.runtimes import timings
from gero_runner import backends
from gero_runner.run import RunRequest, execute
from gero_runner.storage.reader import open_run


def measure(root: Path, runtimes: tuple[str, ...], jobs: int, ops: list[str]
            ) -> dict[str, Any]:
    data_root = Path(tempfile.mkdtemp(prefix="-".join(runtimes) + "-", dir=root))
    start = time.perf_counter()
    record = execute(RunRequest(data_root=data_root, jobs=jobs, ops=ops, backends=runtimes))
    wall = time.perf_counter() - start
    view = open_run(data_root, record.run_id)
    return {"backends": list(runtimes), "cases": record.case_count,
            "observations": record.observation_count, "wall_s": round(wall, 2),
            "backend_s": round(record.backend_seconds, 2),
            "timings": [{"backend": t.backend, "setting": t.optimization, "cases": t.cases,
                         "build_median_ms": _round(t.build_median_ms),
                         "run_median_ms": _round(t.run_median_ms)} for t in timings(view)]}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ops", default="")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration")
    args = parser.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    every = backends.installed_runtimes()
    with tempfile.TemporaryDirectory(prefix="gero-runtimes-bench-") as tmp:
        results: dict[str, list[dict[str, Any]]] = {"ort": [], "all": []}
        for _ in range(args.repeat):  # alternated, so both see the same machine load
            results["ort"].append(measure(Path(tmp), ("onnxruntime",), args.jobs, ops))
            results["all"].append(measure(Path(tmp), every, args.jobs, ops))
    ort = statistics.median(r["wall_s"] for r in results["ort"])
    allr = statistics.median(r["wall_s"] for r in results["all"])
    print(json.dumps({"jobs": args.jobs, "runtimes": list(every), "ort_only_wall_s": ort,
                      "all_runtimes_wall_s": allr, "ratio": round(allr / ort, 2),
                      "target_ratio": 3.0, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
