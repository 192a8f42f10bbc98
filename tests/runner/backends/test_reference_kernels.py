"""The vectorised evaluator kernels (backends.reference_kernels) give the stock
ReferenceEvaluator's results: on every onnx node case of their operators, in the case's own
dtype and widened to float64, and on seeded random attribute combinations; the recurrent
attributes onnx ignores follow ONNX Runtime. Both evaluator paths use them, and a run frees
each intermediate after its last consumer.

Tolerance: a kernel sums the same k products in another order (BLAS blocking, one product
per kernel tap), so each result may differ from onnx's by the rounding of a k-term sum:
|fast − stock| ≤ 2·k·ε·S, with ε the dtype's machine epsilon, S = max(1, max |stock|) and k
the terms per output element (C/group·kernel size for convolutions, the window size for
average pools, steps·(input + hidden) for recurrent layers). MaxPool does no arithmetic: its
values and Indices must be identical.
"""

from __future__ import annotations

import functools
import importlib
import math
import subprocess
import sys
import textwrap
import tracemalloc
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import reference_evaluator, reference_kernels
from gero_runner.backends.reference_defects import corrected_evaluator
from gero_runner.models import shadow

OPS = {"Conv": "conv", "ConvTranspose": "convtranspose", "MaxPool": "maxpool",
       "AveragePool": "averagepool", "LSTM": "lstm", "GRU": "gru", "RNN": "rnn",
       "ConvInteger": "convinteger"}


