"""Determinism: repeated runs with identical settings give identical output hashes, and
whether the machine's thread count changes the bits (its own observation)."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

import numpy as np

from gero_runner import backends
from gero_runner.checks.contracts.paths import (
    Evidence,
    PathRunner,
    compare_law,
    execution_row,
    law_row,
)
from gero_runner.errors import error_text
from gero_runner.facts import NAN, law_cause
from gero_runner.schema import CONTRACT_ISSUE, PASSED, Observation
from gero_runner.storage.hashing import tensors_hash

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult


def determinism_rows(ctx: CaseContext, paths: list[PathResult]) -> list[Observation]:
    """One row per path from its timed repeats (PathResult.deterministic).

    A path that ran once compared nothing: it gets no row (an unperformed check is not an
    observation, and never a pass)."""
    rows = []
    for path in paths:
        assert path.outputs is not None
        if path.repeats < 2:
            continue
        digest = tensors_hash(path.outputs)
        nan = sum(int(np.isnan(x).sum()) for x in path.outputs if x.dtype.kind in "fc")
        size = sum(int(x.size) for x in path.outputs)
        if path.deterministic and nan:
            # identical NaN bits are no evidence of determinism: NaN == NaN never passes
            result = CONTRACT_ISSUE
            reason = (f"determinism: {path.repeats} repeated runs gave identical output "
                      f"hashes, but NaN on both sides at {nan} of {size} elements (NaN == "
                      "NaN never passes)")
        elif path.deterministic:
            result = PASSED
            reason = f"determinism: {path.repeats} repeated runs gave identical output hashes"
        else:
            result = CONTRACT_ISSUE
            reason = (f"determinism: {path.repeats} repeated runs with identical settings gave "
                      "differing output hashes")
        rows.append(ctx.row(
            check="contract:determinism", output_name=";".join(ctx.output_names),
            actual=path, reference_name="law:repeated-run", reference_version=path.version,
            dtype=ctx.case.dtype, cmp=None, rtol=0.0, atol=0.0, result=result, reason=reason,
            cause=law_cause(reason) if result != PASSED else "", actual_hash=digest,
            # identical NaN is the NaN fed in, as on any comparison: no law's doing
            failure_kind=NAN if path.deterministic and nan else "",
            reference_hash=digest if path.deterministic else "",
            actual_file=path.files[0] if path.files else "",
            details={"law": "determinism", "repeats": path.repeats,
                     "deterministic": path.deterministic}))
    return rows


@functools.cache  # os.cpu_count() reads sysfs on every call
def machine_threads() -> int:
    return os.cpu_count() or 1


def thread_rows(ctx: CaseContext, paths: list[PathResult],
                evidence: Evidence) -> list[Observation]:
    """Each path of a runtime with a thread setting, at the machine's thread count against
    1 thread."""
    many = machine_threads()
    rows = []
    for path in paths:
        if backends.get(path.backend).with_threads(path.settings, many) is None:
            continue
        assert path.outputs is not None
        runner = PathRunner(ctx, path, ctx.case.model, threads=many)
        try:
            if path.threads == 1:
                single = path.outputs
            else:
                single = PathRunner(ctx, path, ctx.case.model, threads=1).once(
                    ctx.case.inputs)
            multi = runner.once(ctx.case.inputs)
        except Exception as e:
            rows.append(execution_row(ctx, "contract:threads", runner.result_path, "",
                                      ctx.case.dtype, f"threads: {error_text(e)}",
                                      "law:1-thread"))
            continue
        for j, name in enumerate(ctx.output_names):
            dtype = str(single[j].dtype)
            rtol, atol = ctx.tolerance(dtype)
            res = compare_law(ctx, "threads", multi[j], single[j], rtol, atol,
                              actual_label=f"{many} threads", reference_label="1 thread")
            rows.append(law_row(ctx, evidence, "contract:threads", runner.result_path, name,
                                res, reference_label="law:1-thread", dtype=dtype,
                                folder="contracts/threads",
                                extra={"threads": [1, many]}))
    return rows
