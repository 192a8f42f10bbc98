"""The observation store: sightings by integer key, compaction, and roots of older geros."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from history_helpers import (
    FIELDS,
    artifact,
    make_artifacts,
    oid,
    row,
    run_rows,
    write_legacy,
    write_with_writer,
)

from gero.query.source import open_source
from gero_cli import main
from gero_runner.errors import StoreError
from gero_runner.evidence.rows import rows_for_artifact
from gero_runner.schema import OBSERVATION_SCHEMA
from gero_runner.storage import compact as compact_module
from gero_runner.storage import run_writer
from gero_runner.storage.compact import compact
from gero_runner.storage.index import observation_files, read_index
from gero_runner.storage.reader import resolve_observation
from gero_runner.storage.run_writer import RunWriter
from gero_runner.storage.store import DataRoot


@pytest.fixture()
def no_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs' ends do not compact: every run's file stays loose until ``compact``."""
    monkeypatch.setattr(run_writer, "maybe_compact", lambda root: None)


RUNS = ["20250101-020000-000001", "20250102-020000-000002", "20250103-020000-000003"]


def _history(root: Path) -> None:
    """A run of a gero before keys, then two written as today: shared, new and repeated
    observations, a NaN error."""
    write_legacy(root, RUNS[0], ["a.1", "a.2", "b.nan"], ["a.1", "a.2", "b.nan"])
    write_with_writer(root, RUNS[1], ["a.1", "b.nan", "c.bad", "c.2"])
    write_with_writer(root, RUNS[2], ["a.2", "c.bad", "d.1", "d.1", "e.1"])


def _everything(root: Path) -> dict[str, Any]:
    """What the readers answer: each run's rows, the explorer's table, ids, evidence rows."""
    answers: dict[str, Any] = {r: run_rows(root, r) for r in RUNS}
    for r in RUNS:
        with open_source(root, r) as source:
            answers[f"evals {r}"] = source.query(
                "SELECT observation_id, CAST(max_abs_error AS VARCHAR), result FROM evals "
                "ORDER BY 1")
            answers[f"numbered {r}"] = source.query(
                "SELECT observation_id, actual_median_ms FROM obs_numbered ORDER BY 1")
    answers["resolved"] = resolve_observation(root, oid("c.bad")[:8])
    answers["evidence"] = rows_for_artifact(DataRoot(root), root / artifact("a.2"))
    return answers


def test_sightings_name_observations_by_key_and_each_is_stored_once(
        tmp_path: Path, no_auto: None) -> None:
    _history(tmp_path)
    sightings = pq.read_table(DataRoot(tmp_path).run_dir(RUNS[2]) / "sightings.parquet")
    # a.2 is stored without a key (by the older gero's run): it is sighted by id.
    assert sightings.column("observation_key").null_count == 1
    assert sightings.column("observation_id").to_pylist().count(None) == 3
    assert sorted(r[0] for r in run_rows(tmp_path, RUNS[2])) == sorted(
        oid(n) for n in ("a.2", "c.bad", "d.1", "e.1"))
    stored = [i for f in observation_files(tmp_path)
              for i in pq.read_table(f).column("observation_id").to_pylist()]
    assert sorted(stored) == sorted(oid(n) for n in ("a.1", "a.2", "b.nan", "c.bad", "c.2",
                                                     "d.1", "e.1"))


@pytest.mark.slow
def test_compaction_leaves_every_answer_identical(tmp_path: Path, no_auto: None) -> None:
    _history(tmp_path)
    make_artifacts(tmp_path, ["a.2"])
    before = _everything(tmp_path)
    result = compact(DataRoot(tmp_path))
    assert result.runs == RUNS and result.keyed == 3 and result.rows == 7
    index = read_index(tmp_path)
    assert [f.name for f in index.files] == ["observations-000001.parquet"]
    assert observation_files(tmp_path) == [tmp_path / "store" / "observations-000001.parquet"]
    assert _everything(tmp_path) == before
    # The replaced files stay for readers that listed them, until the next compaction.
    assert all((tmp_path / p).is_file() for p in index.superseded)
    write_with_writer(tmp_path, "20250104-020000-000004", ["a.1", "b.nan", "f.1"])
    assert compact(DataRoot(tmp_path)).removed == index.superseded
    assert not any((tmp_path / p).exists() for p in index.superseded)
    assert _everything(tmp_path) == before
    # A run after compaction sights the old run's observations by their new keys.
    sightings = pq.read_table(DataRoot(tmp_path).run_dir("20250104-020000-000004")
                              / "sightings.parquet")
    assert sightings.column("observation_key").null_count == 0
    assert [r[0] for r in run_rows(tmp_path, "20250104-020000-000004")] == sorted(
        oid(n) for n in ("a.1", "b.nan", "f.1"))


