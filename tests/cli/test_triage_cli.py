"""The command line around the explorer: bundle names, replay paths, broken pipes, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gero_cli import BROKEN_PIPE, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def test_a_bundle_named_zip_is_refused_with_the_name_to_use(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bundle", "0123456789ab", "--data-dir", str(tmp_path), "-o",
                 str(tmp_path / "x.zip")])
    assert code == 2
    err = capsys.readouterr().err
    assert "a bundle is a .tar.gz; name it x.tar.gz" in err
    assert not (tmp_path / "x.zip").exists()


def test_replay_finds_an_exported_artifact_path_under_data_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A relative path that exists only under the data root is looked up there (the manifest
    # check then fails on this empty directory: the point is that the path was found).
    (tmp_path / "runs" / "r" / "artifacts" / "a").mkdir(parents=True)
    code = main(["replay", "runs/r/artifacts/a", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{tmp_path}/runs/r/artifacts/a/manifest.json: manifest.json is missing" in err


def test_diff_into_a_closed_pipe_is_not_the_regressions_code(tmp_path: Path) -> None:
    # `gero diff A B | head -0`: the reader is gone before gero writes.
    script = ("import sys; from gero_cli import main\n"
              "def boom(args): raise BrokenPipeError\n"
              "import gero_cli.diff_cmd as d; d.main = boom\n"
              "sys.exit(main(['diff', 'a', 'b']))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": f"{ROOT / 'runner'}:{ROOT / 'src'}"}, cwd=tmp_path)
    assert proc.returncode == BROKEN_PIPE != 1


def test_every_option_of_gero_run_has_help_and_the_command_a_description() -> None:
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.items()  # type: ignore[union-attr]
               if a[0] == "run")[1]
    assert run.description and "classify" in run.description
    missing = [a.dest for a in run._actions if a.dest != "help" and not a.help]
    assert missing == []


def test_run_info_has_the_command_and_the_tolerances_that_differ(tmp_path: Path) -> None:
    import json

    from gero_runner.storage.runs import read_info

    directory = tmp_path / "runs" / "r1"
    directory.mkdir(parents=True)
    (directory / "run.json").write_text(json.dumps({
        "command_line": "gero run --rtol float16=1e-2", "tolerances": {
            "float16": {"rtol": 1e-2, "atol": 5e-4}, "float32": {"rtol": 1e-5, "atol": 1e-6}}}))
    info = read_info(tmp_path, "r1")
    assert info.command_line == "gero run --rtol float16=1e-2"
    assert info.tolerance_overrides == "float16 rtol=0.01"
