"""Findings and the tolerance what-if on a large data root, computed in DuckDB.

Times (median of --repeat after one warm-up): opening the run, grouping every non-passed
observation into findings (the members table and the findings list), the same once more
with the result kept under the data root, reading it back (what every later open does),
and one what-if re-grade per tolerance change (as the explorer's dialog does on each key).

    .venv/bin/python bench/make_million.py --from DATA --to /tmp/gero-million
    .venv/bin/python bench/findings_bench.py --data-dir /tmp/gero-million
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gero.query.findings import (
    build_members,
    cache_files,
    compute_findings,
    non_passed_count,
    read_findings,
)
from gero.query.source import open_source
from gero.query.whatif import Override, prepare, what_if

CHANGES = (
    {"float16": Override("float16", rtol=1e-2)},
    {"float16": Override("float16", rtol=1e-2, atol=1e-3)},
    {"float32": Override("float32", rtol=1e-6)},
    {"float64": Override("float64", rtol=1e-9, atol=1e-10)},
)


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms (min {min(samples) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/gero-million"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    source = open_source(args.data_dir)
    opened = time.perf_counter() - start
    rows = source.query("SELECT count(*) FROM obs")[0][0]
    print(f"run {source.run_id}: {rows:,} observations, {non_passed_count(source):,} not "
          f"passed; opened in {opened * 1000:.0f} ms")
    findings_s: list[float] = []
    for i in range(args.repeat + 1):
        start = time.perf_counter()
        build_members(source)
        findings = read_findings(source)
        if i:
            findings_s.append(time.perf_counter() - start)
    print(f"findings computed: {len(findings)} in {_median_ms(findings_s)}")
    files = cache_files(source)
    for path in files or ():
        path.unlink(missing_ok=True)
    start = time.perf_counter()
    compute_findings(source)
    print(f"findings computed and kept (first open): {(time.perf_counter() - start) * 1000:.0f} ms")
    cached_s: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        compute_findings(source)
        cached_s.append(time.perf_counter() - start)
    print(f"findings read back (every later open): {_median_ms(cached_s)}")
    start = time.perf_counter()
    prepare(source)
    print(f"what-if preparation (once per run): {(time.perf_counter() - start) * 1000:.0f} ms")
    for change in CHANGES:
        samples = []
        for i in range(args.repeat + 1):
            start = time.perf_counter()
            result = what_if(source, change)
            if i:
                samples.append(time.perf_counter() - start)
        label = ", ".join(f"{o.dtype} rtol={o.rtol} atol={o.atol}" for o in change.values())
        print(f"what-if {label}: {_median_ms(samples)} ({result.to_passed} to passed, "
              f"{result.to_divergence} to divergence, {result.undetermined} undetermined)")


if __name__ == "__main__":
    main()
