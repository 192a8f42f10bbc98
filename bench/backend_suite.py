"""Benchmark of the onnx-backend suite: gero's full evidence against a plain ORT loop.

The full run executes every case through the four ORT levels and the ReferenceEvaluator,
compares each against onnx's expected outputs, writes the evidence and the Parquet rows.
The plain loop builds one ORT session at ``all`` per case, runs it once and calls
``numpy.testing.assert_allclose`` with the case's rtol/atol: the least a suite can do.
Their ratio is the cost of the evidence. Target (issue 7): the full run within 120 s with
``--jobs 2`` on 2 cores. Timings on a shared machine are disturbed by other processes.

    python bench/backend_suite.py [--jobs 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from gero_runner.cases import onnx_backend
from gero_runner.run import RunRequest, execute


def plain_loop(limit: int | None) -> dict[str, float]:
    """ORT ``all`` only, one run per case, compared with assert_allclose; no evidence."""
    import onnxruntime as ort

    start = time.perf_counter()
    testcases = onnx_backend.collect()[:limit]
    collected = time.perf_counter() - start
    ops = onnx_backend.op_types(testcases)
    counts = {"passed": 0, "failed": 0, "error": 0}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 4
    for tc in testcases:
        case = onnx_backend.to_case(tc, ops[tc.name])
        if case.expected is None:
            counts["error"] += 1
            continue
        try:
            session = ort.InferenceSession(case.model, options,
                                           providers=["CPUExecutionProvider"])
            outputs = session.run(None, case.inputs)
        except Exception:
            counts["error"] += 1
            continue
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for actual, expected in zip(outputs, case.expected.values(), strict=True):
                    np.testing.assert_allclose(actual, expected, rtol=tc.rtol, atol=tc.atol)
            counts["passed"] += 1
        except (AssertionError, ValueError, TypeError):
            counts["failed"] += 1
    wall = time.perf_counter() - start
    return {"cases": len(testcases), "wall_s": round(wall, 2),
            "collect_s": round(collected, 2), **counts}


def full_run(jobs: int, limit: int | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gero-bench-") as tmp:
        start = time.perf_counter()
        record = execute(RunRequest(suite="onnx-backend", data_root=Path(tmp), jobs=jobs,
                                    limit=limit))
        wall = time.perf_counter() - start
    return {"jobs": jobs, "cases": record.case_count, "observations": record.observation_count,
            "wall_s": round(wall, 2), "backend_s": round(record.backend_seconds, 2),
            "counts": record.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    plain = plain_loop(args.limit)
    full = full_run(args.jobs, args.limit)
    print(json.dumps({"plain_loop_ort_all": plain, "gero_full": full,
                      "cost_of_evidence": round(float(full["wall_s"]) / plain["wall_s"], 2),  # type: ignore[arg-type]
                      "target_s": 120}, indent=2))


if __name__ == "__main__":
    main()
