"""Conventions every command shares: --version, the exit status (listed in --help), -q, and
no colour codes when the output is not a terminal or NO_COLOR is set."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gero
from gero_cli import main

ROOT = Path(__file__).resolve().parents[2]
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # Select Graphic Rendition: colours and bold


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _gero(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], capture_output=True,
                          env=_env(**env), timeout=300)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs: Exp as it is (all passed), then under an impossible tolerance."""
    path = tmp_path_factory.mktemp("conventions")
    gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, run_id="base",
             data_dir=path, contracts=False)
    gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, run_id="tight",
             data_dir=path, contracts=False, rtol={"float32": 1e-9}, atol={"float32": 0.0})
    return path


def test_version() -> None:
    out = _gero("--version")
    assert out.returncode == 0
    line = out.stdout.decode().strip()
    version = r"(\S+|not installed)"
    assert re.fullmatch(rf"gero \S+ \(onnxruntime \S+, openvino {version}, tract {version}, "
                        r"onnx \S+, numpy \S+; python \S+\)", line)


def test_help_lists_the_exit_status() -> None:
    # once, in `gero --help`; each command's help points to it (tests/cli/test_help.py)
    out = _gero("--help")
    assert out.returncode == 0
    text = out.stdout.decode()
    assert "exit status (the same for every command):" in text
    for line in ("  0    clean", "  1    found something", "  2    usage or input error"):
        assert line in text


@pytest.mark.slow
def test_exit_status_is_the_same_for_every_command(root: Path) -> None:
    data = ["--data-dir", str(root)]
    assert main(["summary", "--run", "base", *data]) == 0  # every observation passed
    assert main(["summary", "--run", "tight", *data]) == 1
    assert main(["findings", "--run", "tight", "--baseline", "base", *data]) == 1
    assert main(["findings", "--run", "base", *data]) == 0
    assert main(["diff", "base", "tight", *data]) == 1  # regressions
    assert main(["diff", "tight", "base", *data]) == 0  # fixes only
    assert main(["summary", "--run", "nope", *data]) == 2  # unknown run
    assert _gero("summary", "--no-such-option").returncode == 2  # usage error


@pytest.mark.slow
def test_quiet_prints_nothing_but_errors(root: Path) -> None:
    for args in (["-q", "diff", "base", "tight"], ["diff", "-q", "base", "tight"]):
        out = _gero(*args, "--data-dir", str(root))
        assert (out.returncode, out.stdout, out.stderr) == (1, b"", b"")
    out = _gero("-q", "summary", "--data-dir", str(root / "missing"))
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().startswith("gero: error: no runs in")


@pytest.mark.slow
def test_piped_output_has_no_colour_codes(root: Path, tmp_path: Path) -> None:
    # FORCE_COLOR and NO_COLOR removed: what a CI log or `| less` gets by default.
    for args in (["--help"], ["summary", "--data-dir", str(root)],
                 ["findings", "--data-dir", str(root)],
                 ["diff", "base", "tight", "--data-dir", str(root)],
                 ["run", "--data-dir", str(tmp_path), "--ops", "Relu", "--dtypes", "float32",
                  "--repeats", "1", "--jobs", "1"]):
        out = _gero(*args)
        assert out.returncode in (0, 1), out.stderr
        assert b"\x1b[" not in out.stdout + out.stderr, args


def _on_a_terminal(args: list[str], **env: str) -> bytes:
    """Output of gero with stdout and stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "gero_cli", *args], stdout=follower,
                               stderr=follower, stdin=subprocess.DEVNULL, env=_env(**env))
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process is gone
            break
        if not chunk:
            break
        out += chunk
    process.wait(timeout=300)
    os.close(leader)
    return out


@pytest.mark.slow
def test_no_color_on_a_terminal(tmp_path: Path) -> None:
    args = ["run", "--data-dir", str(tmp_path), "--ops", "Relu,Exp,Tanh,Sigmoid", "--dtypes",
            "float32", "--repeats", "1", "--jobs", "1"]
    assert SGR.search(_on_a_terminal(args)), "a terminal gets a coloured progress bar"
    assert not SGR.search(_on_a_terminal(args, NO_COLOR="1"))
