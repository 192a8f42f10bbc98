"""A model case's plan runs the settings its verdicts need (``--paths needed``, the default),
in real ``gero run`` processes: a setting not run is named with why in the case's
``plan.json`` and has no row, the findings equal ``--paths all``'s cause for cause, and every
path is judged on a variant file its baseline cannot run.

``fake`` (registered from a temporary module, $GERO_RUNTIME_MODULES) is the onnx
ReferenceEvaluator with three levels, ``base``, ``mid``, ``top`` (its deployed setting);
``$FAKE_SKEW`` (``LEVEL=FACTOR,...``) scales a level's outputs, so a test decides which
level is off; ``LEVEL@fp16=roll`` rolls its outputs' last axis on a float16 file only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import dense_softmax

from gero_runner.storage.reader import open_run

FAKE = '''
import os

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("fake", "fake", "the fake runtime", "fake", levels=("base", "mid", "top")),
         __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Fake(Backend):
    name = "fake"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        skew = dict(item.split("=") for item in os.environ.get("FAKE_SKEW", "").split(",")
                    if item)
        half = any(t.data_type == onnx.TensorProto.FLOAT16
                   for t in onnx.load_from_string(model).graph.initializer)
        roll = half and skew.get(settings["level"] + "@fp16") == "roll"
        return ReferenceEvaluator(model), float(skew.get(settings["level"], 1.0)), roll

    def run(self, session, inputs):
        evaluator, factor, roll = session
        outputs = [as_array(o) for o in evaluator.run(None, dict(inputs))]
        if roll:
            outputs = [np.roll(o, 1, axis=-1) for o in outputs]
        return [(o * o.dtype.type(factor)).astype(o.dtype) for o in outputs]


RUNTIME = Fake()
'''


def _env(tmp_path: Path, skew: str) -> dict[str, str]:
    return runtime_modules_env(tmp_path, {"fake_runtime": FAKE}, FAKE_SKEW=skew)


def _gero(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = gero(*args, env=env)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr + done.stdout
    return done


def _run(env: dict[str, str], model: Path, inputs: Path, root: Path, run_id: str,
         *extra: str) -> None:
    _gero(env, "run", "--model", str(model), "--inputs", str(inputs), "--repeats", "1",
          "--jobs", "1", "--no-reuse", "--data-dir", str(root), "--run-id", run_id, "-q",
          *extra)


def _causes(env: dict[str, str], root: Path, run_id: str) -> set[tuple[Any, ...]]:
    """Each finding's cause: its id, family, path at fault, template, operator, class."""
    done = _gero(env, "findings", "--data-dir", str(root), "--run", run_id,
                 "--format", "json", "--baseline", run_id)
    return {(f["finding_id"], f["family"], f["outlier"], f["template"], f["operator_key"],
             f["result"]) for f in json.loads(done.stdout)["findings"]}


def _settings(root: Path, run_id: str) -> set[tuple[str, str]]:
    """The (backend, setting) pairs that have rows on the model itself."""
    with open_run(root, run_id) as run:
        got = run.connection.execute(
            'SELECT DISTINCT backend, optimization FROM obs WHERE "check" = \'agreement\'')
        return set(got.fetchall())


def _plan(root: Path) -> dict[str, Any]:
    found = list(root.glob("**/plan.json"))
    assert len(found) == 1, found
    plan: dict[str, Any] = json.loads(found[0].read_text())
    return plan


@pytest.mark.slow
@pytest.mark.parametrize(("skew", "ran", "not_run"), [
    # Every setting within its gates: the base and the level between are not needed.
    ("", {"top"}, {"fake-base", "fake-mid"}),
    # The deployed setting off its gates: its base runs, and since the two differ the
    # level between runs to name which one makes the difference.
    ("top=1.02,mid=1.02", {"base", "mid", "top"}, set()),
])
def test_the_default_plan_finds_what_every_path_finds(tmp_path: Path, skew: str,
                                                      ran: set[str],
                                                      not_run: set[str]) -> None:
    env = _env(tmp_path, skew)
    model, inputs = dense_softmax(tmp_path)
    needed, every = tmp_path / "needed", tmp_path / "all"
    args = ("--backends", "onnxruntime,fake", "--no-contracts")
    _run(env, model, inputs, needed, "needed", *args)
    _run(env, model, inputs, every, "all", *args, "--paths", "all")

    assert {s for b, s in _settings(needed, "needed") if b == "fake"} == ran
    assert {s for b, s in _settings(every, "all") if b == "fake"} == {"base", "mid", "top"}
    # ORT's disable_all and all agree on this graph: basic and extended are not needed.
    assert {s for b, s in _settings(needed, "needed") if b == "onnxruntime"} == {
        "disable_all", "all"}
    plan = _plan(needed)
    assert plan["paths"] == "needed"
    assert set(plan["not_run"]) == not_run | {"ort-basic", "ort-extended"}
    assert all(why.startswith("not needed: ") and why.endswith("(--paths all runs it)")
               for why in plan["not_run"].values())
    if not_run:
        assert "fake top is within its gates against float64-shadow" in (
            plan["not_run"]["fake-base"])
    exhaustive = _plan(every)
    assert exhaustive["paths"] == "all" and exhaustive["not_run"] == {}
    assert set(exhaustive["ran"]) == set(plan["ran"]) | set(plan["not_run"])

    found = _causes(env, needed, "needed")
    assert found == _causes(env, every, "all")
    assert bool(found) == bool(skew)  # the skewed level is a finding in both


