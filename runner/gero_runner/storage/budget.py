"""Size budgets of a case: the largest tensor it may make, and the evidence it may keep.

``--max-tensor-mb`` bounds every tensor of a case. A user model's inputs, intermediates and
outputs whose shapes ONNX shape inference can tell from the fed shapes are checked before
anything runs (``oversized_tensor``); an output whose size shows only when it is computed is
checked then, and the path fails with that sentence instead of being compared in float64.

``--max-evidence-mb`` bounds the tensors one case keeps on disk. Its inputs and expected
outputs are always kept (a replay feeds the one and compares with the other, and cannot make
either again); past the budget, a tensor is kept as a summary instead (shape, dtype,
hash, statistics, its largest elements: ``tensor_summary``), listed in ``summaries.json``
and in the case record, and the rows that compare it say so and carry their worst elements.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gero_runner.storage.hashing import tensor_hash

SUMMARIES = "summaries.json"
"""The artifact member that lists the tensors kept as summaries, by their logical path."""
LARGEST = 8
"""Elements of largest magnitude a summary keeps (with their indices)."""


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.1f} MiB"


def _number(x: Any) -> float | str:
    """A JSON-safe scalar: non-finite values as text."""
    value = float(x)
    return value if math.isfinite(value) else str(value)


def _top(values: np.ndarray, count: int) -> list[int]:
    """Flat indices of the ``count`` largest values, largest first (ties: lowest index), in
    linear time: a full sort of a 100 MB tensor takes seconds."""
    if values.size > count:
        part = np.argpartition(values, values.size - count)[values.size - count:]
    else:
        part = np.arange(values.size)
    return sorted((int(k) for k in part), key=lambda k: (-values[k], k))


def tensor_summary(x: np.ndarray, budget: int) -> dict[str, Any]:
    """What a tensor kept as a summary keeps: enough to recognise it (hash) and to read its
    range, never enough to replay it."""
    summary: dict[str, Any] = {"shape": list(x.shape), "dtype": str(x.dtype),
                               "bytes": int(x.nbytes), "sha256": tensor_hash(x),
                               "reason": f"{mib(x.nbytes)}: over the case's "
                                         f"{mib(budget)} evidence budget (--max-evidence-mb)"}
    if x.size == 0 or x.dtype.kind not in "biuf":
        return summary
    flat = x.reshape(-1)
    if x.dtype.kind == "f":
        finite = np.isfinite(flat)
        summary.update(nan=int(np.isnan(flat).sum()), inf=int((~finite).sum()
                                                               - np.isnan(flat).sum()))
        values = flat[finite] if not finite.all() else flat
    else:
        values = flat
    if values.size:
        wide = values.astype(np.float64)
        summary.update(min=_number(wide.min()), max=_number(wide.max()),
                       mean=_number(wide.mean()), std=_number(wide.std()))
    magnitude = np.abs(flat.astype(np.float64))
    magnitude[np.isnan(magnitude)] = -1.0
    summary["largest"] = [{"index": [int(i) for i in np.unravel_index(int(k), x.shape)],
                           "value": _number(flat[k])} for k in _top(magnitude, LARGEST)]
    return summary


def worst_elements(a: np.ndarray | None, r: np.ndarray | None, count: int = LARGEST
                   ) -> list[dict[str, Any]]:
    """The ``count`` elements of largest |a − r| (NaN on one side first), for a row whose
    tensors were not kept."""
    if a is None or r is None or a.shape != r.shape or a.size == 0 \
            or a.dtype.kind not in "biuf" or r.dtype.kind not in "biuf":
        return []
    wa, wr = a.reshape(-1).astype(np.float64), r.reshape(-1).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(wa - wr)
    diff[np.isnan(diff) & ~(np.isnan(wa) & np.isnan(wr))] = np.inf
    diff[np.isnan(diff)] = -1.0  # NaN on both sides agrees
    return [{"index": [int(i) for i in np.unravel_index(int(k), a.shape)],
             "actual": _number(wa[k]), "reference": _number(wr[k]),
             "abs_error": _number(diff[k])} for k in _top(diff, count) if diff[k] > 0]


def oversized_tensor(model: Any, inputs: dict[str, np.ndarray], limit: int) -> str | None:
    """The sentence refusing a case that would make a tensor over ``limit`` bytes: an input,
    or an intermediate or output whose static shape inference tells from the fed shapes;
    None when none does (or inference cannot tell)."""
    import onnx
    from onnx import helper

    for name, array in inputs.items():
        if array.nbytes > limit:
            return (f"input {name!r} of shape {list(array.shape)} {array.dtype} takes "
                    f"{mib(array.nbytes)}, over the {mib(limit)} a tensor may take "
                    "(--max-tensor-mb)")
    fed = onnx.ModelProto()
    fed.CopyFrom(model)
    for value in fed.graph.input:
        x = inputs.get(value.name)
        if x is None or not value.type.HasField("tensor_type"):
            continue
        shape = value.type.tensor_type.shape
        shape.ClearField("dim")
        for d in x.shape:
            shape.dim.add().dim_value = int(d)
    try:
        inferred = onnx.shape_inference.infer_shapes(fed, data_prop=True)
    except Exception:  # inference is a best effort; the run's own check follows
        return None
    outputs = {o.name for o in inferred.graph.output}
    for value in [*inferred.graph.value_info, *inferred.graph.output]:
        tensor = value.type.tensor_type
        if not value.type.HasField("tensor_type") or not tensor.HasField("shape") \
                or not tensor.elem_type:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if any(d < 0 for d in dims):
            continue
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except (KeyError, TypeError, ValueError):
            continue
        size = math.prod(dims) * dtype.itemsize
        if size > limit:
            kind = "output" if value.name in outputs else "intermediate tensor"
            return (f"{kind} {value.name!r} would have shape {dims} {dtype}: "
                    f"{mib(size)}, over the {mib(limit)} a tensor may take "
                    "(--max-tensor-mb); the case was not run")
    return None


def oversized_output(outputs: list[np.ndarray], names: list[str], limit: int) -> str | None:
    """The sentence failing a path whose output came out over ``limit`` bytes."""
    for j, x in enumerate(outputs):
        if x.nbytes > limit:
            name = repr(names[j]) if j < len(names) else str(j)
            return (f"output {name} came out with shape {list(x.shape)} {x.dtype}: "
                    f"{mib(x.nbytes)}, over the {mib(limit)} a tensor may take "
                    "(--max-tensor-mb); not compared")
    return None
