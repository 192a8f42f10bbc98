#!/usr/bin/env python3
"""Independent numerical arbiter for an ONNX model + inputs.

Usage:  independent_check.py model.onnx inputs.npz [--ref-timeout S] [--json out.json]
                                                    [--no-ref] [--no-openvino] [--no-tract]

Paths run (each optional and reported if it fails):
  ort_disable_all / ort_basic / ort_extended / ort_all  ORT CPU EP, graph optimization levels
  onnx_ref            onnx.reference.ReferenceEvaluator on the original model (subprocess, time limit)
  fp64                the graph widened to float64 (all float tensors, initializers, Constant
                      values, Cast targets), run in ORT (no graph optimizations) if ORT has
                      double kernels for every op; else ReferenceEvaluator (time limit); else ORT
                      with fp32 "islands" around the ops lacking double kernels (reported).
  openvino            OpenVINO CPU, INFERENCE_PRECISION_HINT=f32
  openvino_nodynq     same, DYNAMIC_QUANTIZATION_GROUP_SIZE=0 (no dynamic activation quantization)
  tract               tract (value_info stripped, concrete input facts)

For each output and each path it prints, vs fp64 and vs ort_disable_all:
  max|a-r|, scaled = max|a-r|/max|r|, min row cosine (rows = reshape(-1, last_dim)),
  whole-tensor cosine, argmax agreement over the last axis (fraction of rows).
Independent of gero: uses only onnx, onnxruntime, numpy (+ openvino, tract if installed).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
# ops whose float inputs/outputs must stay float32 by spec / ORT kernels
SPEC_FP32_OPS = {"DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "NonMaxSuppression",
                 "DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
                 "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QGemm",
                 "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool", "QLinearGlobalAveragePool",
                 "QLinearConcat", "QAttention", "MatMulNBits"}
# known output dtypes for contrib/quant ops (when onnx shape inference cannot type them)
KNOWN_OUT = {"DynamicQuantizeLinear": [TensorProto.UINT8, TensorProto.FLOAT, TensorProto.UINT8],
             "DynamicQuantizeLSTM": [TensorProto.FLOAT] * 3,
             "DynamicQuantizeMatMul": [TensorProto.FLOAT], "MatMulIntegerToFloat": [TensorProto.FLOAT],
             "DequantizeLinear": [TensorProto.FLOAT]}
ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


# ----------------------------------------------------------------- helpers
def load_inputs(path):
    d = np.load(path)
    return {k: d[k] for k in d.files}


def cosine(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 and nb == 0:
        return 1.0
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b / (na * nb))


def compare(a, r):
    """metrics of candidate a vs reference r"""
    if a is None or r is None:
        return None
    a = np.asarray(a)
    r = np.asarray(r)
    if a.shape != r.shape:
        if a.size == r.size:
            a = a.reshape(r.shape)
        else:
            return {"error": f"shape {a.shape} vs {r.shape}"}
    if not (np.issubdtype(r.dtype, np.floating) or np.issubdtype(a.dtype, np.floating)):
        return {"exact_frac": float((a == r).mean()) if r.size else 1.0}
    a64 = a.astype(np.float64)
    r64 = r.astype(np.float64)
    fin = np.isfinite(a64) & np.isfinite(r64)
    nonfinite_mismatch = int((np.isfinite(a64) != np.isfinite(r64)).sum())
    diff = np.abs(np.where(fin, a64 - r64, 0.0))
    maxabs = float(diff.max()) if diff.size else 0.0
    rmax = float(np.abs(np.where(fin, r64, 0)).max()) if r.size else 0.0
    out = {"max_abs": maxabs, "scaled": maxabs / rmax if rmax > 0 else (0.0 if maxabs == 0 else float("inf")),
           "cos": cosine(np.where(fin, a64, 0), np.where(fin, r64, 0))}
    if nonfinite_mismatch:
        out["nonfinite_mismatch"] = nonfinite_mismatch
    if r.ndim >= 1 and r.size and r.shape[-1] > 1:
        A = np.where(fin, a64, 0).reshape(-1, r.shape[-1])
        R = np.where(fin, r64, 0).reshape(-1, r.shape[-1])
        na = np.linalg.norm(A, axis=1)
        nr = np.linalg.norm(R, axis=1)
        # rows whose reference norm is negligible (< 1e-6 of the largest row) are excluded:
        # e.g. sigmoid maps where fp32 underflows to exact 0 and fp64 does not.
        sig = nr >= 1e-6 * (nr.max() if len(nr) else 0)
        rc = np.zeros(len(A))
        ok = sig & (na > 0)
        rc[ok] = (A[ok] * R[ok]).sum(1) / (na[ok] * nr[ok])
        out["min_row_cos"] = float(rc[sig].min()) if sig.any() else 1.0
        out["argmax_agree"] = float((A[sig].argmax(1) == R[sig].argmax(1)).mean()) if sig.any() else 1.0
        out["rows"] = int(sig.sum())
        if int((~sig).sum()):
            out["rows_negligible"] = int((~sig).sum())
    return out


def fmt(m):
    if m is None:
        return "n/a"
    if "error" in m:
        return m["error"]
    if "exact_frac" in m:
        return f"exact_frac={m['exact_frac']:.4f}"
    s = f"max|a-r|={m['max_abs']:.3e} scaled={m['scaled']:.3e} cos={m['cos']:.7f}"
    if "min_row_cos" in m:
        s += f" minrowcos={m['min_row_cos']:.7f} argmax={m['argmax_agree']:.4f}({m['rows']})"
    if "nonfinite_mismatch" in m:
        s += f" NONFINITE_MISMATCH={m['nonfinite_mismatch']}"
    return s


def short_err(e, n=300):
    s = str(e).strip().splitlines()
    s = " | ".join(x.strip() for x in s[:4])
    return s[:n]


# ----------------------------------------------------------------- ORT
def run_ort(model, feeds, level, extra_opts=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.log_severity_level = 3
    for k, v in (extra_opts or {}).items():
        so.add_session_config_entry(k, v)
    src = model if isinstance(model, str) else model.SerializeToString()
    sess = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    f = {}
    for i in sess.get_inputs():
        v = feeds[i.name]
        want = ORT_TYPES.get(i.type)
        f[i.name] = v.astype(want) if want is not None and v.dtype != want else v
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, f)))


# ----------------------------------------------------------------- reference evaluator (subprocess)
def ref_worker(model_path, inputs_path, out_path):
    from onnx.reference import ReferenceEvaluator
    m = onnx.load(model_path)
    feeds = load_inputs(inputs_path)
    types = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
    for k in list(feeds):
        if types.get(k) == TensorProto.DOUBLE:
            feeds[k] = feeds[k].astype(np.float64)
    from onnx.reference.op_run import OpRun

    class GlobalMaxPool(OpRun):
        # onnx's reference GlobalMaxPool reduces the wrong axes for 1-D (N,C,L) inputs
        # (onnx<=1.23: axes range(ndim-2, ndim)); this is the spec behaviour.
        op_domain = ""

        def _run(self, x):
            return (x.max(axis=tuple(range(2, x.ndim)), keepdims=True),)

    class BatchNormalization(OpRun):
        # onnx's reference BatchNormalization_9 switches to batch statistics whenever the
        # `momentum` attribute is present; for opset < 14 a single-output BN is inference
        # mode by spec (and training_mode=0 for opset >= 14).
        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None, training_mode=None):
            if training_mode:
                raise NotImplementedError("BatchNormalization training_mode=1")
            eps = 1e-5 if epsilon is None else epsilon
            sh = (1, -1) + (1,) * (x.ndim - 2)
            y = scale.reshape(sh) * (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) + bias.reshape(sh)
            return (y.astype(x.dtype),)

    sess = ReferenceEvaluator(m, new_ops=[GlobalMaxPool, BatchNormalization])
    names = [o.name for o in m.graph.output]
    feeds = {k: v for k, v in feeds.items() if k in sess.input_names}
    res = sess.run(None, feeds)
    np.savez(out_path, **{f"o{i}": np.asarray(r) for i, r in enumerate(res)})
    json.dump(names, open(out_path + ".names.json", "w"))


def run_ref(model, inputs_path, timeout):
    tmpd = tempfile.mkdtemp(prefix="indep_ref_")
    mp = os.path.join(tmpd, "m.onnx")
    if isinstance(model, str):
        mp = model
    else:
        onnx.save(model, mp)
    out = os.path.join(tmpd, "out.npz")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--_ref-worker", mp, inputs_path, out],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"ReferenceEvaluator timed out after {timeout}s")
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
        raise RuntimeError("ReferenceEvaluator failed: " + " | ".join(lines[-3:])[:400])
    d = np.load(out)
    names = json.load(open(out + ".names.json"))
    return {n: d[f"o{i}"] for i, n in enumerate(names)}, time.time() - t0


# ----------------------------------------------------------------- float64 widening
def _widen_tensor(t):
    if t.data_type in FLOATS:
        arr = numpy_helper.to_array(t).astype(np.float64)
        nt = numpy_helper.from_array(arr, t.name)
        t.CopyFrom(nt)
        return True
    return False


def widen_fp64(model, islands=(), orig_types=None):
    """Return a float64 copy of `model`. Nodes whose op_type is in `islands` (plus the
    spec-mandated fp32 ops) keep fp32 arithmetic via Cast wrappers."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = set(islands) | SPEC_FP32_OPS
    orig_types = orig_types or {}
    counter = [0]
    wrapped = []

    def fresh(base):
        counter[0] += 1
        return f"{base}__w64_{counter[0]}"

    def widen_vi(vi):
        tt = vi.type.tensor_type
        if tt.elem_type in FLOATS:
            tt.elem_type = TensorProto.DOUBLE

    def process_graph(g, top):
        for t in g.initializer:
            _widen_tensor(t)
        for vi in list(g.input) + list(g.output):
            widen_vi(vi)
        del g.value_info[:]
        new_nodes = []
        for n in g.node:
            # subgraphs first
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    process_graph(a.g, False)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        process_graph(sg, False)
            if n.op_type in keep:
                pre, post = [], []
                for i, name in enumerate(n.input):
                    if name and orig_types.get(name) in FLOATS:
                        nn = fresh(name)
                        pre.append(helper.make_node("Cast", [name], [nn], to=TensorProto.FLOAT))
                        n.input[i] = nn
                kt = KNOWN_OUT.get(n.op_type, [])
                for i, name in enumerate(n.output):
                    t = orig_types.get(name)
                    if t is None and i < len(kt):
                        t = kt[i]
                    if name and t in FLOATS:
                        nn = fresh(name)
                        post.append(helper.make_node("Cast", [nn], [name], to=TensorProto.DOUBLE))
                        n.output[i] = nn
                new_nodes += pre + [n] + post
                wrapped.append(n.op_type)
                continue
            for a in n.attribute:
                if n.op_type == "Cast" and a.name == "to" and a.i in FLOATS:
                    a.i = TensorProto.DOUBLE
                elif a.name == "dtype" and a.type == onnx.AttributeProto.INT and a.i in FLOATS:
                    a.i = TensorProto.DOUBLE
                elif a.type == onnx.AttributeProto.TENSOR:
                    _widen_tensor(a.t)
            if n.op_type == "Constant":
                for a in list(n.attribute):
                    if a.name == "value_float":
                        v = a.f
                        n.ClearField("attribute")
                        n.attribute.append(helper.make_attribute("value", numpy_helper.from_array(np.array(v, np.float64))))
                    elif a.name == "value_floats":
                        v = list(a.floats)
                        n.ClearField("attribute")
                        n.attribute.append(helper.make_attribute("value", numpy_helper.from_array(np.array(v, np.float64))))
            # Resize/Upsample `scales` must stay float32 by spec
            if n.op_type in ("Resize", "Upsample"):
                idx = 2 if n.op_type == "Resize" and len(n.input) > 2 else (1 if n.op_type == "Upsample" else None)
                if idx is not None and n.input[idx]:
                    nn = fresh(n.input[idx])
                    new_nodes.append(helper.make_node("Cast", [n.input[idx]], [nn], to=TensorProto.FLOAT))
                    n.input[idx] = nn
            new_nodes.append(n)
        del g.node[:]
        g.node.extend(new_nodes)

    process_graph(m.graph, True)
    return m, sorted(set(wrapped))


