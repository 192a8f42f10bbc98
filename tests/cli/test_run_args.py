"""``gero run``'s options come from argument groups (``gero_cli.args``) that add each flag by
the ``gero.run`` keyword it fills and read it back as that keyword: every flag reaches the
request the same keyword from Python reaches, and only the flags typed are passed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gero.api import request
from gero_cli import build_parser, main
from gero_cli.run_cmd import GROUPS
from gero_runner.request import run_options


def _options(*argv: str) -> dict[str, Any]:
    args = build_parser().parse_args(["run", *argv])
    return {k: v for group in GROUPS for k, v in group.read(args).items()}


def _files(tmp_path: Path) -> tuple[Path, Path]:
    model, arrays = tmp_path / "m.onnx", tmp_path / "x.npz"
    model.write_bytes(b"")  # only its existence is checked when the request is made
    np.savez(arrays, x=np.zeros(2, np.float32))
    return model, arrays


def test_every_flag_reaches_the_request_its_keyword_does(tmp_path: Path) -> None:
    model, arrays = _files(tmp_path)
    options = _options(
        "--suite", "all", "--model", str(model), "--dim", "batch=4", "--input", "x=1,3",
        "--input-range", "x=-1,1", "--input-value", "y=0.5", "--inputs", str(arrays),
        "--task", "classifier", "--variants", "fp16,int8-dynamic", "--calibration",
        str(arrays), "--decision-axis", "y=1", "--output-kind", "y=dense", "--ops", "Exp,Abs",
        "--dtypes", "float16", "--backends", "onnxruntime", "--run-id", "r1", "--jobs", "3",
        "--executor", "dask", "--scheduler", "tcp://h:1", "--threads", "2", "--repeats", "4",
        "--seed", "7", "--rtol", "float16=1e-2", "--atol", "float32=1e-3", "--timeout", "9",
        "--path-budget", "5", "--skip-path", "tract:unoptimized,ov:f32", "--limit", "2",
        "--max-tensor-mb", "8", "--max-evidence-mb", "2", "--no-contracts")
    # Every keyword but the two the command fills itself is a flag of a group.
    assert set(options) | {"data_dir", "command_line"} == set(run_options())
    by_api = request(
        suite="all", models=[model], dims={"batch": 4}, input_shapes={"x": "1,3"},
        input_ranges={"x": "-1,1"}, input_values={"y": 0.5}, inputs_file=arrays,
        task="classifier", variants=["fp16", "int8-dynamic"], calibration_file=arrays,
        decision_axes={"y": 1}, output_kinds={"y": "dense"}, ops=["Exp", "Abs"],
        dtypes=["float16"], backends=["onnxruntime"], run_id="r1", jobs=3, executor="dask",
        scheduler="tcp://h:1", threads=2, repeats=4, seed=7, rtol={"float16": 1e-2},
        atol={"float32": 1e-3}, timeout=9.0, path_budget=5.0,
        skip_paths=["tract:unoptimized", "ov:f32"], limit=2, max_tensor_mb=8.0,
        max_evidence_mb=2.0, contracts=False, data_dir=tmp_path)
    assert request(**options, data_dir=tmp_path) == by_api


def test_only_the_flags_typed_are_passed() -> None:
    assert _options() == {}
    assert _options("--seed", "3", "--ops", "Exp", "--no-contracts",
                    "--skip-path", "a:b,c:d", "--skip-path", "e:f") == {
        "seed": 3, "ops": ["Exp"], "contracts": False, "skip_paths": ["a:b", "c:d", "e:f"]}
    assert _options("--backends", "") == {}  # like no --backends: every installed runtime


def test_each_flag_is_added_once_by_one_group() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = [o for a in sub.choices["run"]._actions for o in a.option_strings]
    assert len(flags) == len(set(flags))
    keywords = [a.keyword for group in GROUPS for a in group.args]
    assert len(keywords) == len(set(keywords))


def test_resume_with_a_new_run_id_names_the_flag_it_would_ignore(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--data-dir", str(tmp_path), "--resume", "r", "--run-id", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error: resume finishes run r with the options it was "
                          "started with; run_id (--run-id) would be ignored: drop it")
