"""The official onnx ReferenceEvaluator: a correctness implementation, slow by design."""

from __future__ import annotations

import functools
import time
from importlib import metadata
from typing import Any

import numpy as np

from gero_runner.cases.base import Arrays

BACKEND = "onnx-reference"


@functools.cache  # reading package metadata costs ~1 ms; rows ask per output
def version() -> str:
    return metadata.version("onnx")


def make_evaluator(model: bytes) -> Any:
    import onnx
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(onnx.load_from_string(model))


def run_timed(evaluator: Any, inputs: Arrays, repeats: int) -> tuple[list[list[np.ndarray]], float]:
    outputs, times = [], []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        with np.errstate(all="ignore"):  # inf/NaN results are observed, not warned about
            outputs.append([np.asarray(o) for o in evaluator.run(None, inputs)])
        times.append((time.perf_counter() - start) * 1e3)
    return outputs, float(np.median(times))
