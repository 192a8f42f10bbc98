"""Runtime releases side by side (issue 42): a release's name, its environment, and its
sessions in a worker process of its own interpreter.

The tests with real processes need the environment of onnxruntime==1.20.1
(``release_envs``: ``.ci/run`` makes it; no test installs anything).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from release_envs import OLD, old_release

from gero_runner import backends
from gero_runner.backends import release_env
from gero_runner.backends.names import line, path_label, short_name, title
from gero_runner.errors import GeroError, PathFailed


def sqrt_f16() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Sqrt", ["x"], ["y"])], "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8192])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [8192])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# ------------------------------------------------------------------ names (no process)
def test_a_release_is_named_after_its_runtime_and_version() -> None:
    assert title(OLD) == "ONNX Runtime 1.20.1"
    assert short_name(OLD) == "ort==1.20.1"
    assert path_label(OLD, "all") == "ort==1.20.1:all"
    names, runtime = line(OLD), line("onnxruntime")
    assert names is not None and runtime is not None and names.levels == runtime.levels
    assert line("nosuch==1.0") is None and title("nosuch==1.0") == "nosuch==1.0"


def test_the_sql_names_a_release_path_as_python_does() -> None:
    import duckdb

    relation = duckdb.sql(
        f"SELECT {backends.path_label_sql()}, {backends.path_name_sql()} FROM (VALUES "
        f"('{OLD}', 'basic'), ('onnxruntime', 'basic')) t(backend, optimization)")
    assert relation is not None
    assert relation.fetchall() == [("ort==1.20.1:basic", f"{OLD}-basic"), ("basic", "ort-basic")]


@pytest.mark.parametrize(("name", "says"), [
    ("nosuch==1.0", "supported for onnxruntime, openvino, tract, not 'nosuch'"),
    ("onnxruntime==latest", "must be a release number"),
])
def test_a_release_gero_cannot_run_is_one_sentence(name: str, says: str) -> None:
    with pytest.raises(GeroError, match=says):
        backends.select([name])


def test_a_release_without_an_environment_says_how_to_make_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(release_env.DIR_ENV, str(tmp_path))
    monkeypatch.delenv(release_env.PYTHONS_ENV, raising=False)
    with pytest.raises(GeroError, match=r"'onnxruntime==1\.19\.2' is not installed: "
                       r"gero env add onnxruntime==1\.19\.2 \(or name an interpreter"):
        backends.select(["onnxruntime==1.19.2", "onnxruntime"])


def test_split_named() -> None:
    assert release_env.split_named(OLD) == (OLD, "")
    assert release_env.split_named(f"{OLD}=/usr/bin/python3") == (OLD, "/usr/bin/python3")
    with pytest.raises(GeroError, match="RUNTIME==VERSION"):
        release_env.split_named("onnxruntime=1.20.1")


def test_a_release_with_no_build_here_names_the_releases_that_have_one() -> None:
    pip_said = ("ERROR: Could not find a version that satisfies the requirement "
                "onnxruntime==1.2.3 (from versions: 1.20.1, 1.21.0, 1.32.0)\n"
                "ERROR: No matching distribution found for onnxruntime==1.2.3")
    error = release_env.no_wheel_or_failure(release_env.parse("onnxruntime==1.2.3"), pip_said)
    assert isinstance(error, release_env.NoWheel)
    assert str(error).startswith("onnxruntime==1.2.3 has no build for Python 3.")
    assert str(error).endswith("releases that have one: 1.20.1, 1.21.0, 1.32.0")


def test_uvs_no_version_names_the_releases_pip_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    uv_said = ("  × No solution found when resolving dependencies:\n"
               "  ╰─▶ Because there is no version of onnxruntime==1.2.3 and you require "
               "onnxruntime==1.2.3, we can conclude that your requirements are unsatisfiable.")
    monkeypatch.setattr(release_env, "published", lambda runtime: ["1.20.1", "1.32.0"])
    error = release_env.no_wheel_or_failure(release_env.parse("onnxruntime==1.2.3"), uv_said)
    assert isinstance(error, release_env.NoWheel)
    assert str(error).endswith("releases that have one: 1.20.1, 1.32.0")


def test_an_interpreter_named_for_a_release_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(release_env.DIR_ENV, str(tmp_path))
    monkeypatch.setenv(release_env.PYTHONS_ENV, f"{OLD}=/opt/py/bin/python")
    assert release_env.python_for(OLD) == Path("/opt/py/bin/python")
    assert release_env.python_for("onnxruntime==1.21.0") is None


# ------------------------------------------------------------------ real worker processes
@pytest.mark.slow
def test_a_release_runs_in_its_own_interpreter_and_float16_sqrt_changed() -> None:
    """ORT 1.21 made float16 Sqrt correctly rounded: 1.20.1, run in its worker, is 1 ulp
    off float64's rounding on some elements where the installed release is not."""
    release = backends.get(old_release())
    assert release.version() == "1.20.1" and release.distributions() == ("onnxruntime",)
    assert [p.name for p in release.paths(1)] == [
        f"{OLD}-disable_all", f"{OLD}-basic", f"{OLD}-extended", f"{OLD}-all"]
    model = sqrt_f16().SerializeToString()
    x = np.random.default_rng(0).uniform(0, 1000, 8192).astype(np.float16)
    exact = np.sqrt(x.astype(np.float64)).astype(np.float16)  # correctly rounded
    settings = release.paths(1)[-1].settings
    session = release.build(model, settings)
    old = release.run(session, {"x": x})[0]
    release.release(session)
    new_runtime = backends.get("onnxruntime")
    new = new_runtime.run(new_runtime.build(model, settings), {"x": x})[0]
    assert old.dtype == np.float16 and old.shape == x.shape
    assert np.array_equal(new, exact)
    wrong = np.flatnonzero(old != exact)
    assert 0 < wrong.size < 50
    ulps = np.abs(old.view(np.int16)[wrong].astype(int) - exact.view(np.int16)[wrong])
    assert set(ulps.tolist()) == {1}


