"""A setting the model did not need that fails on a variant file runs on the model too, so
that its failure's scope is the model's where it fails there as well (issue 40, D9: minilm's
tract unoptimized, not run on the fp32 model because tract optimized was within its gates,
failed on the int8-static file with "Undetermined symbol in expression: sequence_length", as
it does on the model; the finding said "on the int8-static file").

Real ``gero run`` processes; ``fake`` (registered from a temporary module) is the onnx
ReferenceEvaluator with two levels, ``base`` and ``top`` (deployed): ``top`` rolls its
outputs on a float16 file (off its gates there, so ``base`` runs on that file), and
``$FAKE_FAIL`` says where ``base`` cannot be built: ``everywhere``, or ``fp16`` (a float16
file only), or ``fp16-both`` (neither level builds a float16 file, with one error). Once it
runs on the model, it runs on the int8-dynamic file from there, as any setting that runs (a
case whose plan waited on that run forever had no row at all).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gero_processes import gero, runtime_modules_env
from shared_helpers import dense_softmax, obs_rows

FAKE = '''
import os

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("fake", "fake", "the fake runtime", "fake", levels=("base", "top")), __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Fake(Backend):
    name = "fake"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        half = any(t.data_type == onnx.TensorProto.FLOAT16
                   for t in onnx.load_from_string(model).graph.initializer)
        where = os.environ["FAKE_FAIL"]
        if where == "fp16-both" and half:  # the deployed setting too: the file's failure
            raise RuntimeError("Impossible to unify U8 with I8.")
        if settings["level"] == "base" and (where == "everywhere" or half):
            raise RuntimeError("Undetermined symbol in expression: sequence_length")
        return ReferenceEvaluator(model), half and settings["level"] == "top"

    def run(self, session, inputs):
        evaluator, roll = session
        outputs = [as_array(o) for o in evaluator.run(None, dict(inputs))]
        return [np.roll(o, 1, axis=-1) if roll else o for o in outputs]


RUNTIME = Fake()
'''


def _run(tmp: Path, fail: str) -> tuple[dict[str, Any], list[dict[str, Any]],
                                        list[dict[str, Any]]]:
    env = runtime_modules_env(tmp, {"fake_runtime": FAKE}, FAKE_FAIL=fail)
    model, inputs = dense_softmax(tmp)
    root = tmp / "data"
    done = gero("run", "--model", str(model), "--inputs", str(inputs), "--repeats", "1",
                "--backends", "onnxruntime,fake", "--variants", "fp16,int8-dynamic",
                "--no-contracts",
                "--jobs", "1", "--data-dir", str(root), "-q", env=env)
    assert done.returncode == 1, done.stderr  # found something
    (plan_file,) = root.glob("**/plan.json")
    listed = gero("findings", "--data-dir", str(root), "--format", "json", env=env)
    assert listed.returncode == 1, listed.stderr
    return (json.loads(plan_file.read_text()), obs_rows(root),
            json.loads(listed.stdout)["findings"])


def _base_failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["backend"] == "fake" and r["optimization"] == "base"
            and r["failure_kind"] == "cannot-run"]


@pytest.mark.slow
def test_a_failure_on_a_file_that_the_model_has_too_is_the_models(tmp_path: Path) -> None:
    plan, rows, found = _run(tmp_path, "everywhere")
    # not needed on the model, it ran on the fp16 file (top is off there) and failed: so it
    # ran on the model too
    assert "fake-base" not in plan["not_run"] and "fake-base" in plan["ran"], plan
    failed = _base_failures(rows)
    # from the model, it ran on the int8-dynamic file too, where it fails alike
    assert {r["scope"] for r in failed} == {"model", "fp16", "int8-dynamic"}, failed
    assert len({r["cause_key"] for r in failed}) == 1
    (finding,) = [f for f in found if "Undetermined symbol" in f["title"]]
    assert finding["observations"] == len(failed)
    assert finding["title"].startswith("The fake runtime cannot run "), finding["title"]
    assert "fp16 file" not in finding["title"], finding["title"]


@pytest.mark.slow
def test_a_failure_on_a_file_alone_stays_the_files(tmp_path: Path) -> None:
    plan, rows, found = _run(tmp_path, "fp16")
    assert "fake-base" not in plan["not_run"] and "fake-base" in plan["ran"], plan
    # it runs the model: its rows there pass
    assert {r["result"] for r in rows if r["backend"] == "fake"
            and r["optimization"] == "base" and r["scope"] == "model"} == {"passed"}
    assert {r["scope"] for r in _base_failures(rows)} == {"fp16"}
    # it ran on the int8-dynamic file from the model, as any setting that runs
    assert {r["result"] for r in rows if r["backend"] == "fake"
            and r["optimization"] == "base" and r["scope"] == "int8-dynamic"} == {"passed"}
    (finding,) = [f for f in found if "Undetermined symbol" in f["title"]]
    assert " on the fp16 file" in finding["title"], finding["title"]


@pytest.mark.slow
def test_a_failure_the_deployed_setting_has_on_the_file_too_is_not_run_on_the_model(
        tmp_path: Path) -> None:
    """Both settings fail on the fp16 file with one error, and the deployed one runs the
    model: the failure is the file's, and the base is not run on the model to show it
    (magika: tract unoptimized on the model, 15 s, ran out of its 60 s budget under load)."""
    plan, rows, found = _run(tmp_path, "fp16-both")
    assert "fake-base" in plan["not_run"] and "fake-base" not in plan["ran"], plan
    assert {r["scope"] for r in _base_failures(rows)} == {"fp16"}
    assert not [r for r in rows if r["backend"] == "fake" and r["optimization"] == "base"
                and r["scope"] == "model"]
    (finding,) = [f for f in found if "unify" in f["title"]]
    assert " on the fp16 file" in finding["title"], finding["title"]
