"""An independent check of a numerical changelog between two ONNX Runtime releases (issue 42):
no gero code, only the standard library, NumPy and ONNX Runtime, run in each release's
environment.

    # 1. in each environment: run every case's model.onnx on its stored inputs
    PYTHON_OLD bench/release_changelog_check.py run OUT ARTIFACT_DIR...
    PYTHON_NEW bench/release_changelog_check.py run OUT ARTIFACT_DIR...
    # 2. anywhere with NumPy: per case and level, which elements changed bit for bit, and
    #    which release is closer to the case's stored float64 result there
    python bench/release_changelog_check.py compare OUT OLD_VERSION NEW_VERSION

An artifact directory is what `gero run` keeps of a case: model.onnx, case.json (its inputs'
names) and tensors.npz (inputs/input_J, outputs/numpy-float64-exact/output_J).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

LEVELS = ("disable_all", "basic", "extended", "all")


def run(out: str, artifacts: list[str]) -> None:
    import onnxruntime as ort

    levels = {"disable_all": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
    os.makedirs(out, exist_ok=True)
    for folder in artifacts:
        with open(os.path.join(folder, "case.json")) as f:
            case = json.load(f)
        names = [i["name"] if isinstance(i, dict) else i for i in case["inputs"]]
        with np.load(os.path.join(folder, "tensors.npz"), allow_pickle=False) as t:
            feeds = {name: t[f"inputs/input_{j}"] for j, name in enumerate(names)}
        got: dict[str, np.ndarray] = {}
        for level in LEVELS:
            options = ort.SessionOptions()
            options.graph_optimization_level = levels[level]
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.log_severity_level = 4
            try:
                session = ort.InferenceSession(os.path.join(folder, "model.onnx"), options,
                                               providers=["CPUExecutionProvider"])
                for j, y in enumerate(session.run(None, feeds)):
                    got[f"{level}/output_{j}"] = np.asarray(y)
            except Exception as e:  # a release that cannot run it: recorded
                got[f"{level}/error"] = np.array(str(e).splitlines()[0][:200])
        key = os.path.basename(folder.rstrip("/"))
        np.savez(os.path.join(out, f"{key}-{ort.__version__}.npz"), **got)
        with open(os.path.join(out, f"{key}.case"), "w") as f:
            f.write(folder)


def bits(x: np.ndarray) -> np.ndarray:
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(x.dtype.itemsize)
    return np.ascontiguousarray(x).view(u) if x.dtype.kind == "f" and u else x


def far(v: np.ndarray, w: np.ndarray) -> tuple[int, float]:
    """(elements infinitely far, largest finite distance) of ``v`` from float64 ``w``."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = v.astype(np.float64)
        d = np.where((v == w) | (np.isnan(v) & np.isnan(w)), 0.0, np.abs(v - w))
    inf = ~np.isfinite(d)
    return int(inf.sum()), float(d[~inf].max(initial=0.0))


def compare(out: str, old: str, new: str) -> None:
    for name in sorted(os.listdir(out)):
        if not name.endswith(".case"):
            continue
        key = name[:-5]
        with open(os.path.join(out, name)) as f:
            folder = f.read()
        with open(os.path.join(folder, "case.json")) as f:
            case = json.load(f)
        a = np.load(os.path.join(out, f"{key}-{new}.npz"), allow_pickle=False)
        r = np.load(os.path.join(out, f"{key}-{old}.npz"), allow_pickle=False)
        t = np.load(os.path.join(folder, "tensors.npz"), allow_pickle=False)
        for level in LEVELS:
            if f"{level}/error" in a.files or f"{level}/error" in r.files:
                which = new if f"{level}/error" in a.files else old
                print(f"{case['case_id']:45} {level:11} {which} fails")
                continue
            j = 0
            while f"{level}/output_{j}" in a.files:
                x, y = a[f"{level}/output_{j}"], r[f"{level}/output_{j}"]
                changed = bits(x) != bits(y)
                if changed.any():
                    truth = t.get(f"outputs/numpy-float64-exact/output_{j}")
                    side = "no float64"
                    if truth is not None and truth.shape == x.shape:
                        w = truth[changed].astype(np.float64)
                        dn, do = far(x[changed], w), far(y[changed], w)
                        side = ("closer" if dn < do else "further" if do < dn
                                else "equally far")
                    with np.errstate(invalid="ignore"):
                        delta = np.abs(x[changed].astype(np.float64)
                                       - y[changed].astype(np.float64))
                    biggest = float(np.nanmax(delta)) if delta.size else 0.0
                    print(f"{case['case_id']:45} {level:11} output_{j}: {int(changed.sum())} "
                          f"of {x.size} changed, max |d| {biggest:.3g}: {new} {side}")
                j += 1


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3:])
    else:
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
