"""The cost of a runtime release's path (issue 42) against the same path in-process, and of
``gero env add`` cold and cached.

A release's sessions live in a worker process of its interpreter (``backends.release``):
its first session pays the worker's start (an interpreter, NumPy, the runtime), each run
the transfer of inputs and outputs as .npy files and a JSON line each way. Measured on an
elementwise graph (float32 Sqrt) at a small and a large size, median of ``--repeats`` runs
after a warm-up, for the installed ONNX Runtime in-process and for the release in its
worker. Then ``gero env add RELEASE`` into an empty folder (cold: the venv and the install;
pip's own cache of wheels may make the download warm) and again (cached: found, reused).

    python bench/release_bench.py [--release onnxruntime==1.20.1] [--repeats 20]

The release's environment must exist (``gero env add``) for the path figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def sqrt_model(n: int) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Sqrt", ["x"], ["y"])], "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def path_costs(name: str, n: int, repeats: int) -> tuple[float, float, float]:
    """(first build incl. a worker's start, median build, median run) in ms."""
    from gero_runner import backends

    backend = backends.get(name)
    settings = backend.paths(1)[0].settings
    model = sqrt_model(n)
    x = {"x": np.random.default_rng(0).uniform(0, 100, n).astype(np.float32)}
    start = time.perf_counter()
    session = backend.build(model, settings)
    first = (time.perf_counter() - start) * 1e3
    backend.run(session, x)  # warm-up
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        backend.run(session, x)
        runs.append((time.perf_counter() - start) * 1e3)
    backend.release(session)
    builds = []
    for _ in range(max(3, repeats // 4)):
        start = time.perf_counter()
        backend.release(backend.build(model, settings))
        builds.append((time.perf_counter() - start) * 1e3)
    return first, statistics.median(builds), statistics.median(runs)


def env_add(release: str, folder: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gero_cli", "-q", "env", "add", release],
                   env={**os.environ, "GERO_ENV_DIR": folder}, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default="onnxruntime==1.20.1")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-env", action="store_true", help="skip gero env add")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.repeats} runs, ms\n")
    print("| path | elements | first session (worker start) | build | run |")
    print("|---|---:|---:|---:|---:|")
    for n in (64, 1_000_000):
        for name in ("onnxruntime", args.release):
            first, build, run = path_costs(name, n, args.repeats)
            print(f"| {name} | {n:,} | {first:.1f} | {build:.2f} | {run:.3f} |")
    if not args.no_env:
        with tempfile.TemporaryDirectory(prefix="gero-env-bench-") as folder:
            cold = env_add(args.release, folder)
            cached = env_add(args.release, folder)
        print(f"\ngero env add {args.release}: cold {cold:.1f} s, cached {cached:.2f} s")


if __name__ == "__main__":
    main()
