"""`gero run` from the command line: bad input is one clear line, a good run reports counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_helpers import interrupted_after

from gero_cli import main


@pytest.mark.parametrize(("args", "message"), [
    (["--ops", "Nope"], "unknown operator(s) Nope"),
    (["--dtypes", "bfloat16"], "unknown dtype(s) bfloat16"),
    (["--rtol", "float16"], "bad --rtol 'float16'"),
    (["--atol", "float32=-1"], "non-negative"),
    (["--jobs", "0"], "jobs (--jobs) must be a whole number of at least 1, got 0"),
    (["--threads", "0"], "threads (--threads) must be"),
    (["--repeats", "-2"], "repeats (--repeats) must be"),
    (["--model", "/nonexistent.onnx"], "no such file"),
    (["--limit", "0"], "limit (--limit) must be a whole number of at least 1, got 0"),
    (["--timeout", "inf"], "timeout (--timeout) must be a positive number"),
    (["--timeout", "0"], "timeout (--timeout) must be a positive number"),
    (["--run-id", "../escaped"], "must be a plain name"),
    (["--limit", "-1"], "limit (--limit) must be a whole number of at least 1, got -1"),
    (["--timeout", "-5"], "timeout (--timeout) must be a positive number"),
    (["--timeout", "nan"], "timeout (--timeout) must be a positive number"),
    (["--run-id", "/tmp/abs"], "must be a plain name"),
    (["--run-id", "a/b"], "must be a plain name"),
    (["--run-id", "x'y"], "must be a plain name"),
    (["--resume", "nope"], "no run"),
])
def test_bad_input_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      args: list[str], message: str) -> None:
    assert main(["run", "--data-dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error:") and message in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_small_run_reports_its_counts_quietly(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--data-dir", str(tmp_path), "--ops", "Exp", "--dtypes", "float32",
                 "--repeats", "1", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Within contract" in out and "observations" in out
    # Not a terminal: no progress bar escape codes.
    assert "\x1b[" not in out


@pytest.mark.slow
def test_ctrl_c_says_what_the_run_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from gero_runner import run as run_module

    monkeypatch.setattr(run_module, "run_cases", interrupted_after(2))
    code = main(["run", "--data-dir", str(tmp_path), "--ops", "Exp,Relu", "--dtypes",
                 "float32", "--repeats", "1", "--no-contracts"])
    err = capsys.readouterr().err
    assert code == 130
    assert "gero: interrupted; run " in err and "keeps its 2 finished cases" in err
    assert "gero summary --run " in err and "Traceback" not in err
