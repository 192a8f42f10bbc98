"""How long ``gero --help`` and each ``gero COMMAND --help`` take, whole process, and which
heavy modules building the parser loads (none should: issue 43 asks for under 0.3 s).

Each command is started ``--runs`` times after one warm-up; the median wall and CPU
seconds are printed, beside ``python -c pass`` (the interpreter's own floor). For
figures to quote, time one command from outside with farm-bench as well:

    .venv/bin/python bench/help_bench.py [--runs 10]
    farm-bench -n 20 --vs '.venv/bin/python -c pass' -- .venv/bin/gero --help
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pyarrow", "duckdb", "onnx", "onnxruntime", "textual", "rich", "openvino")


def timed(command: list[str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds (children's user + system) of ``runs`` starts."""
    subprocess.run(command, capture_output=True, check=True)  # warm-up: file cache
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def heavy_loaded() -> list[str]:
    """The heavy modules in sys.modules once the whole parser is built (a fresh process)."""
    code = ("import sys; from gero_cli import build_parser; build_parser(); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return [m for m in out.stdout.strip().split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed starts per command")
    args = parser.parse_args()
    from gero_cli import COMMANDS

    gero = [sys.executable, "-m", "gero_cli"]
    rows = [("python -c pass", [sys.executable, "-c", "pass"]),
            ("gero --help", [*gero, "--help"])]
    rows += [(f"gero {c} --help", [*gero, c, "--help"]) for c in COMMANDS]
    print(f"{'command':<28}{'wall s':>9}{'cpu s':>9}   ({args.runs} runs, median; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})")
    for label, command in rows:
        wall, cpu = timed(command, args.runs)
        print(f"{label:<28}{wall:>9.3f}{cpu:>9.3f}")
    print(f"heavy modules loaded by build_parser(): {', '.join(heavy_loaded()) or 'none'}")


if __name__ == "__main__":
    main()
