"""A runtime from outside gero's tree is its module, its registry line and its names line:
registered from a temporary module ($GERO_RUNTIME_MODULES), it runs a suite, and localize
and blame reach it through what it declares (``Backend``'s capabilities), never by name.

Real ``gero`` processes, each loading the module itself (the workers too): ``fake`` is the
onnx ReferenceEvaluator with two levels, ``plain`` and ``leaky`` (a ``LeakyFusion`` rewrite
turns each Relu into a LeakyRelu, so its rows at ``leaky`` diverge); ``opaque`` keeps no
intermediate tensors and has no levels, and localize and blame say so in one sentence.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from gero_processes import gero, runtime_modules_env
from shared_helpers import obs_rows

FAKE = '''
"""The onnx ReferenceEvaluator as a runtime with two levels (a test's, outside gero)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("fake", "fake", "the fake runtime", "fake", levels=("plain", "leaky")),
         __name__)  # its names line and its registry line

from gero_runner.backends.base import Backend, as_array  # noqa: E402


def rewritten(model: bytes, settings: dict) -> onnx.ModelProto:
    """At ``leaky``, each Relu becomes LeakyRelu(alpha=0.01), named after the rewrite."""
    proto = onnx.load_from_string(model)
    if settings["level"] != "leaky" or "LeakyFusion" in settings.get("disabled_rewrites", []):
        return proto
    for i, node in enumerate(proto.graph.node):
        if node.op_type == "Relu":
            proto.graph.node[i].CopyFrom(helper.make_node(
                "LeakyRelu", list(node.input), list(node.output),
                name=f"/LeakyFusion/{node.name}", alpha=0.01))
    return proto


class Fake(Backend):
    name = "fake"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"
    keeps_optimized_graph = True
    disable_option = "disabled_rewrites"
    rewrite_names = r"LeakyFusion"

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        return ReferenceEvaluator(rewritten(model, settings))

    def build_keeping_graph(self, model, settings, graph: Path):
        proto = rewritten(model, settings)
        onnx.save(proto, str(graph))
        return ReferenceEvaluator(proto)

    def run(self, session, inputs):
        with np.errstate(all="ignore"):
            return [as_array(o) for o in session.run(None, dict(inputs))]


RUNTIME = Fake()
'''

OPAQUE = '''
"""The same evaluator, declaring no intermediates and no levels (a test's, outside gero)."""
from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("opaque", "opaque", "the opaque runtime", "opaque"), __name__)

from fake_runtime import Fake  # noqa: E402


class Opaque(Fake):
    name = "opaque"
    keeps_intermediates = False
    keeps_optimized_graph = False

    def paths(self, threads):
        return [self.spec("leaky", threads, {"level": "leaky"})]


