"""`gero findings` text: each finding with its worst observation's figure and the command
that replays it, and that command, run as printed, reproduces it (real `gero` processes)."""

from __future__ import annotations

import re
import shlex

import pytest
from gero_processes import gero


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Exp under a tolerance nothing meets: findings with figures and evidence."""
    root = tmp_path_factory.mktemp("findings-text")
    out = gero("run", "--ops", "Exp", "--dtypes", "float32", "--rtol", "float32=1e-9",
               "--atol", "float32=0", "--backends", "onnxruntime", "--no-contracts",
               "--jobs", "1", "--repeats", "1", "--data-dir", str(root))
    assert out.returncode == 1, out.stderr
    out = gero("findings", "--data-dir", str(root))
    assert out.returncode == 1, out.stderr
    return out.stdout


def test_each_finding_has_its_figure_and_its_replay_command(findings: str) -> None:
    lines = findings.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"[0-9a-f]{12} ", line)]
    assert heads
    for i in heads:
        worst, replay = lines[i + 1].split(), lines[i + 2].split()
        assert worst[:3] == ["worst", "max", "|a−r|"] and float(worst[3]) > 0
        assert "outside atol=0 + rtol=1e-09·|r|" in lines[i + 1]
        assert replay[:2] == ["replay", "gero"] and replay[-2] == "--observation"
        assert re.fullmatch(r"[0-9a-f]{64}", replay[-1])


def test_the_printed_replay_command_reproduces(findings: str) -> None:
    line = next(line for line in findings.splitlines() if line.lstrip().startswith("replay "))
    command = shlex.split(line.split("replay ", 1)[1])
    assert command[0] == "gero"
    out = gero(*command[1:])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reproduced" in out.stdout