def original_types(model):
    types = {}
    try:
        inf = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        inf = model

    def walk(g):
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            if vi.type.HasField("tensor_type"):
                types[vi.name] = vi.type.tensor_type.elem_type
        for t in g.initializer:
            types[t.name] = t.data_type
        for n in g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        types[n.output[0]] = a.t.data_type
                    elif a.name in ("value_float", "value_floats"):
                        types[n.output[0]] = TensorProto.FLOAT
            elif n.op_type == "Cast":
                types.setdefault(n.output[0], [a.i for a in n.attribute if a.name == "to"][0])
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(inf.graph)
    return types


def _ort_missing_op(msg):
    for pat in [r"Could not find an implementation for (\w+)\(",
                r"of operator \((\w+)\)",
                r"Type Error: .*?operator \((\w+)\)",
                r"op_type=(\w+)"]:
        mm = re.search(pat, msg)
        if mm:
            return mm.group(1)
    return None


def run_fp64(model, feeds, inputs_path, ref_timeout, log):
    import onnxruntime as ort
    otypes = original_types(model)
    islands = []
    wide, wrapped = widen_fp64(model, islands, otypes)
    note = {"spec_fp32_wrapped": wrapped}
    # 1) ORT, full fp64
    first_err = None
    try:
        r = run_ort(wide, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        note["engine"] = "ort"
        return r, note
    except Exception as e:
        first_err = short_err(e)
        log(f"  fp64: ORT cannot run fully widened graph: {first_err}")
    # 2) ReferenceEvaluator on the fully widened graph
    try:
        r, dt = run_ref(wide, inputs_path, ref_timeout)
        note["engine"] = f"onnx_ref ({dt:.1f}s)"
        return r, note
    except Exception as e:
        log(f"  fp64: ReferenceEvaluator on widened graph: {short_err(e)}")
        note["ref_error"] = short_err(e)
    # 3) ORT with fp32 islands for ops lacking double kernels
    err = first_err
    for _ in range(25):
        op = _ort_missing_op(err or "")
        if op is None or op in islands:
            break
        islands.append(op)
        wide, wrapped = widen_fp64(model, islands, otypes)
        try:
            r = run_ort(wide, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
            note["engine"] = "ort+fp32_islands"
            note["fp32_islands"] = islands
            note["wrapped_ops"] = wrapped
            return r, note
        except Exception as e:
            err = short_err(e)
    raise RuntimeError(f"fp64 failed; islands tried {islands}; last error: {err}")


# ----------------------------------------------------------------- OpenVINO / tract
def run_openvino(model_path, feeds, out_names, extra=None):
    import openvino as ov
    core = ov.Core()
    cfg = {"INFERENCE_PRECISION_HINT": "f32"}
    cfg.update(extra or {})
    cm = core.compile_model(model_path, "CPU", cfg)
    f = {}
    for p in cm.inputs:
        nm = p.get_any_name()
        f[nm] = feeds[nm]
    res = cm(f)
    out = {}
    for i, p in enumerate(cm.outputs):
        names = p.get_names()
        key = next((n for n in out_names if n in names), out_names[i] if i < len(out_names) else p.get_any_name())
        out[key] = np.asarray(res[p])
    return out


TRACT_DT = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int64): "i64",
            np.dtype(np.int32): "i32", np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8", np.dtype(np.bool_): "bool"}


def run_tract(model, feeds):
    import tract
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    for o in m.graph.output:
        o.type.tensor_type.ClearField("shape")
    init = {i.name for i in m.graph.initializer}
    real_inputs = [i.name for i in m.graph.input if i.name not in init]
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as tf:
        tf.write(m.SerializeToString())
        path = tf.name
    im = tract.onnx().model_for_path(path)
    arrs = []
    for k, name in enumerate(real_inputs):
        v = feeds[name]
        spec = ",".join(str(s) for s in v.shape) + ("," if v.shape else "") + TRACT_DT[v.dtype]
        im.set_input_fact(k, spec)
        arrs.append(v)
    rm = im.into_optimized().into_runnable()
    res = rm.run(arrs)
    os.unlink(path)
    return {o.name: res[i].to_numpy() for i, o in enumerate(m.graph.output)}


# ----------------------------------------------------------------- main
def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_ref-worker":
        ref_worker(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("--ref-timeout", type=float, default=180)
    ap.add_argument("--json")
    ap.add_argument("--no-ref", action="store_true")
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--no-tract", action="store_true")
    args = ap.parse_args()
    import onnxruntime as ort

    log = lambda s: print(s, flush=True)
    model = onnx.load(args.model)
    feeds = load_inputs(args.inputs)
    out_names = [o.name for o in model.graph.output]
    log(f"model {args.model}  inputs " + ", ".join(f"{k}:{v.dtype}{list(v.shape)}" for k, v in feeds.items()))

    results, errors, notes, times = {}, {}, {}, {}

    def attempt(name, fn):
        t0 = time.time()
        try:
            r = fn()
            results[name] = r
            times[name] = time.time() - t0
            log(f"  ran {name} in {times[name]:.2f}s")
        except Exception as e:
            errors[name] = short_err(e)
            log(f"  FAILED {name}: {errors[name]}")

    L = ort.GraphOptimizationLevel
    for nm, lv in [("ort_disable_all", L.ORT_DISABLE_ALL), ("ort_basic", L.ORT_ENABLE_BASIC),
                   ("ort_extended", L.ORT_ENABLE_EXTENDED), ("ort_all", L.ORT_ENABLE_ALL)]:
        attempt(nm, lambda lv=lv: run_ort(args.model, feeds, lv))

    def fp64():
        r, note = run_fp64(model, feeds, args.inputs, args.ref_timeout, log)
        notes["fp64"] = note
        return r
    attempt("fp64", fp64)
    if "fp64" in notes:
        log(f"  fp64 engine: {notes['fp64']}")
    if not args.no_ref:
        attempt("onnx_ref", lambda: run_ref(args.model, args.inputs, args.ref_timeout)[0])
    if not args.no_openvino:
        attempt("openvino", lambda: run_openvino(args.model, feeds, out_names))
        # OpenVINO CPU dynamically quantizes activations for int8-compressed weights by default;
        # this variant turns that off to separate it from plain f32 arithmetic differences.
        attempt("openvino_nodynq", lambda: run_openvino(args.model, feeds, out_names,
                                                        {"DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}))
    if not args.no_tract:
        attempt("tract", lambda: run_tract(model, feeds))

    refs = [r for r in ("fp64", "ort_disable_all") if r in results]
    summary = {"model": args.model, "errors": errors, "notes": notes, "times": times, "metrics": {}}
    for on in out_names:
        log(f"\noutput {on}:")
        for ref in refs:
            rv = results[ref].get(on)
            if rv is None:
                continue
            log(f"  vs {ref}  (ref shape {list(np.shape(rv))} dtype {np.asarray(rv).dtype}, max|r|={float(np.abs(np.asarray(rv, dtype=np.float64)).max()) if np.size(rv) else 0:.4g})")
            for path, res in results.items():
                if path == ref:
                    continue
                m = compare(res.get(on), rv)
                summary["metrics"].setdefault(on, {}).setdefault(ref, {})[path] = m
                log(f"    {path:16s} {fmt(m)}")
    if errors:
        log("\nfailed paths: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
