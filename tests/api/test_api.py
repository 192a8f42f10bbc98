"""The public API end to end on a small model: run it, reopen it, read observations as Arrow
and DuckDB, get findings, replay one from its command; the CLI gives the same rows.

Every run opened here is closed: an open DuckDB connection keeps threads in this process,
and tests that later fork a child from it could deadlock."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from shared_helpers import classifier

import gero
from gero_cli import main as cli
from gero_runner.schema import COLUMN_NAMES, RESULT_CLASSES

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT / "runner"), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[gero.Run]:
    root = tmp_path_factory.mktemp("api")
    model = classifier(root / "broken.onnx", mixes_batch=True)
    with gero.run(models=[model], variants=["int8-dynamic"], task="classifier",
                  data_dir=root / "data", jobs=1, repeats=1) as run:
        yield run


@pytest.mark.slow
def test_a_model_run_reads_back_as_arrow_duckdb_and_findings(model_run: gero.Run) -> None:
    run = model_run
    assert run.status == "complete" and not run.passed
    table = run.observations()
    assert isinstance(table, pa.Table) and tuple(table.column_names) == COLUMN_NAMES
    assert table.num_rows == sum(run.counts.values()) > 0
    counts = dict(run.relation().aggregate("result, count(*)").fetchall())
    assert {c: counts.get(c, 0) for c in RESULT_CLASSES} == run.counts
    failing = run.observations("result <> 'passed'")
    assert failing.num_rows == run.non_passed > 0
    assert set(failing.column("result").to_pylist()) <= {"divergence", "contract_issue",
                                                         "execution"}
    findings = run.findings()
    # Every non-passed observation belongs to exactly one finding.
    assert sum(f.observations for f in findings) == run.non_passed
    assert any("partition" in f.title for f in findings)
    with gero.open_run(run.id[:12], run.data_dir) as reopened:
        assert reopened.id == run.id and reopened.counts == run.counts
    assert gero.open_run(data_dir=run.data_dir).id == run.id  # the newest
    run.close()


@pytest.mark.slow
def test_a_findings_replay_command_reproduces(model_run: gero.Run) -> None:
    worst = model_run.findings()[0].representative
    model_run.close()
    command = shlex.split(model_run.replay_command(worst.observation_id, worst.artifact_path))
    assert command[:2] == ["gero", "replay"]
    # As a user runs it: in a process of its own (replaying in this one would leave ONNX
    # Runtime's threads behind for the tests that fork after it).
    done = subprocess.run([sys.executable, "-m", "gero_cli", *command[1:]], text=True,
                          capture_output=True, timeout=300, env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reproduced" in done.stdout


@pytest.mark.slow
def test_the_cli_is_a_thin_layer_the_same_rows(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--ops", "Exp", "--dtypes", "float32", "--repeats", "1", "--jobs", "1",
               "--run-id", "same"]
    cli(["run", "--data-dir", str(tmp_path / "cli"), *options])
    with gero.open_run("same", tmp_path / "cli") as run:
        by_cli = run.observations()
    with gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, run_id="same",
                  data_dir=tmp_path / "api") as run:
        by_api = run.observations()
    assert sorted(by_cli.column("observation_id").to_pylist()) == \
        sorted(by_api.column("observation_id").to_pylist())


@pytest.mark.parametrize(("options", "message"), [
    ({"dtypes": ["bfloat16"]}, "unknown dtype(s) bfloat16"),
    ({"rtol": {"float16": -1.0}}, "non-negative"),
    ({"jobs": 0}, "at least 1"),
    ({"models": ["/nonexistent.onnx"]}, "no such file"),
    ({"dims": ["batch"]}, "NAME=VALUE"),
])
def test_bad_options_raise_the_clis_one_sentence(tmp_path: Path, options: dict[str, object],
                                                 message: str) -> None:
    with pytest.raises(gero.GeroError, match=None) as error:
        gero.run(data_dir=tmp_path, **options)  # type: ignore[arg-type]
    assert message in str(error.value)


def test_opening_a_missing_run_is_a_gero_error(tmp_path: Path) -> None:
    with pytest.raises(gero.GeroError, match="no runs in"):
        gero.open_run(data_dir=tmp_path)


@pytest.mark.slow
def test_diff_between_two_api_runs(tmp_path: Path) -> None:
    base = gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, data_dir=tmp_path)
    tight = gero.run(ops=["Exp"], dtypes=["float32"], repeats=1, jobs=1, data_dir=tmp_path,
                     rtol={"float32": 1e-9}, atol={"float32": 0.0})
    report = tight.diff(base)
    assert report.has_regressions and report.base_run == base.id
    assert not base.diff(base).has_regressions


def test_an_observation_without_evidence_has_no_replay_command(tmp_path: Path) -> None:
    """A timeout keeps no tensors: its replay command must not name the data root."""
    run = gero.Run(tmp_path, "r")
    assert run.replay_command("abc", "") == "no evidence kept: nothing to replay"