@functools.cache
def _node_cases(op: str | None = None) -> list[Any]:
    """onnx's node TestCases of the kernels' operators (``op``'s alone when given). Loaded
    when a test asks, not at collection: importing onnx's pool case modules takes ~12 s."""
    import onnx.backend.test.case.node as node_cases

    with np.errstate(all="ignore"):
        for name, module in OPS.items():
            if op in (None, name):
                importlib.import_module(f"onnx.backend.test.case.node.{module}")
    found = {tc.name: tc for tc in node_cases._NodeTestCases
             if len(tc.model.graph.node) == 1 and tc.model.graph.node[0].op_type in OPS}
    return sorted((tc for tc in found.values()
                   if op in (None, tc.model.graph.node[0].op_type)), key=lambda tc: tc.name)


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _terms(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> int:
    """k of the module docstring for one node."""
    x = feeds[node.input[0]]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type in ("Conv", "ConvTranspose", "ConvInteger"):
        w = feeds.get(node.input[1])
        kernel = math.prod(w.shape[2:]) if w is not None else 1
        group = int(attrs.get("group", 1))
        return max(1, int(x.shape[1]) // group * kernel)
    if node.op_type in ("AveragePool", "MaxPool"):
        return int(math.prod(attrs["kernel_shape"]))
    hidden = int(attrs["hidden_size"])
    return int(x.shape[0] * x.shape[1] * (x.shape[-1] + hidden))


def assert_same(stock: list[Any], fast: list[Any], node: onnx.NodeProto,
                feeds: dict[str, np.ndarray], what: str) -> float:
    """The docstring's bound; returns the largest difference relative to S."""
    assert len(stock) == len(fast), what
    worst = 0.0
    for s, f in zip(stock, fast, strict=True):
        s, f = np.asarray(s), np.asarray(f)
        assert s.shape == f.shape and s.dtype == f.dtype, (what, s.shape, f.shape, f.dtype)
        if node.op_type == "MaxPool" or s.dtype.kind != "f":
            np.testing.assert_array_equal(f, s, err_msg=what)
            continue
        if not s.size:
            continue
        scale = max(1.0, float(np.max(np.abs(s.astype(np.float64)))))
        diff = float(np.max(np.abs(f.astype(np.float64) - s.astype(np.float64))))
        bound = 2 * _terms(node, feeds) * float(np.finfo(s.dtype).eps) * scale
        assert diff <= bound, f"{what}: |fast - stock| = {diff:g} > {bound:g}"
        worst = max(worst, diff / scale)
    return worst


def _feeds(tc: Any) -> dict[str, np.ndarray]:
    inputs, _ = tc.data_sets[0]
    return {i.name: np.asarray(v) for i, v in zip(tc.model.graph.input, inputs, strict=False)}


@pytest.mark.slow
def test_every_node_case_of_the_kernels_operators_is_collected() -> None:
    cases = _node_cases()
    ops = {tc.model.graph.node[0].op_type for tc in cases}
    assert ops == set(OPS) and len(cases) >= 70


@pytest.mark.parametrize("width", ["own", "float64"])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.slow
def test_node_cases_match_the_stock_evaluator(op: str, width: str) -> None:
    """Every onnx node case of the operator (a failure names the case)."""
    cases = _node_cases(op)
    assert cases
    for tc in cases:
        model, feeds = tc.model, _feeds(tc)
        if width == "float64":
            model, feeds = shadow.widen(model), shadow.widen_inputs(feeds)
        node = model.graph.node[0]
        with np.errstate(all="ignore"):
            stock = ReferenceEvaluator(model).run(None, feeds)
            for complete in (False, True):
                ops = reference_kernels.fast_ops(_opset(model), complete=complete)
                fast = ReferenceEvaluator(model, new_ops=ops).run(None, feeds)
                assert isinstance(stock, list) and isinstance(fast, list)
                assert_same(stock, fast, node, feeds, f"{tc.name} {width} complete={complete}")


def _model(node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int = 22
           ) -> onnx.ModelProto:
    outs = [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "I" else
                                          helper.np_dtype_to_tensor_dtype(
                                              next(iter(feeds.values())).dtype), None)
            for o in node.output if o]
    graph = helper.make_graph(
        [node], "k", [helper.make_tensor_value_info(
            k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()],
        outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def _both(node: onnx.NodeProto, feeds: dict[str, np.ndarray], complete: bool = False
          ) -> tuple[Any, Any]:
    model = _model(node, feeds)
    results: list[Any] = []
    for ops in (None, reference_kernels.fast_ops(22, complete=complete)):
        try:
            with np.errstate(all="ignore"):
                results.append(ReferenceEvaluator(model, new_ops=ops).run(None, feeds))
        except Exception as e:
            results.append(e)
    return results[0], results[1]


def _draw_geometry(rng: np.random.Generator) -> dict[str, Any]:
    nd = int(rng.integers(1, 4))
    kernel = [int(v) for v in rng.integers(1, 4, nd)]
    return {"nd": nd, "kernel": kernel, "strides": [int(v) for v in rng.integers(1, 3, nd)],
            "dilations": [int(v) for v in rng.integers(1, 3, nd)],
            "size": [int(v) for v in rng.integers(4, 9, nd)],
            "auto_pad": str(rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER",
                                        "VALID"])),
            "pads": [min(int(p), k - 1) for p, k in zip(rng.integers(0, 3, 2 * nd),
                                                        kernel + kernel, strict=True)]}


def _spatial(geo: dict[str, Any]) -> dict[str, Any]:
    """A drawn geometry as node attributes: explicit pads, or the auto_pad mode."""
    spatial: dict[str, Any] = {"kernel_shape": geo["kernel"], "strides": geo["strides"],
                               "dilations": geo["dilations"]}
    if geo["auto_pad"] == "NOTSET":
        spatial["pads"] = geo["pads"]
    else:
        spatial["auto_pad"] = geo["auto_pad"]
    return spatial


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.slow
def test_random_convolutions_and_pools_match_the_stock_evaluator(dtype: Any) -> None:
    rng = np.random.default_rng(27)
    compared = 0
    for _ in range(60):
        geo = _draw_geometry(rng)
        group, cg, mg = int(rng.choice([1, 1, 2, 3])), int(rng.integers(1, 4)), \
            int(rng.integers(1, 4))
        x = rng.standard_normal((2, cg * group, *geo["size"])).astype(dtype)
        spatial = _spatial(geo)
        draws = [
            (helper.make_node("Conv", ["X", "W", "B"], ["Y"], group=group, **spatial),
             {"X": x, "W": rng.standard_normal((mg * group, cg, *geo["kernel"])).astype(dtype),
              "B": rng.standard_normal(mg * group).astype(dtype)}),
            (helper.make_node("ConvTranspose", ["X", "W", "B"], ["Y"], group=group,
                              output_padding=[int(min(v, s - 1)) for v, s in zip(
                                  rng.integers(0, 2, geo["nd"]), geo["strides"],
                                  strict=True)], **spatial),
             {"X": x, "W": rng.standard_normal((cg * group, mg, *geo["kernel"])).astype(dtype),
              "B": rng.standard_normal(mg * group).astype(dtype)}),
            (helper.make_node("MaxPool", ["X"], ["Y", "I"], storage_order=int(rng.integers(2)),
                              ceil_mode=int(geo["auto_pad"] == "NOTSET" and rng.random() < .5),
                              **spatial), {"X": x}),
            (helper.make_node("AveragePool", ["X"], ["Y"],
                              count_include_pad=int(rng.integers(2)),
                              ceil_mode=int(geo["auto_pad"] == "NOTSET" and rng.random() < .5),
                              **spatial), {"X": x}),
        ]
        for node, feeds in draws:
            stock, fast = _both(node, feeds)
            what = f"{node.op_type} {spatial}"
            if isinstance(stock, Exception) or isinstance(fast, Exception):
                assert isinstance(stock, Exception) and isinstance(fast, Exception), \
                    f"{what}: stock {stock!r:.200}, fast {fast!r:.200}"
                continue
            assert_same(stock, fast, node, feeds, what)
            compared += 1
    assert compared >= 180


def test_random_integer_convolutions_match_the_stock_evaluator_exactly() -> None:
    """ConvInteger as a dynamically quantized CNN has it (uint8 activations, int8 or uint8
    weights, a scalar or per-channel weight zero point), 2-D: onnx's own operator applies a
    per-channel zero point to 4-D weights only."""
    rng = np.random.default_rng(10)
    compared = 0
    for _ in range(40):
        geo = _draw_geometry(rng)
        while geo["nd"] != 2:
            geo = _draw_geometry(rng)
        group, cg, mg = int(rng.choice([1, 1, 2])), int(rng.integers(1, 4)), \
            int(rng.integers(1, 4))
        spatial = _spatial(geo)
        wtype = np.int8 if rng.random() < .5 else np.uint8
        info = np.iinfo(wtype)
        w = rng.integers(info.min, info.max + 1, (mg * group, cg, *geo["kernel"])).astype(wtype)
        wz = (rng.integers(info.min, info.max + 1, mg * group) if rng.random() < .5
              else rng.integers(info.min, info.max + 1, ())).astype(wtype)
        feeds = {"X": rng.integers(0, 256, (2, cg * group, *geo["size"])).astype(np.uint8),
                 "W": w, "XZ": np.array(rng.integers(0, 256), np.uint8), "WZ": wz}
        node = helper.make_node("ConvInteger", ["X", "W", "XZ", "WZ"], ["Y"], group=group,
                                **spatial)
        stock, fast = _both(node, feeds)
        if isinstance(stock, Exception) or isinstance(fast, Exception):
            assert isinstance(stock, Exception) and isinstance(fast, Exception), \
                f"{spatial}: stock {stock!r:.200}, fast {fast!r:.200}"
            continue
        assert stock[0].dtype == fast[0].dtype == np.int32
        np.testing.assert_array_equal(fast[0], stock[0], err_msg=str(spatial))
        compared += 1
    assert compared >= 30


def _recurrent_feeds(kind: str, rng: np.random.Generator, dirs: int, layout: int,
                     dtype: Any, extras: bool) -> tuple[list[str], dict[str, np.ndarray]]:
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    seq, batch, size, hidden = 5, 3, 4, 3
    shape_x = (batch, seq, size) if layout else (seq, batch, size)
    feeds = {"X": rng.standard_normal(shape_x),
             "W": rng.standard_normal((dirs, gates * hidden, size)) * .5,
             "R": rng.standard_normal((dirs, gates * hidden, hidden)) * .5,
             "B": rng.standard_normal((dirs, 2 * gates * hidden)) * .5}
    names = ["X", "W", "R", "B", ""]
    if extras:
        state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        feeds["H0"] = rng.standard_normal(state)
        names.append("H0")
        if kind == "LSTM":
            feeds["C0"] = rng.standard_normal(state)
            feeds["P"] = rng.standard_normal((dirs, 3 * hidden))
            names += ["C0", "P"]
    return names, {k: v.astype(dtype) for k, v in feeds.items()}


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_random_recurrent_layers_match_the_stock_evaluator(kind: str) -> None:
    rng = np.random.default_rng(14)
    for direction in ("forward", "reverse", "bidirectional"):
        for layout in (0, 1):
            for extras in (False, True):
                dirs = 2 if direction == "bidirectional" else 1
                names, feeds = _recurrent_feeds(kind, rng, dirs, layout, np.float64, extras)
                outs = ["Y", "Yh", "Yc"][:3 if kind == "LSTM" else 2]
                attrs: dict[str, Any] = {"hidden_size": 3, "direction": direction,
                                         "layout": layout}
                if kind == "GRU":
                    attrs["linear_before_reset"] = int(rng.integers(2))
                node = helper.make_node(kind, names, outs, **attrs)
                stock, fast = _both(node, feeds)
                assert_same(stock, fast, node, feeds, f"{kind} {attrs} extras={extras}")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_attributes_onnx_ignores_follow_onnxruntime(kind: str) -> None:
    """clip, activations with parameters, input_forget and sequence_lens: the complete
    kernels (the shadow's) against ONNX Runtime, an independent implementation."""
    import onnxruntime as ort

    rng = np.random.default_rng(5)
    acts = {"LSTM": ["HardSigmoid", "LeakyRelu", "ScaledTanh"],
            "GRU": ["HardSigmoid", "Softsign"], "RNN": ["LeakyRelu"]}[kind]
    for direction in ("forward", "reverse", "bidirectional"):
        dirs = 2 if direction == "bidirectional" else 1
        names, feeds = _recurrent_feeds(kind, rng, dirs, 0, np.float32, True)
        feeds["L"] = np.array([5, 2, 4], dtype=np.int32)
        names[4] = "L"
        attrs: dict[str, Any] = {"hidden_size": 3, "direction": direction, "clip": 0.8,
                                 "activations": acts * dirs,
                                 "activation_alpha": [0.3, 0.05, 1.5] * dirs,
                                 "activation_beta": [0.4, 0.7] * dirs}
        if kind == "LSTM":
            attrs["input_forget"] = 1
        outs = ["Y", "Yh", "Yc"][:3 if kind == "LSTM" else 2]
        node = helper.make_node(kind, names, outs, **attrs)
        model = _model(node, feeds, opset=14)
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
        got = ReferenceEvaluator(model, new_ops=reference_kernels.fast_ops(
            14, complete=True)).run(None, feeds)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=direction)
        assert reference_kernels.stock_ignores(node)


