"""A divergence a precision rewrite explains: a path that computes the graph's float16 nodes
in float32 (skipping the float16 roundings the graph declares) is off the paths that compute
as declared because of the rewrite, not of its kernel. Its rows say so and record it
(cause_key 'precision-rewrite'), so that a finding names the rewrite.

Handed to the execution layer as ``execution.evaluate.Explain`` (``checks.task``,
``checks.model_parts``): the float64 shadow that confirms it sits beside that layer.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from gero_runner import backends
from gero_runner.facts import PRECISION_REWRITE
from gero_runner.result_classes import AGREEMENT, ANALYTIC, EXPECTED
from gero_runner.schema import DIVERGENCE, Observation

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult

_REWRITE_CHECKS = (AGREEMENT, ANALYTIC, EXPECTED)
"""Comparisons with a path that computes the graph as declared (not ``levels``: both sides
of a runtime's levels rewrite alike)."""


def explain_rows(ctx: CaseContext, rows: list[Observation]) -> list[Observation]:
    """The divergence rows of a path that computes float16 nodes of the graph in float32
    (its backend reads that rewrite from its optimised graph: ``Backend.widened_nodes``)
    and that sits within the row's tolerance of the graph computed without its float16
    roundings (the float64 shadow): the rewrite is their cause, named in the reason and
    recorded (cause_key 'precision-rewrite'), not the operator's kernel. MaskedSoftmax
    x + mask in float16: ONNX Runtime adds and normalises in float32, 0.401 off the float16
    sum the graph declares, 1.9e-4 off the float64 one. A model case's element-wise rows
    against a dequantized arbiter are notes first (``model.dequantized_expected_rows``), and
    a levels row between a fewer-bits setting and its full precision blames the former
    (``model.fewer_bits_level_rows``); a runtime's divergence on a model whose operator a
    1-node probe finds it computing wrong is that defect's (``model.runtime_defect_rows``)."""
    from gero_runner.checks.model import (
        dequantized_expected_rows,
        fewer_bits_level_rows,
        runtime_defect_rows,
    )

    rows = runtime_defect_rows(ctx, fewer_bits_level_rows(ctx, dequantized_expected_rows(
        ctx, rows)))
    if not any(r.result == DIVERGENCE and r.check in _REWRITE_CHECKS for r in rows):
        return rows
    unrounded: list[list[np.ndarray] | None] = []  # made at the first row it may explain
    sentences: dict[str, str | None] = {}
    by_path = {(p.backend, p.optimization): p for p in ctx.paths.values()}
    out = []
    for row in rows:
        path = by_path.get((row.backend, row.optimization))
        j = ctx.output_names.index(row.output_name) if row.output_name in ctx.output_names \
            else -1
        if (row.result == DIVERGENCE and row.check in _REWRITE_CHECKS and path is not None
                and path.outputs is not None and 0 <= j < len(path.outputs)):
            if path.name not in sentences:
                sentences[path.name] = _rewrite_sentence(ctx, path)
            sentence = sentences[path.name]
            if sentence is not None:
                if not unrounded:
                    unrounded.append(_unrounded(ctx))
                row = _explained(row, sentence, path.outputs[j], unrounded[0], j)
        out.append(row)
    return out


def _rewrite_sentence(ctx: CaseContext, path: PathResult) -> str | None:
    """What the path's precision rewrite does to the case's graph, or None (none, or its
    backend cannot tell)."""
    import onnx

    from gero_runner.backends.base import float16_nodes

    runtime = backends.find(path.backend)
    if runtime is None:
        return None
    try:
        widened = runtime.widened_nodes(ctx.case.model, path.settings)
    except Exception:  # the path already ran; a graph it cannot give back explains nothing
        return None
    if not widened:
        return None
    halves = len(float16_nodes(onnx.load_from_string(ctx.case.model)))
    nodes = ", ".join(f"{op} {key!r}" for key, op in list(widened.items())[:6])
    more = f" and {len(widened) - 6} more" if len(widened) > 6 else ""
    return (f"{runtime.label()} computes {len(widened)} of the graph's {halves} float16 "
            f"node(s) in float32 ({nodes}{more}), skipping the float16 roundings the graph "
            "declares (a precision rewrite, read from its optimised graph)")


def _unrounded(ctx: CaseContext) -> list[np.ndarray] | None:
    """The case's graph computed without its float16 roundings (its float64 shadow; a model
    case's own, else made here), or None when it cannot be made."""
    import onnx

    from gero_runner.case import MODEL_SUITES
    from gero_runner.models import shadow

    case = ctx.case
    if case.suite in MODEL_SUITES:  # a model's shadow is made once, when the case is built
        return list(case.expected_exact.values()) if case.expected_exact else None
    # (another case's float64 result is its formula's, which may round as the graph does)
    model = onnx.load_from_string(case.model)
    feeds = {i.name: case.inputs[i.name] for i in model.graph.input if i.name in case.inputs}
    try:
        return shadow.run_shadow(model, feeds)
    except Exception:
        return None


def _explained(row: Observation, sentence: str, a: np.ndarray,
               wide: list[np.ndarray] | None, j: int) -> Observation:
    """The row with the rewrite as its cause, where the unrounded computation is within the
    row's tolerance of the path (else as it was: the rewrite does not account for it)."""
    if wide is None or j >= len(wide) or wide[j].shape != a.shape or a.dtype.kind != "f":
        return row
    w = np.asarray(wide[j], dtype=np.float64)
    x = a.astype(np.float64)
    with np.errstate(all="ignore"):
        gap = np.abs(x - w)
        within = bool(np.all((gap <= row.atol + row.rtol * np.abs(w)) | (x == w)))
    if not within:
        return row
    worst = float(np.nanmax(gap)) if gap.size else 0.0
    reason = (f"{sentence}; the graph computed without them (float64) is within tolerance "
              f"of it (max |a−w| = {worst:.3g}): {row.reason}")
    return dataclasses.replace(row, reason=reason, cause=sentence,
                               cause_key=PRECISION_REWRITE)
