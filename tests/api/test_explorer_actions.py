"""What the explorer does through ``gero.api`` (issue 39): its run picker, replay (with a
cancel), the stored blame and localization, the evidence directory, and the one spelling of
the replay command."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gero import api
from gero_runner.errors import GeroError


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root holding one tiny real run (one Relu case), made by `gero run`."""
    root = tmp_path_factory.mktemp("explorer-api")
    done = subprocess.run([sys.executable, "-m", "gero_cli", "run", "--data-dir", str(root),
                           "--jobs", "1", "--ops", "Relu", "--dtypes", "float32", "--limit",
                           "1", "--backends", "onnxruntime"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root


def _row(root: Path) -> dict[str, object]:
    """An agreement row of the run, with its evidence: the explorer's detail row."""
    with api.open_run(data_dir=root) as run:
        rows = run.observations("\"check\" = 'agreement' AND artifact_path <> ''").to_pylist()
    assert rows
    row: dict[str, object] = rows[0]
    return row


@pytest.mark.slow
def test_the_run_picker_lists_finds_and_describes_runs(root: Path, tmp_path: Path) -> None:
    ids = api.run_ids(root)
    assert len(ids) == 1
    run_id = ids[0]
    assert api.find_run(None, root) == run_id == api.find_run(run_id[:8], root, ids)
    [listed] = api.list_runs(root)
    assert isinstance(listed, api.RunInfo) and listed.run_id == run_id
    info = api.run_info(run_id, root)
    assert info.status == "complete" and info.observation_count > 0
    with pytest.raises(GeroError, match="no run matches 'zzz'"):
        api.find_run("zzz", root)
    # An empty root: nothing listed, and finding the newest says how to make one.
    assert api.run_ids(tmp_path) == [] and api.list_runs(tmp_path) == []
    with pytest.raises(GeroError, match="gero run --data-dir"):
        api.find_run(None, tmp_path)


@pytest.mark.slow
def test_replay_takes_the_row_the_explorer_holds_and_stops_when_cancelled(root: Path) -> None:
    row = _row(root)
    oid = str(row["observation_id"])
    directory = api.evidence_directory(row, root)
    assert directory == root / str(row["artifact_path"]) and directory.is_dir()
    report = api.replay(directory, root, [oid], cancelled=lambda: False)
    [replayed] = [o for o in report.observations if o.observation_id == oid]
    assert replayed.reproduced and replayed.label == "reproduced bit-exact"
    with pytest.raises(GeroError, match="cancelled"):
        api.replay(directory, root, [oid], cancelled=lambda: True)


@pytest.mark.slow
def test_evidence_is_found_inside_the_root_only(root: Path) -> None:
    row = _row(root)
    oid = str(row["observation_id"])
    folder = api.evidence_directory(row, root)
    assert api.localization_file(row, root) == folder / "localize" / f"{oid}.json"
    assert api.stored_blame(row, root) is None  # nothing blamed yet
    with pytest.raises(GeroError, match="no evidence directory"):
        api.evidence_directory({**row, "artifact_path": ""}, root)
    with pytest.raises(GeroError, match="outside the data root"):
        api.evidence_directory({**row, "artifact_path": "../elsewhere"}, root)
    with pytest.raises(GeroError, match="missing"):
        api.evidence_directory({**row, "artifact_path": "runs/none/artifacts/x"}, root)


@pytest.mark.slow
def test_the_replay_command_has_one_spelling(root: Path) -> None:
    row = _row(root)
    oid, relative = str(row["observation_id"]), str(row["artifact_path"])
    command = api.replay_command(oid, relative, root)
    with api.open_run(data_dir=root) as run:
        assert run.replay_command(oid) == command
    assert shlex.split(command) == ["gero", "replay", str(root.absolute() / relative),
                                    "--observation", oid]
    assert api.replay_command(oid, "", root) == api.NO_EVIDENCE
