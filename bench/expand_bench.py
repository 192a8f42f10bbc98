"""Benchmark of expanding the default synthetic suite into concrete cases.

The expansion runs in the parent before any worker starts, so it is wall time a user waits
for on every `gero run`. Target: under 3 s (it used to be a wall-clock assertion in the unit
tests, which a loaded machine turned red).

    python bench/expand_bench.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gero_runner.cases.synthetic import registry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times = []
    cases = 0
    for seed in range(args.repeat):
        start = time.perf_counter()
        cases = len(list(registry.expand(seed + 1)))
        times.append(time.perf_counter() - start)
    print(f"{cases} cases; expand: min {min(times):.3f} s, median "
          f"{statistics.median(times):.3f} s, max {max(times):.3f} s (target < 3 s)")


if __name__ == "__main__":
    main()
