"""The official onnx ReferenceEvaluator: a correctness implementation, slow by design.

It is the path every runtime is compared with (``agreement``), not an oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gero_runner.backends.base import NOT_APPLICABLE, Backend, PathSpec, as_array
from gero_runner.case import Arrays

BACKEND = "onnx-reference"
CORRECTED = "onnx-reference-corrected"


class OnnxReference(Backend):
    name = BACKEND
    prefix = "onnx-reference"
    distribution = "onnx"
    module = "onnx"
    title = "the ReferenceEvaluator"
    short = "ref"
    path_label = "reference"  # its one path has no setting

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


class CorrectedReference(OnnxReference):
    """The ReferenceEvaluator with gero's corrections of its known defects
    (``reference_defects``): what ORT is compared with where the stock evaluator shows one,
    and what the float64 shadow runs."""

    name = CORRECTED
    prefix = CORRECTED
    title = "the corrected ReferenceEvaluator"
    short = "ref+"
    path_label = CORRECTED

    def version(self) -> str:
        return f"{super().version()}+gero"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(CORRECTED, CORRECTED, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator",
                          "corrected": "gero_runner.backends.reference_defects"})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        import onnx

        from gero_runner.backends.reference_defects import corrected_evaluator

        return corrected_evaluator(onnx.load_from_string(model))


CORRECTED_RUNTIME = CorrectedReference()
CORRECTED_PATH = CORRECTED_RUNTIME.paths(0)[0]
