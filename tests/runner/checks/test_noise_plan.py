"""The noise floor's plan (issue 41): a model with no float input (int64 token ids) gets no
noise-floor runs, which would repeat its baseline 16 times and measure nothing; its floor
row says so, as before."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gero_runner.checks.model_parts import NoiseRuns
from gero_runner.checks.task import model_plan
from gero_runner.execution.context import RunSettings
from gero_runner.execution.paths import path_table
from gero_runner.execution.plan import Part, run_inline
from gero_runner.run import RunRequest, collect_cases, model_checks


def _embedding(path: Path, ids: bool) -> Path:
    """Gather embedding (int64 token ids, or a float row selector fed by MatMul when
    ``ids`` is False) -> MatMul -> Softmax."""
    rng = np.random.default_rng(0)
    emb = numpy_helper.from_array(rng.standard_normal((50, 16)).astype(np.float32), "E")
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W")
    if ids:
        first = helper.make_node("Gather", ["E", "x"], ["h"])
        x = helper.make_tensor_value_info("x", TensorProto.INT64, [2, 5])
    else:
        first = helper.make_node("MatMul", ["x", "E"], ["h"])
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 50])
    graph = helper.make_graph(
        [first, helper.make_node("MatMul", ["h", "W"], ["z"]),
         helper.make_node("Softmax", ["z"], ["y"], axis=-1)], "tok", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8])], [emb, w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def _planned(tmp_path: Path, ids: bool, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[list[Part], list[str]]:
    """Every part the model case's plan handed out, run inline, and its noise-floor rows'
    reasons."""
    request = RunRequest(models=[str(_embedding(tmp_path / f"m{ids}.onnx", ids))],
                         backends=("onnxruntime",), repeats=1)
    (case,) = collect_cases(request)
    settings = RunSettings(data_root=str(tmp_path / f"d{ids}"), backends=("onnxruntime",),
                           repeats=1, checks=model_checks(request))
    plan = model_plan(case, settings, path_table(settings), math.inf, math.inf)
    handed: list[Part] = []
    ready = plan.ready

    def spy() -> list[Part]:
        parts = ready()
        handed.extend(parts)
        return parts

    monkeypatch.setattr(plan, "ready", spy)
    rows = run_inline(plan, settings).rows
    return handed, [r.reason for r in rows if r.check == "model:noise-floor"]


@pytest.mark.slow
def test_no_noise_floor_runs_are_planned_for_a_model_without_a_float_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same graph fed a float input: its baseline's noisy runs are one part.
    parts, reasons = _planned(tmp_path, False, monkeypatch)
    assert sum(isinstance(p, NoiseRuns) for p in parts) == 1, [p.label for p in parts]
    assert reasons and all("16 runs with" in r for r in reasons), reasons
    # Token ids: none (the plan ran them, 16 repeats of the baseline, and the floor said
    # 'no noisy runs: no input can carry noise'); the floor row is the same.
    parts, reasons = _planned(tmp_path, True, monkeypatch)
    assert not any(isinstance(p, NoiseRuns) for p in parts), [p.label for p in parts]
    assert reasons and all("no noisy runs: no input can carry noise (x: int64)" in r
                           for r in reasons), reasons
    assert all("row cosine 1.0000000, scaled error 0" in r for r in reasons), reasons
