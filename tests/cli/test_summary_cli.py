"""`gero summary` and `gero` alone without a terminal, on a small real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gero_cli import main
from gero_runner.run import RunRequest, execute


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("summary")
    execute(RunRequest(data_root=root, ops=["Exp", "Softmax"], dtypes=["float32"], repeats=1))
    return root


def test_text_summary_counts_classes_operations_and_laws(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(data_root)]) == 1  # non-passed observations: exit 1
    out = capsys.readouterr().out
    assert "Within contract" in out and "Backend divergences" in out
    assert "\nExp " in out and "\nSoftmax " in out
    assert "contract:partition" in out and "contract:probability" in out


def test_json_summary_matches_the_run_record(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(data_root), "--format", "json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == summary["run"]["counts"]
    assert {o["op_type"] for o in summary["operations"]} == {"Exp", "Softmax"}


def test_gero_alone_without_a_terminal_prints_the_summary(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(data_root)]) == 1
    assert "Within contract" in capsys.readouterr().out


def test_empty_data_root_says_how_to_make_a_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--data-dir", str(tmp_path)]) == 2
    assert "gero run --data-dir" in capsys.readouterr().err
