"""Issue 41's table: a real model under gero's default plan, the exhaustive plan, ONNX Runtime
alone and a rerun, each beside ``polygraphy run --onnxrt`` on the same inputs.

For each model directory (``model.onnx`` and ``inputs.npz``):

- ``default``: ``gero run --model M --inputs X --variants fp16,int8-dynamic,int8-static``
  with every installed runtime, in a fresh data root (nothing to reuse);
- ``all``: the same with ``--paths all`` (today's exhaustive plan), in another fresh root;
- ``ort``: ``--backends onnxruntime`` without variants, fresh root;
- ``rerun R``, for each runtime R: the default command again in a root whose first run had
  every runtime but R: R's paths are computed as an upgraded runtime's would be, every other
  path's outputs are reused (``--no-reuse`` is what a user types to compute everything);

and Polygraphy's median of three runs right before and after gero's (its inputs written
once from the ``.npz`` with Polygraphy's own JSON). Peak RSS is the largest single process
(``/usr/bin/time -v``). ``same findings``: the default plan's findings (id, title) equal
``--paths all``'s. Load averages are printed beside the figures: time on a quiet machine.

    python bench/plan_bench.py --models DIR [--only NAME,...] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

VARIANTS = "fp16,int8-dynamic,int8-static"
RUNTIMES = ("onnxruntime", "openvino", "tract")
HERE = Path(sys.executable).parent


def polygraphy_feeds(model: Path, into: Path) -> Path:
    """The ``.npz`` as Polygraphy's ``--load-inputs`` JSON (a list of one feed dict)."""
    from polygraphy.json import save_json

    feeds = {k: np.asarray(v) for k, v in np.load(model.parent / "inputs.npz").items()}
    path = into / "inputs_polygraphy.json"
    save_json([feeds], str(path))
    return path


def polygraphy_s(tool: str, model: Path, feeds: Path, runs: int = 3) -> float | None:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([tool, "run", str(model), "--onnxrt", "--load-inputs",
                               str(feeds)], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            print(f"  polygraphy failed on {model}: {done.stderr[-300:]}", file=sys.stderr)
            return None
    return statistics.median(times)


def gero(model: Path, root: Path, run_id: str, *extra: str) -> dict[str, Any]:
    """One timed ``gero run`` with its peak RSS (the largest process)."""
    command = ["/usr/bin/time", "-v", str(HERE / "gero"), "run", "--model", str(model),
               "--inputs", str(model.parent / "inputs.npz"), "--data-dir", str(root),
               "--run-id", run_id, "-q", *extra]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    out: dict[str, Any] = {"s": wall, "rc": done.returncode, "load": load,
                           "rss_mb": int(rss.group(1)) / 1024 if rss else None}
    if done.returncode not in (0, 1):
        out["error"] = done.stderr[-400:]
    return out


def findings(root: Path, run_id: str) -> dict[str, str]:
    """The run's findings, id to title: the id is the cause (its kind, cause key and scope);
    a title may word the same cause differently when a plan has more rows in it."""
    done = subprocess.run([str(HERE / "gero"), "findings", "--data-dir", str(root), "--run",
                           run_id, "--format", "json"], capture_output=True, text=True)
    data = json.loads(done.stdout or "[]")
    items = data.get("findings", data) if isinstance(data, dict) else data
    return {str(f["finding_id"]): str(f["title"]) for f in items}


def skipped(root: Path) -> dict[str, str]:
    """Settings the default plan did not run, with why (each case's plan.json)."""
    why: dict[str, str] = {}
    for plan in root.rglob("plan.json"):
        why.update({k: str(v)[:90] for k, v in json.loads(plan.read_text())
                    .get("not_run", {}).items()})
    return why


def bench(model: Path, polygraphy: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gero-plan-bench-") as tmp:
        t = Path(tmp)
        feeds = polygraphy_feeds(model, t)
        before = polygraphy_s(polygraphy, model, feeds)
        variants = ("--variants", VARIANTS)
        row: dict[str, Any] = {"model": model.parent.name}
        row["default"] = gero(model, t / "default", "default", *variants)
        row["all"] = gero(model, t / "all", "all", *variants, "--paths", "all")
        row["ort"] = gero(model, t / "ort", "ort", "--backends", "onnxruntime")
        for runtime in RUNTIMES:
            others = ",".join(r for r in RUNTIMES if r != runtime)
            gero(model, t / f"rerun-{runtime}", "first", *variants, "--backends", others)
            row[f"rerun-{runtime}"] = gero(model, t / f"rerun-{runtime}", "rerun", *variants)
        row["rerun"] = max((row[f"rerun-{r}"] for r in RUNTIMES), key=lambda x: x["s"])
        row["nodes"] = len(onnx.load(str(model), load_external_data=False).graph.node)
        after = polygraphy_s(polygraphy, model, feeds)
        poly = [x for x in (before, after) if x is not None]
        row["polygraphy_s"] = statistics.median(poly) if poly else None
        a, b = findings(t / "default", "default"), findings(t / "all", "all")
        row["same_findings"] = a.keys() == b.keys()
        row["only_default"] = sorted((k, a[k]) for k in a.keys() - b.keys())
        row["only_all"] = sorted((k, b[k]) for k in b.keys() - a.keys())
        row["skipped"] = skipped(t / "default")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", required=True, type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--polygraphy", default=str(HERE / "polygraphy"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    rows = []
    for d in sorted(p for p in args.models.iterdir() if (p / "model.onnx").exists()
                    and (p / "inputs.npz").exists() and (not only or p.name in only)):
        print(f"{d.name} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
        rows.append(bench(d / "model.onnx", args.polygraphy))
    print("| model | nodes | Polygraphy s | default s (×) | --paths all s (×) | ORT-only s (×) | "
          "rerun ORT / OpenVINO / tract changed s (×) | peak RSS MB | same findings | "
          "settings the default plan skipped | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        p = r["polygraphy_s"] or float("nan")
        cells = {k: f"{v['s']:.1f} ({v['s'] / p:.1f}×)" for k, v in r.items()
                 if isinstance(v, dict) and "s" in v}
        reruns = " / ".join(cells[f"rerun-{x}"] for x in RUNTIMES)
        rss = max((r[k]["rss_mb"] or 0) for k in ("default", "all", "ort",
                                                   *(f"rerun-{x}" for x in RUNTIMES)))
        print(f"| {r['model']} | {r['nodes']} | {p:.2f} | {cells['default']} | {cells['all']} "
              f"| {cells['ort']} | {reruns} | {rss:.0f} | "
              f"{'yes' if r['same_findings'] else 'NO'} | {', '.join(sorted(r['skipped']))} | "
              f"{r['default']['load']:.1f} |")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
