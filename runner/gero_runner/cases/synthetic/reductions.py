"""Reductions (axes as an input since opset 18) and arg-reductions with ties."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gero_runner.case import BATCH_REDUCE, Arrays, OpCase, Shape
from gero_runner.cases.inputs import edge_values, uniform, with_edges, with_ties
from gero_runner.cases.synthetic.common import F16_ACCUMULATION, Generator, node, node_with

SHAPES = ((4, 6, 8), (3, 40))
_INT64 = ("int64",)
_F16_SUM = F16_ACCUMULATION


def _reduce(op_type: str, formula: Callable[[np.ndarray, int], np.ndarray],
            gen: Callable[[np.random.Generator, str, Shape], Arrays], *, name: str = "",
            axis: int = -1, keepdims: int = 1, batch: str = "independent",
            tolerance: dict[str, tuple[float, float]] | None = None,
            shapes: tuple[Shape, ...] = SHAPES, variants: tuple[str, ...] = (),
            note: str = "") -> OpCase:
    """``formula`` reduces ``axis`` and keeps it; the entry drops it when ``keepdims=0``
    (a literal keepdims type-checks against every numpy's overloads, a bool does not)."""

    def const(dtype: str, inputs: Arrays) -> Arrays:
        return {"axes": np.asarray([axis], dtype=np.int64)}

    def expected(i: Arrays) -> list[np.ndarray]:
        out = formula(i["X"], axis)
        return [out if keepdims else np.squeeze(out, axis=axis)]

    return OpCase(
        name or op_type, op_type,
        node_with(op_type, ("X", "axes"), ("X",), const=const, keepdims=keepdims),
        gen, expected, shapes, batch=batch,
        tolerance=tolerance or {}, variants=variants, note=note)


def _gen(lo: float, hi: float, edge_lo: float = -1e3, edge_hi: float = 1e3) -> Generator:
    def generate(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
        x = uniform(rng, dtype, shape, lo, hi)
        return {"X": with_edges(x, edge_values(dtype, lo=edge_lo, hi=edge_hi))}
    return generate


def _l2_gen(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape, -3, 3)
    # Squares of 300 overflow float16 (65504) although the norm itself is representable.
    return {"X": with_edges(x, [300.0, -250.0, 200.0, 1e-3, -0.0])}


def _tied_gen(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    x = uniform(rng, dtype, shape, -3, 3)
    return {"X": with_ties(with_ties(x, [5.0]), [-5.0, 5.0])}


def _arg(op_type: str, pick: Callable[..., np.ndarray]) -> OpCase:
    return OpCase(op_type, op_type,
                  node(op_type, "X", output_dtypes=_INT64, axis=-1, keepdims=1),
                  _tied_gen, lambda i: [pick(i["X"], axis=-1, keepdims=True)], SHAPES,
                  note="ties: the first index wins (select_last_index=0)")


def _sum(x: np.ndarray, axis: int) -> np.ndarray:
    total: np.ndarray = x.sum(axis=axis, keepdims=True)
    return total


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis=axis, keepdims=True)
    out: np.ndarray = top + np.log(np.exp(x - top).sum(axis=axis, keepdims=True))
    return out


CASES = [
    _reduce("ReduceSum", _sum, _gen(-3, 3), keepdims=0, tolerance=_F16_SUM),
    _reduce("ReduceSum", _sum, _gen(-3, 3), name="ReduceSum.batch", axis=0,
            batch=BATCH_REDUCE, tolerance=_F16_SUM, note="reduces across the batch axis"),
    _reduce("ReduceMean", lambda x, a: x.mean(axis=a, keepdims=True), _gen(-3, 3),
            tolerance=_F16_SUM),
    _reduce("ReduceMax", lambda x, a: x.max(axis=a, keepdims=True), _gen(-3, 3)),
    _reduce("ReduceMin", lambda x, a: x.min(axis=a, keepdims=True), _gen(-3, 3), axis=1,
            keepdims=0),
    _reduce("ReduceProd", lambda x, a: x.prod(axis=a, keepdims=True), _gen(0.8, 1.25, -2, 2),
            tolerance=_F16_SUM),
    _reduce("ReduceL1", lambda x, a: np.abs(x).sum(axis=a, keepdims=True), _gen(-3, 3),
            tolerance=_F16_SUM),
    _reduce("ReduceL2", lambda x, a: np.sqrt((x * x).sum(axis=a, keepdims=True)), _l2_gen,
            tolerance=_F16_SUM, note="float16 rows whose sum of squares overflows"),
    _reduce("ReduceSumSquare", lambda x, a: (x * x).sum(axis=a, keepdims=True), _gen(-3, 3),
            tolerance=_F16_SUM),
    _reduce("ReduceLogSumExp", _logsumexp, _gen(-20, 20, -100, 100), tolerance=_F16_SUM,
            variants=("reducelogsumexp_decomposed",),
            note="logits up to ±100: exp overflows float16 unless the maximum is shifted out"),
    _arg("ArgMax", np.argmax),
    _arg("ArgMin", np.argmin),
]
