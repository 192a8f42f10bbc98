"""The float64 arbiter's speed and memory: stock shadow vs fast shadow vs ONNX Runtime.

For each model folder (``model.onnx`` and ``inputs.npz``, as under /work/models), each in
a fresh process: one run of the float64 shadow on the stock ReferenceEvaluator (with
gero's defect corrections only, as before the vectorised kernels), one run of the shadow
as gero runs it now (``models.shadow``: vectorised kernels, intermediates freed), and the
median of three ONNX Runtime runs with every graph optimisation disabled (after a warm-up
run). Times exclude session construction. Prints a Markdown table with the fast shadow's
ratio to ORT (target: ≤ 10× on a 224×224 MobileNetV3), each process's peak RSS, the
largest difference between the two shadows (relative to max(1, |stock|)) and the load
average when the model started.

    python bench/arbiter_bench.py [DIR ...] [--no-stock] [--stock-timeout 900]
    python bench/arbiter_bench.py --json out.json

Without DIR: every folder under /work/models that has both files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

MODELS = Path("/work/models")


def _child(mode: str, folder: Path, out: Path) -> None:
    import onnx

    model = onnx.load(str(folder / "model.onnx"))
    inputs = dict(np.load(folder / "inputs.npz"))
    result: dict[str, Any] = {"nodes": len(model.graph.node)}
    if mode == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), so,
                                       providers=["CPUExecutionProvider"])
        session.run(None, inputs)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            session.run(None, inputs)
            times.append(time.perf_counter() - start)
        result["seconds"] = statistics.median(times)
    else:
        from onnx.reference import ReferenceEvaluator

        from gero_runner.backends.reference_defects import corrected_evaluator, corrected_ops
        from gero_runner.backends.reference_evaluator import run_releasing
        from gero_runner.models import shadow

        wide = shadow.widen(model)
        feeds = shadow.widen_inputs(inputs)
        start = time.perf_counter()
        if mode == "stock":
            ops = corrected_ops(wide)
            evaluator: Any = ReferenceEvaluator(wide, new_ops=ops or None)
        else:
            evaluator = corrected_evaluator(wide)
        result["build_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        with np.errstate(all="ignore"):
            if mode == "stock":
                values = dict(zip(evaluator.output_names, evaluator.run(None, feeds),
                                  strict=True))
            else:
                values = run_releasing(evaluator, feeds)
        result["seconds"] = time.perf_counter() - start
        np.savez(out.with_suffix(".npz"), **{f"o{i}": np.asarray(values[n])
                                            for i, n in enumerate(evaluator.output_names)})
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.write_text(json.dumps(result))


def _measure(mode: str, folder: Path, tmp: Path, timeout: float) -> dict[str, Any]:
    out = tmp / f"{folder.name}-{mode}.json"
    try:
        subprocess.run([sys.executable, __file__, "--child", mode, str(folder), str(out)],
                       check=True, timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    except subprocess.CalledProcessError as e:
        return {"error": (e.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _largest_difference(tmp: Path, name: str) -> float | None:
    a, b = tmp / f"{name}-stock.npz", tmp / f"{name}-fast.npz"
    if not (a.exists() and b.exists()):
        return None
    worst = 0.0
    with np.load(a) as sa, np.load(b) as sb:
        for key in sa.files:
            s, f = sa[key], sb[key]
            if s.dtype.kind != "f" or not s.size:
                if not np.array_equal(s, f):
                    return float("inf")
                continue
            scale = max(1.0, float(np.nanmax(np.abs(s))))
            worst = max(worst, float(np.nanmax(np.abs(s - f))) / scale)
    return worst


def _fmt(v: Any, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--no-stock", action="store_true",
                        help="skip the stock evaluator's shadow (minutes on a big CNN)")
    parser.add_argument("--stock-timeout", type=float, default=900)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    folders = args.dirs or sorted(p for p in MODELS.iterdir()
                                  if (p / "model.onnx").exists() and (p / "inputs.npz").exists())
    rows = []
    with tempfile.TemporaryDirectory(prefix="arbiter-bench-") as name:
        tmp = Path(name)
        for folder in folders:
            load = os.getloadavg()[0]
            ort_r = _measure("ort", folder, tmp, 600)
            fast = _measure("fast", folder, tmp, 1800)
            stock = ({"error": "skipped"} if args.no_stock else
                     _measure("stock", folder, tmp, args.stock_timeout))
            ratio = (fast["seconds"] / ort_r["seconds"]
                     if "seconds" in fast and "seconds" in ort_r else None)
            row = {"model": folder.name, "nodes": fast.get("nodes", ort_r.get("nodes")),
                   "stock_s": stock.get("seconds"), "stock_note": stock.get("error", ""),
                   "fast_s": fast.get("seconds"), "fast_note": fast.get("error", ""),
                   "ort_s": ort_r.get("seconds"), "ratio": ratio,
                   "stock_rss_mb": stock.get("rss_mb"), "fast_rss_mb": fast.get("rss_mb"),
                   "ort_rss_mb": ort_r.get("rss_mb"),
                   "max_rel_diff": _largest_difference(tmp, folder.name), "load": load}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| model | nodes | stock shadow s | fast shadow s | ORT disable_all s | fast/ORT "
          "| peak RSS MB (stock / fast / ORT) | max diff | load avg |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        stock = _fmt(r["stock_s"]) if r["stock_s"] is not None else r["stock_note"]
        fast = _fmt(r["fast_s"]) if r["fast_s"] is not None else r["fast_note"]
        diff = "-" if r["max_rel_diff"] is None else f"{r['max_rel_diff']:.1e}"
        print(f"| {r['model']} | {r['nodes']} | {stock} | {fast} | {_fmt(r['ort_s'], 3)} | "
              f"{_fmt(r['ratio'], 1)}× | {_fmt(r['stock_rss_mb'], 0)} / "
              f"{_fmt(r['fast_rss_mb'], 0)} / {_fmt(r['ort_rss_mb'], 0)} | {diff} | "
              f"{r['load']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
