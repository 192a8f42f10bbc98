"""The official onnx ReferenceEvaluator: a correctness implementation, slow by design.

It is the path every runtime is compared with (``agreement``), not an oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from gero_runner.backends import names
from gero_runner.backends.base import NOT_APPLICABLE, Backend, PathSpec, as_array
from gero_runner.backends.reference_evaluator import (
    make_evaluator,
    run_releasing,
    stock_evaluator,
)
from gero_runner.case import Arrays

if TYPE_CHECKING:
    import onnx

BACKEND = "onnx-reference"
CORRECTED = names.CORRECTED
KERNELS = "gero_runner.backends.reference_kernels"
"""Vectorised Conv/pool/recurrent kernels both evaluator paths run (same results)."""


class OnnxReference(Backend):
    name = BACKEND
    distribution = "onnx"
    module = "onnx"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(BACKEND, BACKEND, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator",
                          "kernels": KERNELS})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        return make_evaluator(model)

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # inf/NaN results are observed, not warned about
            outputs = run_releasing(session, inputs)
        missing = [n for n in session.output_names if n not in outputs]
        if missing:
            raise RuntimeError(f"the evaluator computed no output {', '.join(missing)}")
        return [as_array(outputs[n]) for n in session.output_names]

    def evaluator(self, model: onnx.ModelProto) -> Any:
        return stock_evaluator(model)

    def intermediates(self, model: onnx.ModelProto, settings: Mapping[str, Any],
                      names: list[str], feeds_list: list[Arrays]
                      ) -> list[dict[str, np.ndarray]]:
        # The evaluator computes any tensor it is asked for: no outputs to mark.
        evaluator = self.evaluator(model)
        out = []
        for feeds in feeds_list:
            with np.errstate(all="ignore"):
                values = run_releasing(evaluator, feeds, wanted=names)
            missing = [n for n in names if n not in values]
            if missing:
                raise RuntimeError(f"the evaluator computed no value for {', '.join(missing)}")
            out.append({n: np.asarray(values[n]) for n in names})
        return out


RUNTIME = OnnxReference()
PATH = RUNTIME.paths(0)[0]


def version() -> str:
    return RUNTIME.version()


class CorrectedReference(OnnxReference):
    """The ReferenceEvaluator with gero's corrections of its known defects
    (``reference_defects``): what ORT is compared with where the stock evaluator shows one,
    and what the float64 shadow runs."""

    name = CORRECTED

    def version(self) -> str:
        return f"{super().version()}+gero"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(CORRECTED, CORRECTED, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator",
                          "corrected": "gero_runner.backends.reference_defects",
                          "kernels": KERNELS})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        import onnx

        return self.evaluator(onnx.load_from_string(model))

    def evaluator(self, model: onnx.ModelProto) -> Any:
        from gero_runner.backends.reference_defects import corrected_evaluator

        return corrected_evaluator(model)


CORRECTED_RUNTIME = CorrectedReference()
CORRECTED_PATH = CORRECTED_RUNTIME.paths(0)[0]
