"""The first verdict of a model case, before it is judged: the setting of ONNX Runtime people
deploy (``Backend.deployed``: ``all``) against the float64 shadow, as soon as that path ran
(the shadow exists before any path runs). Progress shows it; the judge decides the case.

It is the judge's fp32 gate (``metrics.model_level.fp32_gate``) without the noise floor,
which is measured later and can only widen the gate: a setting within it here is within it
in the verdict; one off it here may still be found within its floor.
"""

from __future__ import annotations

import numpy as np

from gero_runner import backends
from gero_runner.backends import ort
from gero_runner.backends.base import PathSpec
from gero_runner.case import CaseInstance
from gero_runner.checks.model import StatsRule
from gero_runner.execution.context import PathResult
from gero_runner.metrics import model_level as ml


def first_verdict(case: CaseInstance, rule: StatsRule, spec: PathSpec, path: PathResult,
                  specs: list[PathSpec]) -> str | None:
    """One sentence on ``path`` (run on the model) against the float64 shadow, when it is
    the deployed ONNX Runtime setting of ``specs`` (those the run selected) and it ran;
    None otherwise."""
    if spec.backend != ort.BACKEND or path.outputs is None or not case.expected_exact:
        return None
    chosen = [s for s in specs if s.backend == ort.BACKEND]
    if not chosen or backends.get(ort.BACKEND).deployed(chosen).name != spec.name:
        return None
    who = f"{spec.backend} {spec.optimization} against float64"
    truth = list(case.expected_exact.values())
    checked = 0
    for j, a in enumerate(path.outputs):
        if j >= len(truth) or a.dtype.kind != "f":
            continue
        r = np.asarray(truth[j])
        if a.shape != r.shape:
            return (f"{who}: output {rule.output_names[j]} has shape {list(a.shape)}, "
                    f"float64 {list(r.shape)}")
        gate = ml.fp32_gate(rule.stats(j, a, r), None, rule.decides(j),
                            ml.scaled_limit(a.dtype))
        if not gate.passed:
            return (f"{who}: off at output {rule.output_names[j]} ({gate.reason}) before "
                    "its noise floor is measured")
        checked += 1
    return f"{who}: within its gates" if checked else None
