"""A case's checks as the executors get them (``checks.task``): a model case is one plan of
parts, whether one process runs it inline or the worker pool spreads it over workers, and
no module loads a higher layer by name on the way."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from shared_helpers import classifier

from gero_runner.checks.task import case_task, evaluate_case
from gero_runner.execution import pool
from gero_runner.execution.context import RunSettings
from gero_runner.run import ModelOptions, RunRequest, collect_cases, model_checks
from gero_runner.storage.store import batch_from_bytes

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_model_case_run_inline_gives_the_pools_rows_and_evidence(tmp_path: Path) -> None:
    # Two ways used to run a model case: in one process its contract families ran on every
    # path in one context, and the evidence they kept differed from the pool's (same
    # observation ids, another evidence directory).
    request = RunRequest(models=[classifier(tmp_path / "clf.onnx")], backends=("onnxruntime",),
                         repeats=1, model_options=ModelOptions(variants=("fp16",),
                                                               task="classifier"))
    (case,) = collect_cases(request)

    def settings(root: str) -> RunSettings:
        return RunSettings(data_root=str(tmp_path / root), backends=("onnxruntime",),
                           repeats=1, checks=model_checks(request))

    inline = evaluate_case(case, settings("inline")).rows
    (outcome,) = pool.run_cases([case], settings("pool"), jobs=2, timeout_s=120,
                                task=case_task())
    pooled = batch_from_bytes(outcome.result.batch or b"").to_pylist()
    assert {r.check for r in inline} >= {"contract:threads", "model:fp16:vs-model",
                                         "model:noise-floor"}
    assert (sorted((r.observation_id, r.artifact_path) for r in inline)
            == sorted((r["observation_id"], r["artifact_path"]) for r in pooled))


def _layer(module: str, layers: list[list[str]]) -> int | None:
    """The module's floor in the runner's layers contract (0: the top), None: in none."""
    for i, floor in enumerate(layers):
        if any(module == name or module.startswith(name + ".") for name in floor):
            return i
    return None


_SPY = """
import importlib, os, sys
from pathlib import Path

from gero_runner.process import start_method

start_method.START_METHOD = "fork"  # the workers inherit the spy
log, tmp = sys.argv[1], Path(sys.argv[2])
real = importlib.import_module


def spy(name, package=None):
    caller = str(sys._getframe(1).f_globals.get("__name__", ""))
    with open(log, "a") as f:  # workers are forked from here: each appends its own
        f.write(f"{caller}\\t{name}\\t{os.getpid()}\\n")
    return real(name, package)


importlib.import_module = spy
from shared_helpers import classifier
from gero_runner.run import RunRequest, execute

execute(RunRequest(data_root=tmp / "data", models=[classifier(tmp / "c.onnx")],
                   backends=("onnxruntime",), repeats=1, jobs=2, run_id="r"))
"""


@pytest.mark.slow
def test_no_module_loads_a_higher_layer_by_name_while_a_model_case_runs(tmp_path: Path) -> None:
    # Import by name is still an import: the execution layer loaded the check families and
    # the model case's plan through import_module, a loop the import contracts never saw.
    # A fresh interpreter: one that has loaded OpenVINO (an earlier test in this process)
    # starts its workers from a fork server, which the spy would not reach.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers" and c["layers"][0].startswith("gero_runner")]
    layers = [[name.strip() for name in floor.split("|")] for floor in contract["layers"]]
    log = tmp_path / "by-name.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", _SPY, str(log), str(tmp_path)], env=env,
                   check=True, timeout=300)
    calls = [line.split("\t") for line in log.read_text().splitlines()]
    # The run loads the case source by name (run.py, above cases), its workers a runtime.
    assert {target for _, target, _ in calls} >= {"gero_runner.backends.ort"}
    upward = [(caller, target) for caller, target, _ in calls
              if (low := _layer(caller, layers)) is not None
              and (high := _layer(target, layers)) is not None and high < low]
    assert upward == []
