"""Benchmark of ``gero localize`` against one run of the observation's two paths.

The floor is what the comparison costs anyway: each side's session built from the
observation's graph and run once on its inputs (the float64 shadow or the ReferenceEvaluator
where that is a side), in a fresh process, timed and its peak memory read. Then ``gero
localize OBSERVATION_ID`` runs as a user runs it; its wall time and the peak memory of its
processes (the localizing child included) are read the same way. Targets (issue 29): at
most 3× the two-path run's time, within 1.5 GB. Report the load average beside the figures:
the machine is shared.

    python bench/localize_bench.py --data-dir DIR OBSERVATION_ID [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _two_paths(data_dir: str, observation: str) -> None:
    """Child: build and run both sides once (printed: seconds)."""
    from gero_runner.evidence.localize import load_graph, run_side, sides
    from gero_runner.evidence.rebuild import read_case_record
    from gero_runner.storage.artifacts import load_array, resolve_artifact
    from gero_runner.storage.reader import resolve_observation

    row = resolve_observation(Path(data_dir), observation)
    directory = resolve_artifact(Path(data_dir), str(row["artifact_path"]))
    record = read_case_record(directory)
    inputs = {k: load_array(directory, v) for k, v in record["inputs"].items()}
    a, b = sides(directory, row, record)
    models = [(s, load_graph(directory, s.graph)) for s in (a, b)]
    start = time.perf_counter()
    for side, model in models:
        run_side(side, model, inputs, [o.name for o in model.graph.output])
    print(json.dumps({"seconds": time.perf_counter() - start}))


def _measure(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB of the command's processes, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode not in (0,):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, max(peak, before) / 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("observation")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _two_paths(args.data_dir, args.observation)
        return
    gero = str(Path(sys.executable).with_name("gero"))
    for i in range(args.repeat):
        # Each in a fresh process, the two-path run first (its peak is read before gero's).
        wall, peak, out = _measure([sys.executable, __file__, args.observation, "--data-dir",
                                    args.data_dir, "--child"])
        run_seconds = json.loads(out.strip().splitlines()[-1])["seconds"]
        l_wall, l_peak, l_out = _measure([gero, "localize", args.observation, "--data-dir",
                                          args.data_dir, "--format", "json"])
        loc = json.loads(l_out)
        print(json.dumps({
            "repeat": i, "load_average": os.getloadavg(),
            "two_path_run_seconds": round(run_seconds, 2),
            "two_path_process_seconds": round(wall, 2), "two_path_peak_mib": round(peak),
            "localize_seconds": round(l_wall, 2), "localize_peak_mib_upper_bound": round(l_peak),
            "localize_child_peak_mib": next((p["peak_rss_mb"] for p in loc["passes"]
                                             if "peak_rss_mb" in p), None),
            "ratio_process": round(l_wall / wall, 2),
            "passes": loc["passes"],
            "compared": loc["compared"], "summary": loc["summary"][:200]}))


if __name__ == "__main__":
    main()