def test_a_root_of_an_older_gero_is_read_then_compacted_by_a_run(tmp_path: Path) -> None:
    write_legacy(tmp_path, RUNS[0], ["a.1", "a.2"], ["a.1", "a.2"])
    write_legacy(tmp_path, RUNS[1], ["b.1"], ["a.1", "b.1"])
    old = {r: run_rows(tmp_path, r) for r in RUNS[:2]}
    write_with_writer(tmp_path, RUNS[2], ["a.2", "b.1", "c.1"])
    # The run's end compacted the old runs (they had no keys); its own file too.
    assert read_index(tmp_path).compacted == set(RUNS)
    assert {r: run_rows(tmp_path, r) for r in RUNS[:2]} == old
    assert [r[0] for r in run_rows(tmp_path, RUNS[2])] == sorted(
        oid(n) for n in ("a.2", "b.1", "c.1"))


def test_compaction_past_the_threshold_is_automatic(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compact_module, "AUTO_THRESHOLD", 3)
    ids = [f"2025010{i}-020000-00000{i}" for i in range(1, 6)]
    for i, run_id in enumerate(ids):
        write_with_writer(tmp_path, run_id, ["a.1", f"n{i}.1"], saves=1)
        loose = len(observation_files(tmp_path)) - len(read_index(tmp_path).files)
        assert loose == (0 if i == 2 else (i + 1) % 3)
    assert [r[0] for r in run_rows(tmp_path, ids[-1])] == sorted([oid("a.1"), oid("n4.1")])


def test_gero_compact_dry_run_merges_nothing(tmp_path: Path, no_auto: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _history(tmp_path)
    assert main(["compact", "--data-dir", str(tmp_path), "--dry-run"]) == 0
    assert "would merge 3 runs" in capsys.readouterr().out
    assert not read_index(tmp_path).files
    assert main(["compact", "--data-dir", str(tmp_path)]) == 0
    assert "merged 3 runs into store/observations-000001.parquet (7 observations; 3 given " \
        "keys" in capsys.readouterr().out


def test_an_unreadable_index_is_rebuilt_when_a_run_starts(tmp_path: Path,
                                                          no_auto: None) -> None:
    """A truncated index: the next run rebuilds it from the store's files before it writes
    (its first save would stop on it), and every run reads as before."""
    _history(tmp_path)
    compact(DataRoot(tmp_path))
    before = run_rows(tmp_path, RUNS[2])
    (tmp_path / "store" / "index.json").write_text("{not json")
    write_with_writer(tmp_path, "20250105-020000-000005", ["a.1"])
    assert read_index(tmp_path).problem is None
    assert run_rows(tmp_path, RUNS[2]) == before
    assert [r[0] for r in run_rows(tmp_path, "20250105-020000-000005")] == [oid("a.1")]
    write_with_writer(tmp_path, "20250106-020000-000006", ["a.1", "z.1"])
    assert [r[0] for r in run_rows(tmp_path, "20250106-020000-000006")] == sorted(
        [oid("a.1"), oid("z.1")])


def test_an_index_lost_mid_run_stops_its_save(tmp_path: Path, no_auto: None) -> None:
    _history(tmp_path)
    writer = RunWriter.create(DataRoot(tmp_path), "20250105-020000-000005",
                              {**FIELDS, "run_id": "20250105-020000-000005",
                               "started_at": "2025-01-05T02:00:00+00:00"})
    (tmp_path / "store" / "index.json").write_text("{not json")
    writer.add(0, "synthetic/a", pa.RecordBatch.from_pylist(
        [row("a.1", "20250105-020000-000005")], schema=OBSERVATION_SCHEMA), 0.0, 0.0, 0.0)
    with pytest.raises(StoreError, match=r"unreadable store index.*gero compact"):
        writer.save("running")
    writer.close()
