"""Graphs whose origin of error is known by construction, for the localize tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 64


def _save(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], shape: list[int],
          path: Path, name: str, opset: int = 19) -> Path:
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 19 else 8
    onnx.save(model, path)
    return path


def _f(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


def fp16_overflow(path: Path) -> Path:
    """X in [1, 2] times 200 (fine in float16), times 400 (80,000-160,000: past float16's
    65,504, so inf where float16 is really computed), then scaled back down. The origin is
    ``Scale/Up`` (the second Mul); ``Scale/Down`` and ``Shift`` only carry the inf."""
    nodes = [helper.make_node("Mul", ["X", "k200"], ["a"], name="Scale/Pre"),
             helper.make_node("Mul", ["a", "k400"], ["b"], name="Scale/Up"),
             helper.make_node("Mul", ["b", "k001"], ["c"], name="Scale/Down"),
             helper.make_node("Add", ["c", "one"], ["Y"], name="Shift")]
    inits = [_f("k200", 200.0), _f("k400", 400.0), _f("k001", 0.001), _f("one", 1.0)]
    return _save(nodes, inits, [2, 8], path, "fp16_overflow")


def one_pass_variance(path: Path) -> Path:
    """A LayerNorm whose variance is E[x²] − E[x]²: for x near 30,000 both terms are near
    9e8, where float32 keeps 3 significant digits of their difference (≈ 33). The origin is
    ``LayerNorm_0/Sub`` (its inputs agree with the float64 shadow to 1e-7); Abs, Add, Sqrt,
    Reciprocal and the last Mul carry or magnify it."""
    nodes = [
        helper.make_node("ReduceMean", ["X", "axes"], ["m"], name="LayerNorm_0/Mean"),
        helper.make_node("Mul", ["X", "X"], ["x2"], name="LayerNorm_0/Square"),
        helper.make_node("ReduceMean", ["x2", "axes"], ["ex2"], name="LayerNorm_0/MeanSquare"),
        helper.make_node("Mul", ["m", "m"], ["m2"], name="LayerNorm_0/SquareMean"),
        helper.make_node("Sub", ["ex2", "m2"], ["var"], name="LayerNorm_0/Sub"),
        helper.make_node("Abs", ["var"], ["avar"], name="LayerNorm_0/Abs"),
        helper.make_node("Add", ["avar", "eps"], ["ve"], name="LayerNorm_0/AddEps"),
        helper.make_node("Sqrt", ["ve"], ["sd"], name="LayerNorm_0/Sqrt"),
        helper.make_node("Reciprocal", ["sd"], ["inv"], name="LayerNorm_0/Reciprocal"),
        helper.make_node("Sub", ["X", "m"], ["centred"], name="LayerNorm_0/Centre"),
        helper.make_node("Mul", ["centred", "inv"], ["Y"], name="LayerNorm_0/Scale"),
    ]
    inits = [numpy_helper.from_array(np.array([-1], np.int64), "axes"), _f("eps", 1e-5)]
    return _save(nodes, inits, [4, D], path, "one_pass_variance")


def shifted_layernorm(path: Path, opset: int = 19) -> Path:
    """Small inputs shifted by 10,000 inside the graph, then the nine-node LayerNorm that ONNX
    Runtime fuses (``LayerNormFusion``, at basic from opset 17 on): the fused kernel's
    variance loses what the decomposed Sub keeps. Noise on the small graph input barely moves
    the output, so the fusion's error stands far above its floor. The origin is the fused
    region; the shift Add before it agrees on every level."""
    def mean(x: str, y: str, name: str) -> onnx.NodeProto:
        if opset < 18:
            return helper.make_node("ReduceMean", [x], [y], keepdims=1, axes=[-1], name=name)
        return helper.make_node("ReduceMean", [x, "axes"], [y], keepdims=1, name=name)

    nodes = [
        helper.make_node("Add", ["X", "shift"], ["shifted"], name="Shift"),
        mean("shifted", "m", "LN/Mean"),
        helper.make_node("Sub", ["shifted", "m"], ["d"], name="LN/Sub"),
        helper.make_node("Pow", ["d", "two"], ["p"], name="LN/Pow"),
        mean("p", "v", "LN/Var"),
        helper.make_node("Add", ["v", "eps"], ["ve"], name="LN/AddEps"),
        helper.make_node("Sqrt", ["ve"], ["s"], name="LN/Sqrt"),
        helper.make_node("Div", ["d", "s"], ["n"], name="LN/Div"),
        helper.make_node("Mul", ["n", "G"], ["ng"], name="LN/Gamma"),
        helper.make_node("Add", ["ng", "B"], ["Y"], name="LN/Beta"),
    ]
    inits = [numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             _f("shift", 10000.0), _f("two", 2.0), _f("eps", 1e-5),
             numpy_helper.from_array(np.ones(D, np.float32), "G"),
             numpy_helper.from_array(np.zeros(D, np.float32), "B")]
    return _save(nodes, inits, [4, D], path, "shifted_layernorm", opset)


def clean_chain(path: Path) -> Path:
    """Relu, Mul and Add on small values: every path agrees."""
    nodes = [helper.make_node("Relu", ["X"], ["r"], name="Relu"),
             helper.make_node("Mul", ["r", "half"], ["h"], name="Half"),
             helper.make_node("Add", ["h", "one"], ["Y"], name="Shift")]
    return _save(nodes, [_f("half", 0.5), _f("one", 1.0)], [2, 8], path, "clean_chain")


def quantized_mask(path: Path) -> Path:
    """An additive attention mask (0 or −3.4e38) through a QuantizeLinear → DequantizeLinear
    pair with scale 1.33e36 and zero point 127 (as an int8-static builder quantises such a
    mask), added to a projection, then Softmax and an output MatMul. The dequantized mask is
    a second graph output, so both sides keep it, and it reads back the same on both (0 and
    −1.69e38). OpenVINO folds the pair into the Add after it and loses x where the mask is
    0 (x + 0 becomes about −4.7e30), so every unmasked token gets the same weight; ONNX
    Runtime adds the dequantized values as declared. Run alone from the dequantized mask,
    the nodes after it agree: only the pair and the Add together show it."""
    shape = [2, 8]
    nodes = [helper.make_node("QuantizeLinear", ["M", "s", "zp"], ["mq"], name="Mask/Quantize"),
             helper.make_node("DequantizeLinear", ["mq", "s", "zp"], ["md"],
                              name="Mask/Dequantize"),
             helper.make_node("MatMul", ["X", "W"], ["h"], name="Proj"),
             helper.make_node("Add", ["h", "md"], ["xm"], name="Mask/Add"),
             helper.make_node("Softmax", ["xm"], ["p"], axis=-1, name="Softmax"),
             helper.make_node("MatMul", ["p", "W"], ["Y"], name="Out")]
    weights = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32) * 0.3
    inits = [_f("s", 1.33e36), numpy_helper.from_array(np.array(127, np.uint8), "zp"),
             numpy_helper.from_array(weights, "W")]
    graph = helper.make_graph(
        nodes, "quantized_mask",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("M", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("md", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def quantized_mask_inputs(path: Path) -> Path:
    """Inputs for ``quantized_mask``: the last three of eight tokens masked."""
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    mask = np.zeros((2, 8), np.float32)
    mask[:, 5:] = -3.4e38
    np.savez(path, X=x, M=mask)
    return path


def dynamic_mask_attention(path: Path) -> Path:
    """Attention scores (a MatMul, QuantizeLinear → DequantizeLinear, a Div, another pair)
    plus an additive mask made from an int64 0/1 mask as an int8-static builder quantises
    it (1 − mask through a pair, times a dequantized −3.4e38, through a pair at scale
    1.33e36, zero point 127), with the batch and sequence symbolic. OpenVINO f32 computes
    the unmasked scores as inf where the graph's dimensions are symbolic (−3.4e38 masked is
    right on both), but exactly where they are fixed: a region cut from it and fed fixed
    shapes does not show it."""
    def f(name: str, value: float, dtype: type = np.float32) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(value, dtype), name)

    nodes = [helper.make_node("MatMul", ["Q", "K"], ["sc"], name="Scores"),
             helper.make_node("QuantizeLinear", ["sc", "s3", "z3"], ["scq"], name="Scores/Q"),
             helper.make_node("DequantizeLinear", ["scq", "s3", "z3"], ["scd"],
                              name="Scores/DQ"),
             helper.make_node("Div", ["scd", "two"], ["dv"], name="Scale"),
             helper.make_node("QuantizeLinear", ["dv", "s3", "z3"], ["dvq"], name="Scale/Q"),
             helper.make_node("DequantizeLinear", ["dvq", "s3", "z3"], ["x"], name="Scale/DQ"),
             helper.make_node("Cast", ["M"], ["mf"], to=TensorProto.FLOAT, name="Mask/Cast"),
             helper.make_node("Sub", ["one", "mf"], ["inv"], name="Mask/Sub"),
             helper.make_node("QuantizeLinear", ["inv", "s1", "z1"], ["iq"], name="Mask/Sub/Q"),
             helper.make_node("DequantizeLinear", ["iq", "s1", "z1"], ["idq"],
                              name="Mask/Sub/DQ"),
             helper.make_node("DequantizeLinear", ["cq", "s2", "z2"], ["big"],
                              name="Mask/Big"),
             helper.make_node("Mul", ["idq", "big"], ["mm"], name="Mask/Mul"),
             helper.make_node("QuantizeLinear", ["mm", "s2", "z2"], ["mq"],
                              name="Mask/Quantize"),
             helper.make_node("DequantizeLinear", ["mq", "s2", "z2"], ["md"],
                              name="Mask/Dequantize"),
             helper.make_node("Add", ["x", "md"], ["Y"], name="Mask/Add")]
    inits = [f("one", 1.0), f("s1", 1 / 255), f("z1", -128, np.int8), f("cq", -128, np.int8),
             f("s2", 1.3344406e36), f("z2", 127, np.int8), f("s3", 0.05), f("z3", 0, np.int8),
             f("two", 2.0)]
    b, s = "batch", "seq"
    graph = helper.make_graph(
        nodes, "dynamic_mask_attention",
        [helper.make_tensor_value_info("Q", TensorProto.FLOAT, [b, 2, s, 4]),
         helper.make_tensor_value_info("K", TensorProto.FLOAT, [b, 2, 4, s]),
         helper.make_tensor_value_info("M", TensorProto.INT64, [b, 1, 1, s])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [b, 2, s, s])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def dynamic_mask_attention_inputs(path: Path) -> Path:
    """Inputs for ``dynamic_mask_attention``: the last three of eight tokens masked."""
    rng = np.random.default_rng(0)
    mask = np.ones((2, 1, 1, 8), np.int64)
    mask[..., 5:] = 0
    np.savez(path, Q=rng.standard_normal((2, 2, 8, 4)).astype(np.float32),
             K=rng.standard_normal((2, 2, 4, 8)).astype(np.float32), M=mask)
    return path
