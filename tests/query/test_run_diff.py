"""Run diff: self-diff is clean; tightened/loosened tolerances give regressions/fixes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from query_helpers import small_run

from gero.query.diff import diff_runs
from gero_cli import main as gero
from gero_runner.errors import GeroError
from gero_runner.schema import RunRecord
from gero_runner.storage.hashing import row_hash
from gero_runner.storage.store import DataRoot
from gero_runner.tolerances import FLOAT_DTYPES, Tolerances

TIGHT = Tolerances.with_overrides(dict.fromkeys(FLOAT_DTYPES, 0.0),
                                  dict.fromkeys(FLOAT_DTYPES, 0.0))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    root = small_run(tmp_path_factory.mktemp("diff-data"), "base")
    small_run(root.path, "tight", tolerances=TIGHT)
    small_run(root.path, "reseeded", seed=7)
    return root


@pytest.mark.slow
def test_diff_of_a_run_with_itself_is_clean(root: DataRoot) -> None:
    report = diff_runs(root, "base", "base")
    counts = report.counts()
    assert not report.has_regressions and report.entries == ()
    assert counts["unchanged"] == counts["compatible_pairs"] > 0


def test_tightened_tolerance_gives_regressions(root: DataRoot) -> None:
    report = diff_runs(root, "base", "tight")
    regressions = report.of("regression")
    assert regressions and report.has_regressions
    assert all(e.base_result == "passed" and e.current_result != "passed"
               for e in regressions)
    assert all(e.tolerance_changed for e in regressions)
    assert not report.of("fix") and not report.of("incompatible")
    # Only non-bit-exact pairs can fail at zero tolerance; the rest stay unchanged.
    assert report.unchanged > 0


def test_loosened_tolerance_gives_fixes(root: DataRoot) -> None:
    forward, backward = diff_runs(root, "base", "tight"), diff_runs(root, "tight", "base")
    assert not backward.has_regressions
    assert {e.current_id for e in backward.of("fix")} == {e.base_id
                                                         for e in forward.of("regression")}


def test_other_inputs_have_no_compatible_baseline(root: DataRoot) -> None:
    report = diff_runs(root, "base", "reseeded")
    incompatible = report.of("incompatible")
    assert incompatible and not report.has_regressions and not report.of("fix")
    assert all("inputs changed" in e.why for e in incompatible)


def test_error_growth_beyond_the_factor_is_a_regression(root: DataRoot, tmp_path: Path) -> None:
    """A run whose errors are 100× the baseline's (still passing) regresses at factor 10."""
    import shutil

    copy = DataRoot(tmp_path / "data")
    shutil.copytree(root.path, copy.path)
    rows = pq.read_table(copy.run_dir("base") / "observations.parquet").to_pylist()
    grown = []
    for row in rows:
        if row["check"] == "agreement" and row["max_abs_error"] > 0:
            row = {**row, "max_abs_error": row["max_abs_error"] * 100, "run_id": "grown",
                   "reason": "synthetic error growth"}
            row["observation_id"] = row_hash(row, [c for c in row if c != "observation_id"])
        grown.append(row)
    record = RunRecord(**copy.read_run("base"))
    copy.write_run(replace(record, run_id="grown"), grown,
                   [{"run_id": "grown", "observation_id": r["observation_id"],
                     "actual_median_ms": 0.1, "reference_median_ms": 0.2,
                     "seen_at": r["created_at"]} for r in grown])
    report = diff_runs(copy, "base", "grown")
    regressions = report.of("regression")
    assert regressions and all("grew 100×" in e.why for e in regressions)
    assert not diff_runs(copy, "base", "grown", factor=1000).has_regressions


def test_cli_exit_codes_and_formats(root: DataRoot, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(root.path)]
    assert gero(["diff", "base", "base", *data]) == 0
    capsys.readouterr()
    assert gero(["diff", "base", "tight", *data, "--format", "json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["counts"]["regression"] == len(payload["regression"]) > 0
    assert gero(["diff", "base", "tight", *data, "--format", "md"]) == 1
    assert "## Regressions" in capsys.readouterr().out
    assert gero(["diff", "nope", "base", *data]) == 2
    with pytest.raises(GeroError, match="greater than 1"):
        diff_runs(root, "base", "base", factor=0.5)
