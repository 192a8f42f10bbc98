"""Where a change between two ONNX Runtime releases enters a model, its repro, and
``gero bisect`` (issue 42), with real processes of onnxruntime==1.20.1's interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper
from release_envs import OLD, old_release

from gero_runner.backends import release_env
from gero_runner.backends.ort import session_settings
from gero_runner.evidence import release_change

SQRT_OFF_IN_1_20_1 = [0.99951, 3.998, 15.99, 255.9]
"""float16 values just below a power of 4, whose Sqrt 1.20.1 rounds 1 ulp off (1.21 made
float16 Sqrt correctly rounded)."""


def small_model(folder: Path) -> tuple[Path, Path]:
    """x -> Relu 'clip' -> Sqrt 'root' -> Add(s, s) 'double' -> y, float16: Relu and the
    doubling are exact, so a release's change enters at 'root'."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="clip"),
             helper.make_node("Sqrt", ["r"], ["s"], name="root"),
             helper.make_node("Add", ["s", "s"], ["y"], name="double")]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(1).uniform(0, 600, (1, 64)).astype(np.float16)
    x[0, :4] = SQRT_OFF_IN_1_20_1
    onnx.save(model, str(folder / "small.onnx"))
    np.savez(folder / "inputs.npz", x=x)
    return folder / "small.onnx", folder / "inputs.npz"


@pytest.mark.slow
def test_the_change_enters_at_the_sqrt_and_its_repro_differs_on_both_releases(
        tmp_path: Path) -> None:
    old = old_release()
    model_path, inputs = small_model(tmp_path)
    model = onnx.load(str(model_path))
    feeds = {"x": np.load(inputs)["x"]}
    entry, tensors = release_change.first_change(
        model, feeds, "onnxruntime", old, session_settings("disable_all", 1))
    assert entry is not None
    assert (entry.node, entry.op_type, entry.outputs, entry.changed) == (
        "root", "Sqrt", ("s",), 4)
    repro = release_change.write_repro(tmp_path / "repro", model, entry, tensors, feeds)
    python_old = release_env.python_for(old)
    said = [subprocess.run([str(python), str(repro / "repro.py")], capture_output=True,
                           text=True, check=True, timeout=120).stdout.split()
            for python in (Path(sys.executable), python_old)]
    assert said[0][:2] == ["onnxruntime", onnxruntime.__version__]
    assert said[1][:2] == ["onnxruntime", "1.20.1"]
    assert said[0][2] != said[1][2]
    assert said[1][2] == release_change.digest([tensors["s"]])  # 1.20.1's Sqrt, replayed


@pytest.mark.slow
def test_bisect_finds_the_release_and_the_node(tmp_path: Path) -> None:
    old_release()
    model_path, inputs = small_model(tmp_path)
    installed = onnxruntime.__version__
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "bisect", "--model", str(model_path), "--inputs",
         str(inputs), "--runtime", "onnxruntime", "--good", "1.20.1", "--bad", installed,
         "--releases", f"1.20.1,{installed}", "-o", str(tmp_path / "repro")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert (f"first release that changes the outputs: onnxruntime {installed} "
            "(after 1.20.1)") in done.stdout
    assert "enters at Sqrt 'root': s differ on 4 of 64 elements" in done.stdout
    assert (tmp_path / "repro" / "repro.py").is_file()


@pytest.mark.slow
def test_bisect_refuses_a_release_outside_the_list(tmp_path: Path) -> None:
    model_path, inputs = small_model(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "gero_cli", "bisect", "--model", str(model_path), "--inputs",
         str(inputs), "--good", "1.20.1", "--bad", "1.32.0", "--releases", "1.20.1,1.21.0"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == ("gero: error: onnxruntime 1.32.0 is not among the releases "
                                   "searched (1.20.1, 1.21.0)")


@pytest.mark.slow
def test_env_records_lists_and_forgets_an_interpreter(tmp_path: Path) -> None:
    python = release_env.python_for(old_release())
    env = {"GERO_ENV_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def gero(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gero_cli", "env", *args],
                              capture_output=True, text=True, timeout=120, env=env)

    added = gero("add", f"{OLD}={python}")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"{OLD}: recorded {python}")
    listed = gero("list").stdout
    assert OLD in listed and "recorded" in listed and str(python) in listed
    wrong = gero("add", f"onnxruntime==1.21.0={python}")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().endswith("has onnxruntime 1.20.1 and NumPy, not "
                                         "onnxruntime==1.21.0")
    assert gero("remove", OLD).stdout.startswith(f"{OLD}: forgot ")
    assert python is not None and python.exists()  # an interpreter named is left alone
    assert "no environments" in gero("list").stdout
