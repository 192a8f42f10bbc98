"""Rank change: the same examples with an added unit axis give the same outputs with that
unit axis, where the operator allows it.

"Allows" is decided by the operator's own float64 formula and by ONNX shape inference: the
entry's graph is rebuilt for the unsqueezed inputs, and the law is stated only when the
formula on the unsqueezed inputs equals the unsqueezed formula result and the graph is valid.
Only synthetic entries (which have a formula and a graph builder) carry this law.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import onnx

from gero_runner.case import Arrays, OpCase, Shape
from gero_runner.checks.contracts.paths import (
    Evidence,
    PathRunner,
    compare_law,
    execution_row,
    law_row,
)
from gero_runner.errors import error_text
from gero_runner.schema import Observation
from gero_runner.storage.hashing import tensor_hash

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult

CANDIDATE_AXES = (1, 0)


@functools.lru_cache(maxsize=1)
def _entries() -> dict[str, OpCase]:
    from gero_runner.cases.synthetic.registry import all_cases

    return all_cases()


def case_shape(case_id: str) -> Shape | None:
    """The shape label of a synthetic case id (synthetic/NAME/4x16/float32)."""
    parts = case_id.split("/")
    if len(parts) < 4:
        return None
    label = parts[-2]
    if label == "scalar":
        return ()
    try:
        return tuple(int(d) for d in label.split("x"))
    except ValueError:
        return None


def _wide(inputs: Arrays) -> Arrays:
    return {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inputs.items()}


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=1e-12, atol=0, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def unsqueezed_case(entry: OpCase, dtype: str, inputs: Arrays, axis: int
                    ) -> tuple[bytes, Arrays] | None:
    """The entry's graph and feeds with a unit axis at ``axis`` in every top-rank input, or
    None when the operator does not allow it (formula changes meaning, graph invalid)."""
    from gero_runner.cases.graphs import to_model

    top = max((v.ndim for v in inputs.values()), default=0)
    if top == 0:
        return None
    new = {k: np.expand_dims(v, axis) if v.ndim == top else v for k, v in inputs.items()}
    try:
        with np.errstate(all="ignore"):
            before = [np.asarray(o) for o in entry.formula(_wide(inputs))]
            after = [np.asarray(o) for o in entry.formula(_wide(new))]
        if not _same(after, [np.expand_dims(o, axis) for o in before]):
            return None
        model = to_model(entry.graph(dtype, new), new, [o.shape for o in after])
        onnx.shape_inference.infer_shapes(model, strict_mode=True, check_type=True)
    except Exception:  # the operator does not take this rank: the law does not apply
        return None
    names = {i.name for i in model.graph.input}
    return model.SerializeToString(), {k: v for k, v in new.items() if k in names}


def rank_change_rows(ctx: CaseContext, paths: list[PathResult],
                     evidence: Evidence) -> list[Observation]:
    case = ctx.case
    entry = _entries().get(case.spec_name) if case.suite == "synthetic" else None
    shape = case_shape(case.case_id)
    if entry is None or shape is None:
        return []
    inputs = entry.inputs(np.random.default_rng(case.seed), case.dtype, shape)
    # The regenerated inputs must be the case's own, or the law would test other data.
    if any(k not in inputs or tensor_hash(inputs[k]) != tensor_hash(v)
           for k, v in case.inputs.items()):
        return []
    built = None
    for axis in CANDIDATE_AXES:
        built = unsqueezed_case(entry, case.dtype, inputs, axis)
        if built is not None:
            break
    if built is None:
        return []
    model, feeds = built
    figures = {"unit_axis": axis,
               "shapes": {k: list(v.shape) for k, v in feeds.items()}}
    rows = []
    for path in paths:
        assert path.outputs is not None
        try:
            out = PathRunner(ctx, path, model, kept=True).once(feeds)
        except Exception as e:
            rows.append(execution_row(ctx, "contract:rank_change", path, "", case.dtype,
                                      f"rank_change: the graph with a unit axis at {axis} "
                                      f"failed: {error_text(e)}", "law:unsqueezed-output"))
            continue
        for j, name in enumerate(ctx.output_names):
            dtype = str(path.outputs[j].dtype)
            rtol, atol = ctx.tolerance(dtype)
            res = compare_law(ctx, "rank_change", out[j],
                              np.expand_dims(path.outputs[j], axis), rtol, atol,
                              actual_label=f"f(x with unit axis {axis})",
                              reference_label="f(x) with unit axis")
            rows.append(law_row(ctx, evidence, "contract:rank_change", path, name, res,
                                reference_label="law:unsqueezed-output", dtype=dtype,
                                folder="contracts/rank_change", extra=figures))
    return rows
