"""`gero run --model` with input options from the command line: they reach the case, and
bad ones are one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from shared_helpers import rows_of, save

from gero_cli import main


def _model(tmp: Path) -> str:
    return save(tmp / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])])


@pytest.mark.slow
def test_input_flags_reach_the_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(tmp_path)
    data = tmp_path / "d"
    assert main(["run", "--model", path, "--input", "x=5,3", "--input-range", "x=1,2",
                 "--data-dir", str(data), "--jobs", "1", "--repeats", "1",
                 "--run-id", "flags"]) in (0, 1)  # 1: the run found something; not tested here
    rows = rows_of(data, "flags")
    assert {r["input_shapes"] for r in rows} == {"[5,3]"}
    fed = json.loads(rows[0]["details"])["inputs"]
    assert fed == "x float32 [5,3] (shape from --input): uniform in [1, 2] (--input-range)"
    npz = tmp_path / "x.npz"
    np.savez(npz, x=np.ones((4, 3), np.float32))
    assert main(["run", "--model", path, "--inputs", str(npz), "--data-dir", str(data),
                 "--jobs", "1", "--repeats", "1", "--run-id", "npz"]) in (0, 1)
    assert {r["input_shapes"] for r in rows_of(data, "npz")} == {"[4,3]"}
    capsys.readouterr()


@pytest.mark.parametrize(("args", "message"), [
    (["--input", "x=5,a"], "bad --input 'x=5,a'"),
    (["--input", "x=0,3"], "sizes must be at least 1"),
    (["--input-range", "x=2"], "expected NAME=LO,HI"),
    (["--input-value", "x=abc"], "'abc' is not a number"),
    (["--input-value", "z=1"], "unknown input(s) z; inputs: x"),
    (["--dim", "batch=2"], r"dimensions that can be set: x[0]"),
    (["--inputs", "/nonexistent.npz"], "--inputs /nonexistent.npz: no such file"),
    (["--input-range", "x=0,1", "--input-value", "x=1"], "both --input-range and"),
])
def test_bad_input_options_are_one_clear_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               args: list[str], message: str) -> None:
    path = _model(tmp_path)
    assert main(["run", "--model", path, "--data-dir", str(tmp_path / "d"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error:") and message in err and "Traceback" not in err


def test_input_options_without_a_model_are_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--input", "x=1", "--data-dir", str(tmp_path)]) == 2
    assert "no --model given" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--skip-path", "onnxruntime:fast"],
     "--skip-path onnxruntime:fast: onnxruntime has no setting 'fast'; its settings: "
     "disable_all, basic, extended, all"),
    (["--skip-path", "tract"], "give RUNTIME:SETTING with a runtime under test"),
    (["--skip-path", "onnxruntime:disable_all,onnxruntime:basic,onnxruntime:extended",
      "--skip-path", "onnxruntime:all"], "--skip-path drops every setting of onnxruntime"),
    (["--path-budget", "0"], "path budget (--path-budget) must be a positive number"),
])
def test_bad_path_options_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              args: list[str], message: str) -> None:
    path = _model(tmp_path)
    assert main(["run", "--model", path, "--backends", "onnxruntime",
                 "--data-dir", str(tmp_path / "d"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error:") and message in err and "Traceback" not in err
    assert not (tmp_path / "d" / "runs").exists() or not any((tmp_path / "d" / "runs").iterdir())


def test_a_skipped_setting_leaves_its_runtime_running(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    assert main(["run", "--model", _model(tmp_path), "--backends", "onnxruntime",
                 "--skip-path", "onnxruntime:basic,onnxruntime:extended", "--data-dir",
                 str(data), "--jobs", "2", "--repeats", "1", "--run-id", "s"]) in (0, 1)
    levels = {r["optimization"] for r in rows_of(data, "s") if r["backend"] == "onnxruntime"}
    assert levels == {"disable_all", "all"}
    assert "--path-budget SECONDS" in _help(capsys) and "(default 60)" in _help(capsys)


def _help(capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    return " ".join(capsys.readouterr().out.split())
