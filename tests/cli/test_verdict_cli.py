"""``gero verdict`` and the card in ``gero summary``, with real ``gero`` processes on two
tiny models: one safe in every file, one whose int8 file quantisation ruins (an input
column a thousand times larger than the others crushes the rest to a few levels)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import save

from gero.query.verdicts import Verdict
from gero_cli.verdict_cmd import card_lines

ROOT = Path(__file__).resolve().parents[2]


def _gero(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runner"), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "gero_cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _model(path: Path, crushed: bool) -> str:
    """x[N, 8] @ W[8, 4], output columns 1-3 (the column a crushed input feeds is dropped)."""
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    w[0, 1:] = 0.0 if crushed else w[0, 1:]
    ints = [numpy_helper.from_array(np.array([v], np.int64), n)
            for n, v in (("s", 1), ("e", 4), ("a", 1))]
    return save(path, [helper.make_node("MatMul", ["x", "W"], ["h"]),
                       helper.make_node("Slice", ["h", "s", "e", "a"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                [numpy_helper.from_array(w, "W"), *ints])


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("verdict")
    x = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32) * 2
    np.savez(tmp / "x.npz", x=x)
    x[:, 0] = 2000.0  # int8-dynamic quantises the whole input on one scale
    np.savez(tmp / "crushed.npz", x=x)
    data = tmp / "data"
    for run_id, crushed in (("safe", False), ("ruined", True)):
        path = _model(tmp / f"{run_id}.onnx", crushed)
        out = _gero("run", "--model", path, "--inputs",
                    str(tmp / ("crushed.npz" if crushed else "x.npz")),
                    "--variants", "fp16,int8-dynamic", "--backends", "onnxruntime",
                    "--no-contracts", "--jobs", "1", "--repeats", "1", "--run-id", run_id,
                    "--paths", "all",  # a line for every ORT level
                    "--data-dir", str(data))
        assert out.returncode in (0, 1), out.stderr
    out = _gero("run", "--ops", "Relu", "--dtypes", "float32", "--no-contracts", "--jobs", "1",
                "--repeats", "1", "--run-id", "ops", "--data-dir", str(data))
    assert out.returncode in (0, 1), out.stderr
    return data


def _json(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_a_safe_model_is_one_line_per_setting_and_exit_0(root: Path) -> None:
    out = _gero("verdict", "--run", "safe", "--data-dir", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("model safe, run safe: 12 safe, 0 off, 0 cannot run "
                        "(3 files × 4 runtime settings)")
    assert lines[1].split() == ["runtime", "setting", "fp32", "fp16", "int8-dynamic"]
    assert lines[2:] == [f"  onnxruntime  {level:<13}safe        safe        safe"
                         for level in ("disable_all", "basic", "extended", "all")]


def test_a_ruined_int8_file_is_off_on_every_setting_and_exit_1(root: Path) -> None:
    out = _gero("verdict", "--run", "ruined", "--data-dir", str(root), "--format", "json")
    assert out.returncode == 1, out.stderr
    data = _json(out)
    assert data["safe"] is False and data["run_id"] == "ruined"
    by = {(v["setting"], v["file"]): v for v in data["verdicts"]}
    assert len(by) == 12 and {v["model"] for v in by.values()} == {"ruined"}
    for level in ("disable_all", "basic", "extended", "all"):
        assert by[(level, "fp32")]["verdict"] == by[(level, "fp16")]["verdict"] == "safe"
        int8 = by[(level, "int8-dynamic")]
        assert int8["verdict"] == "off", int8
        assert (int8["measure"], int8["gate"], int8["direction"]) == ("row cosine", 0.99, ">=")
        assert int8["figure"] < 0.9
        assert int8["arbiter"] == "fp32:onnxruntime:all"
        assert int8["inherited"] is (level != "all")
    text = _gero("verdict", "--run", "ruined", "--data-dir", str(root)).stdout
    # one line for the one cause: the file its runtime's baseline judges off
    (line,) = [line for line in text.splitlines() if "off, row cosine" in line]
    assert line.startswith("    every runtime setting · int8-dynamic: off, row cosine")
    assert "< 0.990000 against the fp32 model on onnxruntime all [" in line


def test_the_summary_shows_the_card_and_lists_the_verdicts(root: Path) -> None:
    out = _gero("summary", "--run", "ruined", "--data-dir", str(root), "--format", "json")
    verdicts = _json(out)["verdicts"]
    alone = _json(_gero("verdict", "--run", "ruined", "--data-dir", str(root), "--format",
                        "json"))["verdicts"]
    assert verdicts == alone and len(verdicts) == 12
    text = _gero("summary", "--run", "ruined", "--data-dir", str(root)).stdout
    assert "model ruined, run ruined: 8 safe, 4 off, 0 cannot run" in text
    # a run of the operator suite has no card
    ops = _gero("summary", "--run", "ops", "--data-dir", str(root), "--format", "json")
    assert _json(ops)["verdicts"] == []


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "safe", "--model", "nope"], "run safe has no model 'nope'; its models: safe"),
    (["--run", "ops"], "run ops tested no model"),
])
def test_a_question_without_an_answer_is_a_usage_error(root: Path, args: list[str],
                                                       message: str) -> None:
    out = _gero("verdict", *args, "--data-dir", str(root))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("gero: error:") and message in out.stderr
    assert "Traceback" not in out.stderr


def test_one_model_by_its_file(root: Path) -> None:
    out = _gero("verdict", "--run", "safe", "--model", str(root / "elsewhere" / "safe.onnx"),
                "--data-dir", str(root))
    assert out.returncode == 0 and out.stdout.startswith("model safe, run safe")


def _v(runtime: str, setting: str, file: str, verdict: str, oid: str, figure: float = 0.5,
       inherited: bool = False) -> Verdict:
    return Verdict(model="m", case_id="c", runtime=runtime, setting=setting, file=file,
                   verdict=verdict, measure="row cosine" if verdict == "off" else "",
                   figure=figure if verdict == "off" else None,
                   gate=0.99 if verdict == "off" else None,
                   direction=">=" if verdict == "off" else "", check="model:x",
                   output="y", arbiter="fp32:onnxruntime:all", arbiters=(),
                   reason=f"why {oid}", observation_id=oid, observations=1, not_passed=1,
                   inherited=inherited)


def test_one_line_per_cause() -> None:
    card = [_v("onnxruntime", "basic", "int8-dynamic", "off", "a", inherited=True),
            _v("onnxruntime", "all", "int8-dynamic", "off", "a"),
            _v("tract", "optimized", "int8-dynamic", "off", "b", 0.8),
            _v("tract", "unoptimized", "int8-dynamic", "off", "c", 0.3),
            _v("onnxruntime", "all", "fp16", "safe", "d"),
            _v("onnxruntime", "basic", "fp16", "safe", "e"),
            _v("tract", "optimized", "fp16", "cannot-run", "f"),
            _v("tract", "unoptimized", "fp16", "cannot-run", "g")]
    lines = card_lines(card, "r")
    assert lines[lines.index("  not safe:") + 1:] == [
        "    onnxruntime basic, all · int8-dynamic: off, row cosine 0.500000 < 0.990000 "
        "against the fp32 model on onnxruntime all [model:x, output y, observation a]",
        # the worst of the runtime's settings speaks for them
        "    tract optimized, unoptimized · int8-dynamic: off, row cosine 0.300000 < 0.990000 "
        "against the fp32 model on onnxruntime all [model:x, output y, observation c]",
        "    tract optimized, unoptimized · fp16: cannot run, why f [observation f]"]