RUNTIME = Opaque()
'''


def _gero(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return gero(*args, env=env)


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, dict[str, str], list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("fake-runtime")
    env = runtime_modules_env(tmp, {"fake_runtime": FAKE, "opaque_runtime": OPAQUE})
    root = tmp / "data"
    done = _gero(env, "run", "--ops", "Relu", "--dtypes", "float32", "--limit", "1",
                 "--backends", "fake,opaque", "--repeats", "1", "--jobs", "1",
                 "--data-dir", str(root), "--run-id", "fake", "-q")
    assert done.returncode == 1, done.stderr  # the leaky level diverges: found something
    rows = obs_rows(root)
    return root, env, rows


def _agreement(rows: list[dict[str, Any]], backend: str, level: str) -> dict[str, Any]:
    (row,) = [r for r in rows if r["check"] == "agreement" and r["backend"] == backend
              and r["optimization"] == level]
    return row


def test_a_registered_runtime_runs_the_suite_at_each_of_its_levels(
        fake_run: tuple[Path, dict[str, str], list[dict[str, Any]]]) -> None:
    _, _, rows = fake_run
    plain, leaky = _agreement(rows, "fake", "plain"), _agreement(rows, "fake", "leaky")
    assert (plain["result"], plain["reference"]) == ("passed", "onnx-reference")
    assert leaky["result"] == "divergence" and leaky["max_abs_error"] > 0
    assert json.loads(leaky["session_settings"]) == {"level": "leaky"}
    assert _agreement(rows, "opaque", "leaky")["result"] == "divergence"


def test_localize_runs_the_registered_runtime_through_its_capabilities(
        fake_run: tuple[Path, dict[str, str], list[dict[str, Any]]]) -> None:
    root, env, rows = fake_run
    row = _agreement(rows, "fake", "leaky")
    done = _gero(env, "localize", row["observation_id"][:16], "--data-dir", str(root),
                 "--format", "json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # The error enters at the Relu, which the fake's leaky level computes as a LeakyRelu:
    # its intermediates came from the fake's own session (Backend.intermediates).
    assert [o["op_type"] for o in found["origins"]] == ["Relu"], found["summary"]
    assert found["actual"] == "fake:leaky" and found["reference"] == "onnx-reference"


def test_blame_names_the_registered_runtimes_level_and_rewrite(
        fake_run: tuple[Path, dict[str, str], list[dict[str, Any]]]) -> None:
    root, env, rows = fake_run
    row = _agreement(rows, "fake", "leaky")
    done = _gero(env, "blame", row["observation_id"][:16], "--data-dir", str(root),
                 "--format", "json")
    assert done.returncode == 0, done.stderr
    blame = json.loads(done.stdout)
    assert (blame["backend"], blame["previous_level"], blame["first_level"]) == (
        "fake", "plain", "leaky")
    assert blame["removed"] == {"Relu": 1} and blame["added"] == {"LeakyRelu": 1}
    (rewrite,) = blame["rewrites"]
    assert (rewrite["transformer"], rewrite["disabled"]) == ("LeakyFusion", "confirmed")
    assert "disabled_rewrites=['LeakyFusion']" in rewrite["note"]
    assert blame["confirmed_by_running"] is True


@pytest.mark.parametrize(("command", "sentence"), [
    ("localize", "the opaque runtime cannot be localized: it does not give back the tensors "
                 "inside a graph"),
    ("blame", "the opaque runtime cannot be blamed: it has no optimisation levels"),
])
def test_a_capability_the_runtime_lacks_is_one_sentence(
        fake_run: tuple[Path, dict[str, str], list[dict[str, Any]]], command: str,
        sentence: str) -> None:
    root, env, rows = fake_run
    row = _agreement(rows, "opaque", "leaky")
    done = _gero(env, command, row["observation_id"][:16], "--data-dir", str(root))
    assert done.returncode == 2, done.stderr
    assert sentence in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_module_that_cannot_be_imported_is_one_sentence(
        fake_run: tuple[Path, dict[str, str], list[dict[str, Any]]]) -> None:
    root, env, _ = fake_run
    done = _gero({**env, "GERO_RUNTIME_MODULES": "no_such_runtime"}, "run", "--ops", "Relu",
                 "--limit", "1", "--data-dir", str(root))
    assert done.returncode == 2, done.stderr
    assert "GERO_RUNTIME_MODULES names 'no_such_runtime', which cannot be imported" in (
        done.stderr)
    assert "Traceback" not in done.stderr


def test_a_runtime_that_does_not_survive_a_fork_keeps_children_from_forking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork policy (a layer below the backends) learns the module to watch from the
    class's declaration (``Backend.survives_fork``), not from a runtime's name."""
    from gero_runner.backends.base import Backend
    from gero_runner.process import start_method

    monkeypatch.setattr(start_method, "START_METHOD", "fork")
    monkeypatch.setattr(start_method, "_NO_FORK_ONCE_LOADED", set())

    class NoFork(Backend):  # declared, never instantiated: a runtime's class is enough
        name = "no-fork"
        module = "gero_test_no_fork_runtime"
        survives_fork = False

    assert NoFork.survives_fork is False
    assert start_method.context().get_start_method() == "fork"  # its runtime not loaded
    monkeypatch.setitem(sys.modules, "gero_test_no_fork_runtime",
                        types.ModuleType("gero_test_no_fork_runtime"))
    assert start_method.context().get_start_method() == "forkserver"
