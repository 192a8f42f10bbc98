"""OpenVINO's CPU plugin, reading ONNX directly: one path at float32 inference precision,
one at the plugin's default precision.

The default is what the plugin reports for ``INFERENCE_PRECISION_HINT`` on this CPU: on a
CPU with bfloat16 instructions it is ``bf16``, so a float32 model is computed in bfloat16
unless told otherwise. That path is labelled with what was reported (``bf16-default``), and
its settings record it as ``inference_precision`` so the overview can say so.

openvino is imported inside functions (see backends.base); importing it costs ~0.1 s.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from gero_runner.backends.base import Backend, PathSpec
from gero_runner.cases.base import Arrays, CaseInstance

BACKEND = "openvino"
F32 = "f32"
DEFAULT = "default"


@functools.cache  # one Core per worker process: it loads the CPU plugin once
def _core() -> Any:
    import openvino

    return openvino.Core()


@functools.cache
def default_precision() -> str:
    """The CPU plugin's inference precision when none is asked for (e.g. 'bf16')."""
    hint = _core().get_property("CPU", "INFERENCE_PRECISION_HINT")
    return str(hint.get_type_name())


class OpenVino(Backend):
    name = BACKEND
    prefix = "openvino"
    distribution = "openvino"
    module = "openvino"
    extra = "openvino"

    def paths(self, threads: int) -> list[PathSpec]:
        default = default_precision()
        # No threads contract (with_threads): a thread count is a compile-time setting here,
        # and a compile costs ~30-150 ms a session; the inference threads are recorded.
        return [self.spec(F32, threads, _settings(F32, F32, threads)),
                self.spec(f"{default}-{DEFAULT}", threads, _settings(DEFAULT, default, threads))]

    def supports(self, case: CaseInstance) -> str | None:
        odd = sorted({str(x.dtype) for x in case.inputs.values() if x.dtype.kind in "OUSVc"})
        if odd:
            return f"OpenVINO takes no {', '.join(odd)} tensors"
        return None

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        import openvino

        core = _core()
        read = core.read_model(model, openvino.Tensor(np.empty(0, np.uint8)))
        config: dict[str, Any] = {
            "INFERENCE_NUM_THREADS": int(settings["inference_num_threads"]),
            "NUM_STREAMS": 1,
            "ENABLE_CPU_PINNING": False,  # workers share the machine's cores
        }
        if settings["inference_precision_hint"] != DEFAULT:
            config["INFERENCE_PRECISION_HINT"] = settings["inference_precision_hint"]
        compiled = core.compile_model(read, "CPU", config)
        return compiled, compiled.create_infer_request()

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        compiled, request = session
        # By position: the ONNX frontend keeps the graph's input order and names.
        request.infer({p.get_any_name(): inputs[p.get_any_name()] for p in compiled.inputs})
        # Copies: the request reuses its output buffers on the next run.
        return [np.array(request.get_output_tensor(i).data, copy=True)
                for i in range(len(compiled.outputs))]


def _settings(hint: str, precision: str, threads: int) -> dict[str, Any]:
    return {"device": "CPU", "inference_precision_hint": hint,
            "inference_precision": precision, "inference_num_threads": threads,
            "num_streams": 1}


RUNTIME = OpenVino()
