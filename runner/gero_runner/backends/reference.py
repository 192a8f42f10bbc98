"""The official onnx ReferenceEvaluator: a correctness implementation, slow by design.

It is the path every runtime is compared with (``agreement``), not an oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gero_runner.backends.base import NOT_APPLICABLE, Backend, PathSpec, as_array
from gero_runner.cases.base import Arrays

BACKEND = "onnx-reference"


class OnnxReference(Backend):
    name = BACKEND
    prefix = "onnx-reference"
    distribution = "onnx"
    module = "onnx"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(BACKEND, BACKEND, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator"})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        return make_evaluator(model)

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # inf/NaN results are observed, not warned about
            return [as_array(o) for o in session.run(None, inputs)]


RUNTIME = OnnxReference()
PATH = RUNTIME.paths(0)[0]


def version() -> str:
    return RUNTIME.version()


def make_evaluator(model: bytes) -> Any:
    import onnx
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(onnx.load_from_string(model))