@pytest.mark.slow
def test_a_release_worker_that_dies_fails_its_path_and_the_next_session_starts_another(
) -> None:
    from gero_runner.backends import release as release_module

    release = backends.get(old_release())
    settings = release.paths(1)[0].settings
    session = release.build(sqrt_f16().SerializeToString(), settings)
    os.kill(session.worker.process.pid, signal.SIGSEGV)
    session.worker.process.wait()
    with pytest.raises(PathFailed, match=f"worker process of {OLD} crashed with SIGSEGV"):
        release.run(session, {"x": np.ones(8192, np.float16)})
    again = release.build(sqrt_f16().SerializeToString(), settings)
    assert again.worker is not session.worker
    assert release.run(again, {"x": np.full(8192, 4, np.float16)})[0][0] == 2
    release_module._close_all()


@pytest.mark.slow
def test_the_runtime_error_of_a_release_is_its_paths_error() -> None:
    release = backends.get(old_release())
    bad = sqrt_f16()
    bad.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(Exception, match=f"{OLD}: .*NoSuchOp"):
        release.build(bad.SerializeToString(), release.paths(1)[0].settings)


@pytest.mark.slow
def test_run_env_names_the_interpreter_of_a_release(tmp_path: Path) -> None:
    """``gero run --env RELEASE=PYTHON``: a release with no environment under gero's cache
    runs in the interpreter named; one that lacks the release is refused in one sentence."""
    python = release_env.python_for(old_release())
    env = {**os.environ, release_env.DIR_ENV: str(tmp_path / "no-envs")}
    env.pop(release_env.PYTHONS_ENV, None)

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Sqrt",
             "--dtypes", "float16", "--backends", f"{OLD},onnxruntime", "--jobs", "1",
             "--data-dir", str(tmp_path / "data"), *extra],
            capture_output=True, text=True, timeout=300, env=env)

    missing = run()
    assert missing.returncode == 2
    assert f"backend '{OLD}' is not installed: gero env add {OLD}" in missing.stderr
    wrong = run("--env", f"onnxruntime==1.21.0={python}")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().endswith("(it has 1.20.1)")
    named = run("--env", f"{OLD}={python}")
    assert named.returncode == 1, named.stderr  # it ran, and found the Sqrt change
    assert "Backend divergences" in named.stdout
