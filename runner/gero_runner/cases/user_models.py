"""Models the user brings (``--model PATH``): seeded inputs from the input signature, a
float64 shadow execution as the arbiter, batch contracts on a dynamic leading dimension.

The shadow (every float tensor widened to float64, run on the ReferenceEvaluator) is
computed here, in the parent, because the comparison of every path needs it as the case's
expected outputs. A shadow that cannot run is recorded as its own execution observation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner.cases.base import BATCH_INDEPENDENT, BATCH_NONE, CaseInstance, stable_seed
from gero_runner.errors import GeroError
from gero_runner.models import shadow, signature
from gero_runner.models.check import DECISION_TASKS, OTHER_TASKS
from gero_runner.models.variants import parse_variants
from gero_runner.request import RunRequest

SUITE = "model"
SHADOW_LABEL = "float64-shadow"


def model_options(request: RunRequest, output_names: list[str] | None,
                  source: str) -> dict[str, Any]:
    """--task, --variants and --output-kind, validated against the model's outputs."""
    from gero_runner.metrics.parity import parse_output_kinds

    opts = request.model_options
    task = opts.task
    if task is not None and task not in (*DECISION_TASKS, *OTHER_TASKS):
        raise GeroError(f"unknown --task {task!r}; choose from "
                        f"{', '.join((*DECISION_TASKS, *OTHER_TASKS))} (decisions: "
                        f"{', '.join(DECISION_TASKS)})")
    kinds = parse_output_kinds(list(opts.output_kinds))
    if output_names is not None:
        unknown = [k for k in kinds if k not in output_names]
        if unknown and request.models and len(request.models) == 1:
            raise GeroError(f"{source}: --output-kind names unknown output(s) "
                            f"{', '.join(unknown)}; outputs: {', '.join(output_names)}")
        kinds = {k: v for k, v in kinds.items() if k in output_names}
    return {"task": task, "variants": parse_variants(list(opts.variants)),
            "output_kinds": kinds}


def _shadow(model: onnx.ModelProto, inputs: dict[str, np.ndarray]
            ) -> tuple[dict[str, np.ndarray] | None, dict[str, np.ndarray] | None, str]:
    names = [o.name for o in model.graph.output]
    try:
        outs = shadow.run_shadow(model, inputs)
    except Exception as e:  # the evaluator may lack an operator: the run goes on without it
        return None, None, f"{type(e).__name__}: {str(e)[:500]}"
    if len(outs) != len(names):
        return None, None, f"the shadow gave {len(outs)} outputs for {len(names)} graph outputs"
    exact, rounded = {}, {}
    for o, name in zip(model.graph.output, outs, strict=True):
        elem = o.type.tensor_type.elem_type
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)) if elem else name.dtype
        exact[o.name] = name
        rounded[o.name] = name.astype(dtype) if name.dtype.kind == "f" else name
    return rounded, exact, ""


def case_for_model(path: str, request: RunRequest) -> CaseInstance:
    model = signature.load_model(path)
    source = f"--model {path}"
    specs = signature.input_specs(model, source)
    dims = signature.parse_dims(list(request.model_options.dims))
    if len(request.models) == 1:
        signature.check_dim_names(specs, dims, source)
    name = Path(path).stem
    label = signature.dims_label(specs, dims)
    case_id = f"{SUITE}/{name}/{label}"
    seed = stable_seed(request.seed, case_id)
    inputs = signature.make_inputs(model, specs, dims, seed)
    expected, exact, error = _shadow(model, inputs)
    outputs = [o.name for o in model.graph.output]
    first = next((x for x in inputs.values() if x.dtype.kind == "f"), next(iter(inputs.values())))
    metadata: dict[str, Any] = {"path": str(Path(path).resolve()), "dims": label,
                                "model": model_options(request, outputs, source),
                                "reference_repeats": 1}
    if error:
        metadata["shadow_error"] = error
    try:
        data = model.SerializeToString()
    except ValueError as e:  # protobuf refuses > 2 GiB
        raise GeroError(f"{source}: too large to serialise in one piece ({e})") from e
    return CaseInstance(
        suite=SUITE, case_id=case_id, op_type=name, case_name=f"{name} {label}",
        dtype=str(first.dtype), seed=seed, model=data, inputs=inputs, expected=expected,
        expected_label=SHADOW_LABEL, expected_version=onnx.__version__,
        expected_exact=exact,
        batch=BATCH_INDEPENDENT if signature.has_dynamic_batch(specs) else BATCH_NONE,
        metadata=metadata,
    )


def cases_for_request(request: RunRequest) -> list[CaseInstance]:
    return [case_for_model(p, request) for p in request.models]
