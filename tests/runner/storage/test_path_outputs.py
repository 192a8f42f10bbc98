"""Kept path outputs (``storage.path_outputs``): a hit gives back what was kept, a miss
gives nothing, an entry that is corrupt, changed or another key's is not used (one
sentence), nothing lands outside the data root, and gc collects the entries no kept run
used."""

from __future__ import annotations

import json
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from gero_runner.storage import gc
from gero_runner.storage.layout import OUTPUTS_DIR
from gero_runner.storage.path_outputs import PathOutputs, Stored, path_key
from gero_runner.storage.store import DataRoot

MODEL = b"model bytes"
INPUTS = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}


def _key(**changed: object) -> str:
    given: dict[str, object] = {"model": MODEL, "inputs": INPUTS, "backend": "onnxruntime",
                                "version": "1.0", "optimization": "all", "threads": 1,
                                "settings": {"level": "all"}, "repeats": 5}
    given.update(changed)
    return path_key(**given)  # type: ignore[arg-type]


def _stored() -> Stored:
    return Stored([np.array([1.5, -2.0], dtype=np.float32), np.array(3, dtype=np.int64)],
                  median_ms=1.25, build_ms=7.5, repeats=5, deterministic=True)


def test_a_kept_entry_is_found_whole_and_a_missing_one_is_a_miss(tmp_path: Path) -> None:
    cache = PathOutputs(tmp_path)
    key = _key()
    assert cache.load(key) == (None, None)
    cache.store(key, _stored())
    got, problem = cache.load(key)
    assert problem is None and got is not None
    assert [a.dtype for a in got.outputs] == [np.float32, np.int64]
    assert got.outputs[0].tolist() == [1.5, -2.0] and got.outputs[1].shape == ()
    assert (got.median_ms, got.build_ms, got.repeats, got.deterministic) == (1.25, 7.5, 5, True)
    assert (tmp_path / cache.relative(key)).is_file()
    assert not list((tmp_path / "cache" / "outputs").glob(".gero-*"))  # no temporary left


def test_the_key_changes_with_everything_a_path_depends_on() -> None:
    base = _key()
    changed = [_key(model=b"other"), _key(inputs={"x": INPUTS["x"] + 1}),
               _key(inputs={"y": INPUTS["x"]}), _key(backend="openvino"), _key(version="1.1"),
               _key(optimization="basic"), _key(threads=2), _key(settings={"level": "x"}),
               _key(repeats=1)]
    assert base == _key() and len({base, *changed}) == len(changed) + 1


@pytest.mark.parametrize("damage", ["truncated", "tampered", "another key", "not a zip",
                                    "compressed"])
def test_a_damaged_entry_is_not_used_and_says_why(tmp_path: Path, damage: str) -> None:
    cache = PathOutputs(tmp_path)
    key = _key()
    cache.store(key, _stored())
    path = tmp_path / cache.relative(key)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "not a zip":
        path.write_text("hello")
    else:
        with zipfile.ZipFile(path) as z:
            members = {n: z.read(n) for n in z.namelist()}
        if damage == "tampered":  # a value changed, its hash left as it was
            x = np.array([9.0, -2.0], dtype=np.float32)
            members["0.npy"] = members["0.npy"][:-8] + x.tobytes()
        elif damage == "another key":
            meta = json.loads(members["meta.json"])
            members["meta.json"] = json.dumps({**meta, "key": _key(version="2")}).encode()
        packing = zipfile.ZIP_DEFLATED if damage == "compressed" else zipfile.ZIP_STORED
        with zipfile.ZipFile(path, "w", packing) as z:
            for name, data in members.items():
                z.writestr(name, data)
    got, problem = cache.load(key)
    assert got is None and problem is not None
    assert problem.startswith(f"the stored outputs {cache.relative(key)} could not be used (")
    assert problem.endswith("the path was computed again") and "\n" not in problem
    if damage == "compressed":  # a member could inflate past the file: never read
        assert "(it is compressed, as gero never writes it)" in problem
    cache.store(key, _stored())  # the recomputed outputs replace it
    assert cache.load(key)[0] is not None


def test_entries_never_escape_the_data_root(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "cache").mkdir(parents=True)
    (root / "cache" / "outputs").symlink_to(elsewhere, target_is_directory=True)
    cache = PathOutputs(root)
    cache.store(_key(), _stored())
    assert list(elsewhere.iterdir()) == []
    assert cache.load(_key()) == (None, None)
    assert PathOutputs(tmp_path).load("../../etc/passwd") == (None, None)


def _run(root: Path, run_id: str, started: datetime) -> None:
    (root / "runs" / run_id).mkdir(parents=True)
    (root / "runs" / run_id / "run.json").write_text(
        json.dumps({"run_id": run_id, "started_at": started.isoformat()}))


def test_gc_collects_the_entries_no_kept_run_used(tmp_path: Path) -> None:
    cache = PathOutputs(tmp_path)
    old, new = _key(version="old"), _key(version="new")
    for key in (old, new):
        cache.store(key, _stored())
    day = datetime(2025, 1, 2, tzinfo=UTC).timestamp()
    os.utime(tmp_path / cache.relative(old), (day - 3600, day - 3600))  # before the run
    os.utime(tmp_path / cache.relative(new), (day + 3600, day + 3600))  # used by it
    assert {g.path for g in gc.plan(DataRoot(tmp_path)).garbage} == {
        Path(cache.relative(new)), Path(cache.relative(old))}  # no run: every entry goes
    _run(tmp_path, "one", datetime(2025, 1, 2, tzinfo=UTC))
    plan = gc.plan(DataRoot(tmp_path))
    assert [(g.path, g.why) for g in plan.garbage] == [
        (Path(cache.relative(old)), "kept path outputs no kept run used")]
    gc.apply(DataRoot(tmp_path))
    assert sorted(p.name for p in tmp_path.joinpath(*OUTPUTS_DIR).iterdir()) == [f"{new}.npz"]


def test_gero_gc_lists_the_kept_outputs_it_would_remove(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gero_cli import main

    cache = PathOutputs(tmp_path)
    cache.store(_key(), _stored())
    assert main(["gc", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{cache.relative(_key())}  (kept path outputs no kept run used)" in out
    assert "dry run: 0 directories, 1 kept path outputs:" in out
    assert main(["gc", "--data-dir", str(tmp_path), "--apply"]) == 0
    assert "removed 0 directories, 1 kept path outputs:" in capsys.readouterr().out
    assert not (tmp_path / cache.relative(_key())).exists()
