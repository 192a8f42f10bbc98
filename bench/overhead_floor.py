"""The least time outside the backends that any design of the runner can reach here.

Evaluates the default synthetic suite in one process and times, apart from everything else,
three things no design can drop: generating the cases (seeded graphs, inputs, the float64
formulas), comparing each distinct pair of tensors once, and writing each case's evidence
directory (model.onnx, tensors, manifest; atomic rename). Their sum over itself plus the
backend time is a lower bound of the share of wall time outside the backends at --jobs 1,
before observation rows and ids, the contract laws' own work, the worker pool and Parquet.
Issue 2's target for that share is 20 %.

    python bench/overhead_floor.py [--no-contracts] [--repeats 3] [--dir PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gero_runner.checks import task
from gero_runner.checks.contracts import laws
from gero_runner.execution import context, evaluate
from gero_runner.run import RunRequest, collect_cases
from gero_runner.storage.artifacts import EvidenceWriter


def measure(checks: tuple[str, ...], scratch: Path) -> dict[str, Any]:
    request = RunRequest(checks=checks)
    collect_cases(request)  # imports and caches out of the way: the floor stays a floor
    start = time.perf_counter()
    cases = collect_cases(request)
    generate_s = time.perf_counter() - start

    compare_s = [0.0]
    writers: list[EvidenceWriter] = []

    def timed(compare: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            try:
                return compare(*args, **kwargs)
            finally:
                compare_s[0] += time.perf_counter() - begin
        return wrapper

    write = EvidenceWriter.write

    def keep(self: EvidenceWriter, data_root: Path) -> str:
        writers.append(self)
        return write(self, data_root)

    # Every compare() a case makes goes through one of these two names.
    patched = [(context, "compare"), (laws, "compare"), (EvidenceWriter, "write")]
    saved = [getattr(owner, name) for owner, name in patched]
    for (owner, name), wrapped in zip(patched, [timed(saved[0]), timed(saved[1]), keep],
                                      strict=True):
        setattr(owner, name, wrapped)
    settings = evaluate.RunSettings(
        data_root=tempfile.mkdtemp(prefix="run-", dir=scratch), checks=checks)
    try:
        start = time.perf_counter()
        backend_s = sum(task.evaluate_case(c, settings).backend_seconds for c in cases)
        loop_s = time.perf_counter() - start
    finally:
        for (owner, name), value in zip(patched, saved, strict=True):
            setattr(owner, name, value)

    # The same evidence again, into a fresh root: packing, manifest and files, nothing else.
    root = Path(tempfile.mkdtemp(prefix="evidence-", dir=scratch))
    start = time.perf_counter()
    for writer in writers:
        writer.write(root)
    evidence_s = time.perf_counter() - start

    floor_s = generate_s + compare_s[0] + evidence_s
    return {"cases": len(cases), "backend_s": round(backend_s, 2),
            "generate_s": round(generate_s, 2), "compare_s": round(compare_s[0], 2),
            "evidence_write_s": round(evidence_s, 2),
            "floor_share": round(floor_s / (floor_s + backend_s), 3),
            "measured_share": round(1 - backend_s / (generate_s + loop_s), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-contracts", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write (default: the temp dir)")
    args = parser.parse_args()
    checks = () if args.no_contracts else ("contracts", "variants")
    with tempfile.TemporaryDirectory(prefix="gero-floor-", dir=args.dir) as tmp:
        runs = [measure(checks, Path(tmp)) for _ in range(args.repeats)]
    summary = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    summary["floor_shares"] = [r["floor_share"] for r in runs]
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
