"""Products: MatMul against a weight initializer, Gemm with bias, batched Einsum."""

from __future__ import annotations

import numpy as np

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.cases.inputs import uniform
from gero_runner.cases.synthetic.common import F16_ACCUMULATION, node, node_with

_F16_DOT = F16_ACCUMULATION
_P = 6


def _matmul_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    k = shape[-1]
    return {"X": uniform(rng, dtype, shape, -2, 2), "W": uniform(rng, dtype, (k, _P), -1, 1)}


def _gemm_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    k = shape[1]
    return {"A": uniform(rng, dtype, shape, -2, 2), "B": uniform(rng, dtype, (_P, k), -1, 1),
            "C": uniform(rng, dtype, (_P,), -1, 1)}


def _einsum_inputs(rng: np.random.Generator, dtype: str, shape: Shape) -> Arrays:
    n, j = shape[0], shape[2]
    return {"A": uniform(rng, dtype, shape, -2, 2), "B": uniform(rng, dtype, (n, j, 5), -1, 1)}


CASES = [
    OpCase("MatMul", "MatMul", node_with("MatMul", ("X", "W"), ("X",)), _matmul_inputs,
           lambda i: [i["X"] @ i["W"]], ((4, 3, 16), (5, 24)), tolerance=_F16_DOT,
           note="(N, ..., K) @ (K, 6) weight initializer"),
    OpCase("Gemm", "Gemm",
           node_with("Gemm", ("A", "B", "C"), ("A",), alpha=0.5, beta=2.0, transB=1),
           _gemm_inputs, lambda i: [0.5 * (i["A"] @ i["B"].T) + 2.0 * i["C"]],
           ((4, 16), (6, 9)), variants=("gemm_matmul_add",), tolerance=_F16_DOT,
           note="alpha=0.5, beta=2, transB=1; B and C are initializers"),
    OpCase("Einsum", "Einsum", node("Einsum", "A", "B", equation="bij,bjk->bik"),
           _einsum_inputs, lambda i: [np.einsum("bij,bjk->bik", i["A"], i["B"])],
           ((4, 3, 8), (2, 5, 12)), tolerance=_F16_DOT, note="batched matrix product"),
]
