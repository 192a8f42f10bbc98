"""Entry point of the variant check family: each algebraic variant of a case's graph runs
on every ORT level and on the ReferenceEvaluator, against the base graph on the same path
and inputs; one observation (variant:NAME) per path and output.

A variant that disagrees beyond tolerance is a divergence (two ways of computing the same
function disagree; the float64 arbiter says which side is closer), non-finite values where
the base graph is finite are a contract issue, as in the agreement check.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gero_runner.checks.contracts.paths import (
    PathRunner,
    execution_row,
    family_paths,
)
from gero_runner.checks.variants.builders import VARIANTS, VariantError, build_variant
from gero_runner.classify import classify, failure_kind
from gero_runner.errors import error_text
from gero_runner.execution.paths import truth_arbiter
from gero_runner.schema import PASSED, Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext

BASE_LABEL = "base-graph"


def run_variants(ctx: CaseContext) -> list[Observation]:
    with np.errstate(all="ignore"):  # variants run on edge values on purpose
        return _run(ctx)


def _run(ctx: CaseContext) -> list[Observation]:
    paths, evidence = family_paths(ctx, "variant", ctx.case.variants, VARIANTS)
    rows: list[Observation] = []
    for name in ctx.case.variants:
        check = f"variant:{name}"
        try:
            model = build_variant(name, ctx.case.model, ctx.case.inputs)
        except VariantError as e:
            rows += [execution_row(ctx, check, p, "", ctx.case.dtype,
                                   f"variant {name}: cannot build: {e}", BASE_LABEL)
                     for p in paths]
            continue
        ctx.writer.add_bytes(f"variants/{name}/model.onnx", model)
        for path in paths:
            assert path.outputs is not None
            try:
                outputs = PathRunner(ctx, path, model, kept=True).once(ctx.case.inputs)
            except Exception as e:
                rows.append(execution_row(ctx, check, path, "", ctx.case.dtype,
                                          f"variant {name}: {error_text(e)}", BASE_LABEL))
                continue
            for j, out_name in enumerate(ctx.output_names):
                a, r = outputs[j], path.outputs[j]
                dtype = str(r.dtype)
                rtol, atol = ctx.tolerance(dtype)
                cmp = ctx.compare(a, r, rtol, atol)
                result, reason = classify(cmp, rtol, atol)
                arbiter = truth_arbiter(ctx, j, a, r, rtol, atol) if result != PASSED else "-"
                rows.append(ctx.row(
                    check=check, output_name=out_name, actual=path, reference_name=BASE_LABEL,
                    reference_version=path.version, dtype=dtype, cmp=cmp, rtol=rtol,
                    atol=atol, result=result, reason=f"variant {name}: {reason}",
                    cause=reason if result != PASSED else "",
                    failure_kind=failure_kind(cmp),
                    arbiter=arbiter, actual_hash=ctx.digest(a), reference_hash=ctx.digest(r),
                    actual_file=evidence.add(f"variants/{name}/{path.name}/output_{j}.npy", a),
                    reference_file=path.files[j] if j < len(path.files) else "",
                    reference_ms=math.nan,
                    details={"variant": name, "variant_model": f"variants/{name}/model.onnx",
                             "bit_exact": cmp.bit_exact}))
    return rows
