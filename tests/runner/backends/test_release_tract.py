"""``tract==VERSION`` (issue 42): a tract release runs in a worker of its own environment
(tract, NumPy and onnx) as backends.tract runs the installed one (0.22.4 here).

No single-operator graph tried (Erf, Exp, Log, Tanh, Sigmoid, Softmax, Sqrt, Reciprocal;
float32 and float16) differs between tract 0.21.19 and 0.22.4: those two run side by side
and agree bit for bit, on float16 outputs (which 0.21's and 0.22's ``Value.to_numpy``
misread as float32) and on a graph tract analyses only from its inputs' shapes (the fallback
that needs onnx in the environment). tract 0.23.9 has no unoptimised path, and its float16
Sigmoid is closer to float64 than 0.22.4's (max error 2.4e-4 against 1.2e-3)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from release_envs import NEW_TRACT, OLD_TRACT, old_release
from shared_helpers import rows_of

from gero_runner import backends
from gero_runner.backends import release_env
from gero_runner.checks.releases import uncompared


def test_a_tract_release_installs_onnx_beside_tract_and_numpy() -> None:
    release = release_env.parse("tract==0.21.19")
    assert release.requirement == "tract==0.21.19"
    assert release_env.EXTRA_PACKAGES["tract"] == ("onnx",)


def test_the_releases_check_names_the_settings_only_one_release_has() -> None:
    def path(backend: str, optimization: str, version: str) -> Any:
        return SimpleNamespace(backend=backend, optimization=optimization, version=version)

    new, old = path("tract==0.23.9", "optimized", ""), path("tract", "optimized", "0.22.4")
    ctx = SimpleNamespace(paths={"a": new, "b": old, "c": path("tract", "unoptimized", "0.22.4")})
    assert uncompared(cast(Any, ctx), new, old) == (
        "not compared between tract 0.23.9 and tract 0.22.4: unoptimized (only tract 0.22.4 "
        "has it)")
    del ctx.paths["c"]
    assert uncompared(cast(Any, ctx), new, old) == ""


def shapeless_exp_f16() -> onnx.ModelProto:
    """Flatten then Exp of a float16 input without a shape: tract cannot analyse the graph
    from its declared facts ("Source node without a determined fact")."""
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Exp", ["f"], ["y"])],
        "exp", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.slow
def test_a_tract_release_runs_in_its_worker_and_agrees_bit_for_bit() -> None:
    pytest.importorskip("tract")
    from gero_runner.backends.release import hello

    release = backends.get(old_release(OLD_TRACT))
    assert release.version() == "0.21.19" and release.distributions() == ("tract",)
    assert [p.optimization for p in release.paths(1)] == ["unoptimized", "optimized"]
    assert hello(OLD_TRACT)["reads_outputs"] == "bytes"  # 0.21's to_numpy reads float32
    installed = backends.get("tract")
    model = shapeless_exp_f16().SerializeToString()
    x = np.random.default_rng(0).uniform(-3, 3, (4, 4)).astype(np.float16)
    for spec in release.paths(1):
        session = release.build(model, spec.settings)
        old = release.run(session, {"x": x})[0]
        release.release(session)
        new = installed.run(installed.build(model, spec.settings), {"x": x})[0]
        assert old.dtype == np.float16 and old.shape == (4, 4)
        assert np.array_equal(old.view(np.uint16), new.view(np.uint16))
        assert np.allclose(old, np.exp(x.astype(np.float64)), rtol=2e-3)


@pytest.mark.slow
def test_gero_run_compares_two_tract_releases_setting_by_setting(tmp_path: Path) -> None:
    pytest.importorskip("tract")
    release = old_release(OLD_TRACT)
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Exp",
         "--dtypes", "float16,float32", "--backends", f"{release},tract", "--paths", "all",
         "--no-contracts", "--jobs", "1", "--run-id", "tr", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: the suite's findings
    rows = rows_of(tmp_path, "tr")
    releases = [r for r in rows if r["check"] == "releases"]
    assert {(r["optimization"], r["dtype"]) for r in releases} == {
        (o, d) for o in ("unoptimized", "optimized") for d in ("float16", "float32")}
    assert {(r["backend"], r["reference"]) for r in releases} == {
        ("tract", f"{release}:{r['optimization']}") for r in releases}
    assert {r["result"] for r in releases} == {"passed"}, [r["reason"] for r in releases]
    assert {r["note"] for r in releases} == {""}  # both releases have both settings
    ran = [r for r in rows if r["backend"] == release]
    assert ran and not [r for r in ran if r["result"] == "execution"]


@pytest.mark.slow
def test_tract_0_23_offers_only_optimized_and_its_float16_sigmoid_is_closer(
        tmp_path: Path) -> None:
    pytest.importorskip("tract")
    release = old_release(NEW_TRACT)
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "run", "--suite", "synthetic", "--ops", "Sigmoid",
         "--dtypes", "float16", "--backends", f"tract,{release}", "--no-contracts",
         "--jobs", "1", "--run-id", "sig", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # the change is found
    rows = rows_of(tmp_path, "sig")
    assert {r["optimization"] for r in rows if r["backend"] == release} == {"optimized"}
    releases = [r for r in rows if r["check"] == "releases"]
    assert releases and {(r["backend"], r["optimization"], r["reference"]) for r in releases} \
        == {(release, "optimized", "tract:optimized")}
    assert {(r["result"], r["arbiter"]) for r in releases} == {("divergence", "actual")}
    assert all(r["reason"].endswith("closer to float64") for r in releases)
    installed = metadata.version("tract")  # the extra's tract<0.23
    assert {r["note"] for r in releases} == {
        f"not compared between tract 0.23.9 and tract {installed}: unoptimized (only tract "
        f"{installed} has it)"}
