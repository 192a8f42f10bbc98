"""Runs named like git revisions: the newest, a whole id, or a unique prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gero_runner.errors import StoreError
from gero_runner.storage.runs import resolve_run

RUNS = ["models", "models-after", "ci-99", "ci-100"]


@pytest.mark.parametrize(("given", "wanted"), [
    ("models", "models"),  # a whole id that is also another's prefix
    ("models-a", "models-after"),
    ("ci-99", "ci-99"),
    ("ci-100", "ci-100"),
    (None, "ci-100"),  # the newest: the last of the ordered list
])
def test_a_whole_id_or_a_unique_prefix_names_one_run(given: str | None, wanted: str) -> None:
    assert resolve_run(Path("."), given, runs=RUNS) == wanted


@pytest.mark.parametrize(("given", "words"), [
    ("ci-", "is ambiguous: ci-99, ci-100"),
    ("mod", "is ambiguous: models, models-after"),
    ("nope", "no run matches 'nope'"),
])
def test_an_ambiguous_or_unknown_name_is_one_sentence(given: str, words: str) -> None:
    with pytest.raises(StoreError, match=None) as caught:
        resolve_run(Path("."), given, runs=RUNS)
    assert words in str(caught.value) and "\n" not in str(caught.value)