def test_both_evaluator_paths_run_the_kernels() -> None:
    tc = next(tc for tc in _node_cases("Conv") if tc.name == "test_basic_conv_with_padding")
    stock_path = reference_evaluator.make_evaluator(tc.model.SerializeToString())
    arbiter = corrected_evaluator(shadow.widen(tc.model))
    for evaluator in (stock_path, arbiter):
        (node,) = evaluator.rt_nodes_
        assert type(node).__module__ == reference_kernels.__name__


def _chain(links: int, size: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    nodes = [helper.make_node("Add", [f"v{i}", "one"], [f"v{i + 1}"]) for i in range(links)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("v0", TensorProto.DOUBLE, [size])],
        [helper.make_tensor_value_info(f"v{links}", TensorProto.DOUBLE, [size])],
        initializer=[onnx.numpy_helper.from_array(np.ones(1), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    return model, {"v0": np.zeros(size)}


def test_a_run_frees_each_intermediate_after_its_last_consumer() -> None:
    model, feeds = _chain(links=24, size=2**20)  # 8 MiB a value, 192 MiB if all were kept
    evaluator = ReferenceEvaluator(model)
    tracemalloc.start()
    try:
        outputs = reference_evaluator.run_releasing(evaluator, feeds)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(outputs["v24"], np.full(2**20, 24.0))
    assert peak < 4 * 8 * 2**20, f"peak {peak / 2**20:.0f} MiB: intermediates were kept"


def test_the_traced_shadow_names_the_first_empty_intermediate_and_keeps_no_other() -> None:
    nodes = [helper.make_node("Slice", ["X", "s", "e"], ["empty"]),
             helper.make_node("ReduceSum", ["empty"], ["Y"], keepdims=1)]
    ints = [onnx.numpy_helper.from_array(np.array([0], np.int64), "s"),
            onnx.numpy_helper.from_array(np.array([0], np.int64), "e")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], initializer=ints)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    trace = shadow.run_shadow_traced(model, {"X": np.ones((3, 2), np.float32)})
    assert set(trace.outputs) == {"Y"} and trace.outputs["Y"].dtype == np.float64
    assert trace.first_empty == shadow.EmptyIntermediate("empty", "Slice", "", (0, 2))


@pytest.mark.slow
def test_the_shadow_runs_no_onnxruntime_code() -> None:
    script = textwrap.dedent("""
        import sys, numpy as np
        from onnx import helper, TensorProto
        from gero_runner.models import shadow
        node = helper.make_node("Conv", ["X", "W"], ["Y"], pads=[1, 1, 1, 1], group=2)
        graph = helper.make_graph([node], "g", [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 5, 5]),
            helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 1, 3, 3])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  ir_version=8)
        shadow.run_shadow(model, {"X": np.ones((1, 2, 5, 5), np.float32),
                                  "W": np.ones((2, 1, 3, 3), np.float32)})
        assert "onnxruntime" not in sys.modules, "the shadow imported onnxruntime"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
