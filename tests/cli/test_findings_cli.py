"""`gero findings`: text, JSON and Markdown, status against a baseline, and the what-if."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gero_cli import main
from gero_runner.run import RunRequest, execute


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("findings-cli")
    for run_id in ("20260101-000001-aaaaaa", "20260101-000002-bbbbbb"):
        execute(RunRequest(data_root=root, ops=["Elu", "LayerNormalization"],
                           dtypes=["float16", "float64"], repeats=1, run_id=run_id))
    return root


@pytest.mark.slow
def test_text_lists_findings_worst_first_with_status(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--data-dir", str(data_root)]) == 1  # the run has findings
    out = capsys.readouterr().out
    assert "against 20260101-000001-aaaaaa" in out and "0 new" in out
    assert "ONNX Runtime has no float64 kernel for 1 operator(s): Elu" in out
    assert " still " in out


def test_json_covers_every_non_passed_observation(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--data-dir", str(data_root), "--run", "20260101-000001",
                 "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["baseline_run_id"] is None
    assert sum(f["observations"] for f in report["findings"]) == report["non_passed"] > 0
    first = report["findings"][0]
    assert {"finding_id", "title", "result", "outlier", "operators", "dtypes", "levels",
            "representative"} <= set(first)


def test_markdown_is_a_bug_report_with_replay_and_bundle_commands(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--data-dir", str(data_root), "--format", "md"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("# Findings of run 20260101-000002-bbbbbb")
    assert "- operators: Elu" in out and "- dtypes: float64" in out
    assert "gero replay " in out and "gero bundle " in out and "max |a−r| = " in out


def test_what_if_regrades_from_stored_figures(
        data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--data-dir", str(data_root), "--rtol", "float16=0.5",
                 "--atol", "float16=0.5", "--format", "json"]) == 1
    whatif = json.loads(capsys.readouterr().out)["what_if"]
    assert whatif["to_passed"] > 0 and whatif["to_divergence"] == 0
    assert whatif["not_regraded"] > 0  # contracts and NaN rows keep their class


@pytest.mark.parametrize("bad", [["--rtol", "float16"], ["--atol", "int8=1"],
                                 ["--rtol", "float32=-1"], ["--baseline", "nosuchrun"]])
def test_bad_input_is_one_line_and_exit_2(
        data_root: Path, bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["findings", "--data-dir", str(data_root), *bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gero: error: ") and "Traceback" not in err
