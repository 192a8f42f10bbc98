"""A test-suite helper: "this model stays numerically sound across ORT levels, fp16 and int8".

    from gero.testing import check_model

    def test_classifier_is_numerically_sound(tmp_path):
        check_model("models/classifier.onnx", task="classifier", data_dir=tmp_path)

``check_model`` runs the model the way ``gero run --model`` does and fails the calling test
with the findings summary: each cause's title, figures, and the commands that replay and
bundle its worst observation.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from gero.api import PathLike, Run, run
from gero.query.findings import Finding
from gero_runner.escape import for_terminal

REFERENCE_ONLY = "onnx-reference"
"""The outlier of a finding that blames only onnx's ReferenceEvaluator, not the model or
ONNX Runtime (a path, not an oracle: its known fp16 and float64 defects show up there)."""
INFORMATIONAL_CHECKS = ("model:fp16:precision",)
"""Checks that state a fact about a runtime rather than judge the model: ONNX Runtime's CPU
kernels computing an fp16 file in float32 is listed, not failed (``strict`` fails it)."""


def check_model(model: PathLike, *, variants: Sequence[str] = ("fp16", "int8-dynamic"),
                backends: Sequence[str] = ("onnxruntime",), allow: Iterable[str] = (),
                strict: bool = False,
                data_dir: PathLike | None = None, **options: Any) -> Run:
    """Run ``model`` through every ONNX Runtime optimisation level, the ReferenceEvaluator,
    a float64 shadow, the batch contracts and ``variants``; fail the test on any finding.

    ``backends``: the runtimes under test (ONNX Runtime unless you ship on another one,
    e.g. ``("onnxruntime", "openvino")``).
    ``allow``: finding ids (or prefixes) that are known and accepted: listed, not failed.
    ``strict``: also fail on findings that blame only the ReferenceEvaluator, and on those
    that only say a runtime computes the fp16 file in float32 (by default both are listed:
    the model and ONNX Runtime's numerics are what a team ships).
    ``data_dir``: where the evidence goes, e.g. pytest's ``tmp_path`` (default: a new
    temporary directory that is kept, so the replay commands in the message work).
    ``options``: any other :func:`gero.run` keyword (``task``, ``dims``, ``output_kinds``,
    ``rtol``, ``atol``, ``seed``, ...). Returns the run when nothing fails.
    """
    root = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="gero-"))
    options.setdefault("jobs", 1)
    result = run(models=[model], variants=variants, backends=backends, data_dir=root,
                 command_line=f"gero.testing.check_model({str(model)!r})", **options)
    with result:
        findings = result.findings()
        accepted = tuple(allow)
        failing = [f for f in findings if not f.finding_id.startswith(accepted or ("\0",))
                   and (strict or (f.outlier != REFERENCE_ONLY
                                   and f.representative.check not in INFORMATIONAL_CHECKS))]
        if failing or result.status != "complete":
            _fail(_message(model, result, findings, failing))
    return result


def _fail(message: str) -> NoReturn:
    try:
        import pytest
    except ModuleNotFoundError:  # outside pytest: a plain assertion
        raise AssertionError(message) from None
    pytest.fail(message, pytrace=False)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _describe(f: Finding, run: Run) -> list[str]:
    r = f.representative
    path = r.backend if r.optimization in ("-", "") else f"{r.backend} {r.optimization}"
    return [
        f"[{f.result}] {f.title}",
        f"   finding {f.finding_id}; outlier {f.outlier}; {f.observations} observation(s) in "
        f"{f.cases} case(s); dtypes {', '.join(f.dtypes)}; levels {', '.join(f.levels) or '—'}",
        f"   worst: {r.case_id} {r.check}, {path} against {r.reference}: {r.reason}",
        f"   max |a−r| = {_num(r.max_abs_error)}, max ULP = {_num(r.max_ulp)}, "
        f"rtol = {_num(r.rtol)}, atol = {_num(r.atol)}",
        f"   replay: {run.replay_command(r.observation_id, r.artifact_path)}",
        f"   bundle: {run.bundle_command(r.observation_id, f'finding-{f.finding_id}.tar.gz')}",
    ]


def _message(model: PathLike, run: Run, findings: list[Finding],
             failing: list[Finding]) -> str:
    lines = [f"gero: {model} is not numerically sound: {len(failing)} finding(s) over "
             f"{run.non_passed} non-passed observation(s) in run {run.id} "
             f"(data dir {run.data_dir})"]
    if run.status != "complete":
        lines.append(f"the run is {run.status}: not every case ran")
    for number, f in enumerate(failing, 1):
        first, *rest = _describe(f, run)
        lines += ["", f"{number}. {first}", *rest]
    listed = [f for f in findings if f not in failing]
    if listed:
        lines += ["", "not failed (allowed, blaming only the ReferenceEvaluator, or "
                      "informational):"]
        lines += [f"   {f.finding_id} [{f.result}] {f.title}" for f in listed]
    if failing:
        ids = ", ".join(repr(f.finding_id) for f in failing)
        lines += ["", f"accept a known cause with check_model(..., allow=[{ids}])"]
    # Printed by pytest on a terminal: the model's and its graph's names shown escaped.
    return "\n".join(for_terminal(line) for line in lines)
