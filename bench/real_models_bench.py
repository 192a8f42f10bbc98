"""Real models as a user runs them: ``gero run`` beside ``polygraphy run --onnxrt``.

For each model directory (``model.onnx`` and ``inputs.npz``; ``inputs_polygraphy.json`` for
Polygraphy, as /work/models prepares them from PyPI wheels, see its MANIFEST.md), one

    gero run --model M --inputs M.npz --variants fp16,int8-dynamic,int8-static

with every installed runtime and the default budgets, under ``/usr/bin/time -v`` (peak
resident memory of the largest process), and ``polygraphy run M --onnxrt --load-inputs``
(three runs, median), measured together: Polygraphy's runs right before and after gero's.
Prints the table issue 27 asks for: model, nodes, gero s, Polygraphy s, their ratio, peak
RSS, the paths that ran out of their budget, and the rows per class; with the load average
beside each run (timings on a shared machine are context, not results).

    python bench/real_models_bench.py [--models /work/models] [--only NAME,...]
        [--polygraphy /work/models/venv/bin/polygraphy] [--jobs 2] [--path-budget S]
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import onnx
import pyarrow.parquet as pq

VARIANTS = "fp16,int8-dynamic,int8-static"
RAN_OUT = re.compile(r"(?:(?P<who>[\w -]+?) ran out of its (?P<budget>[\d.]+) s budget on "
                     r"(?P<on>[\w -]+?)(?:;|$))|(?:could not run: it ran out of its "
                     r"(?P<shadow>[\d.]+) s budget)")


def nodes(path: Path) -> int:
    """Nodes of the graph and of its subgraphs."""
    def count(graph: onnx.GraphProto) -> int:
        total = 0
        for node in graph.node:
            total += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    total += count(attr.g)
                total += sum(count(g) for g in attr.graphs)
        return total

    return count(onnx.load(str(path), load_external_data=False).graph)


def polygraphy_s(tool: str, model: Path, runs: int = 3) -> float | None:
    """Median wall time of ``polygraphy run MODEL --onnxrt`` on the model's inputs."""
    feeds = model.parent / "inputs_polygraphy.json"
    command = [tool, "run", str(model), "--onnxrt"]
    if feeds.exists():
        command += ["--load-inputs", str(feeds)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            print(f"  polygraphy failed on {model}: {done.stderr[-300:]}", file=sys.stderr)
            return None
    return statistics.median(times)


def gero_run(gero: list[str], model: Path, root: Path, jobs: int,
             budget: float | None) -> dict[str, Any]:
    """One ``gero run`` as a user types it, timed, with its peak RSS and its rows."""
    command = ["/usr/bin/time", "-v", *gero, "run", "--model", str(model), "--inputs",
               str(model.parent / "inputs.npz"), "--variants", VARIANTS, "--data-dir",
               str(root), "--run-id", "bench", "--jobs", str(jobs), "-q"]
    if budget is not None:
        command += ["--path-budget", f"{budget:g}"]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    out: dict[str, Any] = {"rc": done.returncode, "gero_s": wall,
                           "rss_mb": int(rss.group(1)) / 1024 if rss else None,
                           "load_before": load, "load_after": os.getloadavg()[0]}
    parquet = root / "runs" / "bench" / "observations.parquet"
    if done.returncode not in (0, 1) or not parquet.exists():
        out["error"] = done.stderr[-600:]
        return out
    rows = pq.read_table(parquet).to_pylist()
    out["rows"] = len(rows)
    out["classes"] = dict(Counter(str(r["result"]) for r in rows))
    out["ran_out"] = sorted({_ran_out(str(r["reason"])) for r in rows
                             if "ran out of its" in str(r["reason"])})
    out["verdicts"] = sorted({f"{r['backend']}:{r['optimization']}" for r in rows
                              if r["result"] != "execution"})
    return out


def _ran_out(reason: str) -> str:
    found = RAN_OUT.search(reason)
    if found is None:
        return reason[:80]
    if found.group("shadow"):
        return "float64 shadow"
    return f"{found.group('who').strip()} on {found.group('on')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="/work/models", type=Path)
    parser.add_argument("--only", default="", help="comma-separated model directory names")
    parser.add_argument("--polygraphy", default="/work/models/venv/bin/polygraphy")
    parser.add_argument("--gero", default=shutil.which("gero") or "gero",
                        help="the gero command (default: the one on PATH)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--path-budget", type=float, default=None,
                        help="gero's --path-budget (default: gero's own default)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    dirs = sorted(d for d in args.models.iterdir()
                  if (d / "model.onnx").exists() and (d / "inputs.npz").exists()
                  and (not only or d.name in only))
    results = []
    for d in dirs:
        model = d / "model.onnx"
        print(f"{d.name}: polygraphy, gero, polygraphy (load {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
        before = polygraphy_s(args.polygraphy, model)
        with tempfile.TemporaryDirectory(prefix="gero-bench-") as tmp:
            run = gero_run([args.gero], model, Path(tmp), args.jobs, args.path_budget)
        after = polygraphy_s(args.polygraphy, model)
        poly = [t for t in (before, after) if t is not None]
        results.append({"model": d.name, "nodes": nodes(model),
                        "polygraphy_s": statistics.median(poly) if poly else None, **run})
    print("| model | nodes | gero s | Polygraphy s | ratio | peak RSS MB | load | "
          "paths that ran out | rows by class |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        poly = r["polygraphy_s"]
        ratio = f"{r['gero_s'] / poly:.0f}×" if poly else "-"
        classes = ", ".join(f"{k} {v}" for k, v in sorted(r.get("classes", {}).items()))
        ran_out = "; ".join(r.get("ran_out", [])) or ("none" if "rows" in r else
                                                      f"run failed (rc {r['rc']})")
        rss = f"{r['rss_mb']:.0f}" if r.get("rss_mb") else "-"
        print(f"| {r['model']} | {r['nodes']} | {r['gero_s']:.0f} | "
              f"{poly:.2f} | {ratio} | {rss} | {r['load_before']:.1f}–{r['load_after']:.1f} | "
              f"{ran_out} | {classes} |" if poly else
              f"| {r['model']} | {r['nodes']} | {r['gero_s']:.0f} | - | - | {rss} | "
              f"{r['load_before']:.1f}–{r['load_after']:.1f} | {ran_out} | {classes} |")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
