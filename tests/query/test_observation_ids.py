"""Observation ids by prefix, like git: unique, ambiguous (candidates listed), unknown, bad."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest
from query_helpers import small_run

from gero_runner.errors import StoreError
from gero_runner.storage import reader as ids
from gero_runner.storage.reader import resolve_observation
from gero_runner.storage.runs import resolve_run
from gero_runner.storage.store import DataRoot


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    root = small_run(tmp_path_factory.mktemp("ids-data"), "20260101-000000-aaaaaa")
    small_run(root.path, "20260101-000000-aaaabb", seed=1)
    return root


def _ids(root: DataRoot) -> list[str]:
    return [i for f in root.observation_files()
            for i in pq.read_table(f).column("observation_id").to_pylist()]


@pytest.mark.slow
def test_unique_prefix_gives_the_row(root: DataRoot) -> None:
    full = _ids(root)[0]
    assert resolve_observation(root, full[:12])["observation_id"] == full
    assert resolve_observation(root, full.upper()[:12])["observation_id"] == full


def test_ambiguous_prefix_lists_candidates(root: DataRoot,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ids, "MIN_PREFIX", 1)
    first, _ = Counter(i[0] for i in _ids(root)).most_common(1)[0]
    with pytest.raises(StoreError, match="ambiguous") as info:
        resolve_observation(root, first)
    assert "synthetic/Exp" in str(info.value)


@pytest.mark.parametrize("prefix,needle", [("zzzz", "bad observation id"),
                                           ("ab", "at least 4"),
                                           ("'; DROP", "bad observation id")])
def test_bad_prefixes(root: DataRoot, prefix: str, needle: str) -> None:
    with pytest.raises(StoreError, match=needle):
        resolve_observation(root, prefix)


def test_unknown_prefix(root: DataRoot) -> None:
    known = {i[:4] for i in _ids(root)}
    prefix = next(f"{n:04x}" for n in range(1 << 16) if f"{n:04x}" not in known)
    with pytest.raises(StoreError, match="no observation id starts with"):
        resolve_observation(root, prefix)


def test_run_prefixes(root: DataRoot) -> None:
    assert resolve_run(root, "20260101-000000-aaaab") == "20260101-000000-aaaabb"
    with pytest.raises(StoreError, match="ambiguous"):
        resolve_run(root, "20260101-000000-aaaa")
    with pytest.raises(StoreError, match="no run matches"):
        resolve_run(root, "1999")
