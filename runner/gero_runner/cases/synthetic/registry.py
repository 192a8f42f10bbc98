"""All synthetic entries by unique name, and their expansion into concrete cases."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gero_runner.case import (
    BATCH_INDEPENDENT,
    BATCH_REDUCE,
    CaseInstance,
    OpCase,
    shape_label,
    stable_seed,
)
from gero_runner.cases.graphs import onnx_dtype_name, to_model, with_dynamic_batch
from gero_runner.cases.synthetic import (
    activations,
    binary,
    conv_pool,
    elementwise,
    indexing,
    linalg,
    misc,
    normalization,
    reductions,
    softmax,
)
from gero_runner.errors import GeroError

_FAMILIES = (elementwise, binary, activations, softmax, reductions, normalization, linalg,
             conv_pool, indexing, misc)


def all_cases() -> dict[str, OpCase]:
    """Every registered entry by name; a duplicate name is a programming error."""
    table: dict[str, OpCase] = {}
    for family in _FAMILIES:
        for case in family.CASES:
            if case.name in table:
                raise ValueError(f"duplicate synthetic case name {case.name!r}")
            table[case.name] = case
    return table


def select(ops: Iterable[str] | None = None) -> list[OpCase]:
    """Entries whose name or op_type is in ``ops`` (all when None); unknown names are errors."""
    table = all_cases()
    if not ops:
        return list(table.values())
    wanted = list(ops)
    known = set(table) | {c.op_type for c in table.values()}
    unknown = [o for o in wanted if o not in known]
    if unknown:
        raise GeroError(
            f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return [c for c in table.values() if c.name in wanted or c.op_type in wanted]


def instantiate(case: OpCase, dtype: str, shape: tuple[int, ...], seed: int) -> CaseInstance:
    """Materialise one entry at one dtype and shape: inputs, model and float64 formula."""
    case_id = f"synthetic/{case.name}/{shape_label(shape)}/{dtype}"
    case_seed = stable_seed(seed, case_id)
    rng = np.random.default_rng(case_seed)
    inputs = case.inputs(rng, dtype, shape)
    wide = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inputs.items()}
    with np.errstate(all="ignore"):
        exact = [np.asarray(o) for o in case.formula(wide)]
    model = to_model(case.graph(dtype, inputs), inputs, [e.shape for e in exact])
    if case.batch in (BATCH_INDEPENDENT, BATCH_REDUCE):
        # Outputs keep the batch only when examples are independent.
        model = with_dynamic_batch(model, outputs=case.batch == BATCH_INDEPENDENT)
    # Tensors the graph holds as initializers (weights, axes) are not runtime feeds.
    feeds = {i.name: inputs[i.name] for i in model.graph.input}
    output_names = [o.name for o in model.graph.output]
    expected: dict[str, np.ndarray] = {}
    for name, value, out in zip(output_names, exact, model.graph.output, strict=True):
        # Compare with the correctly rounded result in the output's own dtype.
        out_dtype = onnx_dtype_name(out.type.tensor_type.elem_type)
        with np.errstate(all="ignore"):
            expected[name] = value.astype(out_dtype)
    tol = case.tolerance.get(dtype)
    return CaseInstance(
        suite="synthetic",
        case_id=case_id,
        op_type=case.op_type,
        case_name=f"{case.name} {shape_label(shape)}",
        dtype=dtype,
        seed=case_seed,
        model=model.SerializeToString(),
        inputs=feeds,
        expected=expected,
        expected_label="numpy-float64",
        expected_version=np.__version__,
        expected_exact=dict(zip(output_names, (e.astype(np.float64) if e.dtype.kind == "f"
                                               else e for e in exact), strict=True)),
        tolerance=tol,
        batch=case.batch,
        contracts=case.contracts,
        variants=case.variants,
        spec_name=case.name,
    )


def expand(seed: int, ops: Iterable[str] | None = None,
           dtypes: Iterable[str] | None = None) -> list[CaseInstance]:
    """Every (entry, dtype, shape) instance of the selected entries, in a stable order."""
    wanted_dtypes = set(dtypes) if dtypes else None
    out = []
    for case in select(ops):
        for dtype in case.dtypes:
            if wanted_dtypes is not None and dtype not in wanted_dtypes:
                continue
            for shape in case.shapes:
                out.append(instantiate(case, dtype, shape, seed))
    return out


def cases_for_request(request: Any) -> list[CaseInstance]:
    """The synthetic cases selected by a RunRequest (--ops, --dtypes, --seed)."""
    return expand(request.seed, request.ops or None, request.dtypes or None)