@pytest.mark.slow
def test_an_unoptimised_base_runs_on_a_file_its_deployed_setting_is_off_on(
        tmp_path: Path) -> None:
    env = _env(tmp_path, "top@fp16=roll")
    model, inputs = dense_softmax(tmp_path)
    needed, every = tmp_path / "needed", tmp_path / "all"
    args = ("--backends", "onnxruntime,fake", "--no-contracts", "--variants", "fp16")
    _run(env, model, inputs, needed, "needed", *args)
    _run(env, model, inputs, every, "all", *args, "--paths", "all")
    plan = _plan(needed)
    # Not needed on the model (top is within its gates there), run on the fp16 file, where
    # top is off: is the optimiser at fault on that file?
    assert "fake-base" in plan["not_run"] and plan["ran_on_variants"] == {"fake-base": ["fp16"]}
    with open_run(needed, "needed") as run:
        on_file = set(run.connection.execute(
            'SELECT DISTINCT optimization FROM obs WHERE backend = \'fake\' '
            'AND "check" LIKE \'model:fp16:%\'').fetchall())
    assert ("base",) in on_file and ("mid",) not in on_file
    found = _causes(env, needed, "needed")
    assert found and found == _causes(env, every, "all")


def _scatter_add_model(tmp_path: Path) -> tuple[Path, Path]:
    """A graph whose fp16 file ONNX Runtime cannot run: its CPU kernels have no float16
    ScatterElements with reduction 'add' (a molecular model's message passing)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((3, 3)).astype(np.float32), "w")
    idx = numpy_helper.from_array(np.array([[0, 2, 1], [1, 0, 2]], np.int64), "idx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    u = helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("ScatterElements", ["m", "idx", "u"], ["s"], axis=1,
                         reduction="add"),
        helper.make_node("Tanh", ["s"], ["y"])], "scatter", [x, u], [y], [w, idx])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((2, 3)).astype(np.float32),
             u=rng.standard_normal((2, 3)).astype(np.float32))
    return tmp_path / "m.onnx", tmp_path / "in.npz"


@pytest.mark.slow
def test_every_path_is_judged_on_a_variant_file_its_baseline_cannot_run(
        tmp_path: Path) -> None:
    env = _env(tmp_path, "")
    model, inputs = _scatter_add_model(tmp_path)
    root = tmp_path / "data"
    _run(env, model, inputs, root, "fp16", "--backends", "onnxruntime,fake", "--variants",
         "fp16", "--no-contracts")
    with open_run(root, "fp16") as run:
        rows = run.connection.execute(
            'SELECT "check", backend, optimization, result, reason FROM obs '
            'WHERE "check" LIKE \'model:fp16%\'').fetchall()
    cannot = [r for r in rows if r[0] == "model:fp16" and r[1] == "onnxruntime"
              and r[2] == "all"]
    assert cannot and "ONNX Runtime cannot run the fp16 variant" in cannot[0][4]
    judged = {(check, backend) for check, backend, _, result, _ in rows
              if result != "execution"}
    # The next runtime's baseline stands in: its own file against its own fp32 output,
    # and every other path against the file's yardsticks and the fp32 model.
    assert ("model:fp16:vs-model", "fake") in judged
    assert {("model:fp16:scaled", "onnx-reference"), ("model:fp16:vs-fp32", "onnx-reference"),
            ("model:fp16:scaled", "fake"), ("model:fp16:vs-fp32", "fake")} <= judged
