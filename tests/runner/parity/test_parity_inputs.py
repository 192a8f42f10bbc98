"""Parity command pieces that need no PyTorch: input specs, and the message without it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gero_cli import main
from gero_runner.errors import GeroError
from gero_runner.parity.module import InputSpec, make_inputs, parse_input, parse_inputs


@pytest.mark.parametrize("text,spec", [
    ("x=2x3x32x32", InputSpec("x", (2, 3, 32, 32), "float32")),
    ("ids=1,16:int64", InputSpec("ids", (1, 16), "int64")),
    ("mask=4:bool", InputSpec("mask", (4,), "bool")),
    ("h=2x8:float16", InputSpec("h", (2, 8), "float16")),
])
def test_parse_input(text: str, spec: InputSpec) -> None:
    assert parse_input(text) == spec


@pytest.mark.parametrize("text,message", [
    ("x", "NAME=SHAPE"), ("x=2xa", "must be integers"), ("x=2x0", "at least 1"),
    ("x=2:complex64", "float32, float16, float64, int64, int32, bool"),
])
def test_parse_input_errors(text: str, message: str) -> None:
    with pytest.raises(GeroError, match=message):
        parse_input(text)


def test_parse_inputs_needs_unique_names() -> None:
    with pytest.raises(GeroError, match="repeated: x"):
        parse_inputs(["x=2", "x=3"])
    with pytest.raises(GeroError, match="at least one --input"):
        parse_inputs([])


def test_inputs_are_seeded_and_typed() -> None:
    specs = [InputSpec("x", (2, 3)), InputSpec("ids", (5,), "int64"),
             InputSpec("m", (4,), "bool")]
    a, b = make_inputs(specs, 3), make_inputs(specs, 3)
    assert list(a) == ["x", "ids", "m"]
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert a["x"].dtype == np.float32 and a["ids"].dtype == np.int64 and a["m"].dtype == bool
    assert a["ids"].min() >= 0 and a["ids"].max() < 16
    assert not np.array_equal(make_inputs(specs, 4)["x"], a["x"])


def test_without_pytorch_the_command_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code = main(["parity", "--data-dir", str(tmp_path), "--module", "m:f", "--input", "x=2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "gero parity needs PyTorch" in err and "pip install 'gero[torch]'" in err
    assert "Traceback" not in err
