"""Export: Parquet round-trips the query; CSV, JSON and the Markdown report; bad data roots."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from query_helpers import small_run

from gero.query.export import export_rows, select_rows
from gero_cli import main as gero
from gero_runner.errors import GeroError
from gero_runner.storage.reader import open_run
from gero_runner.storage.store import DataRoot

WHERE = "dtype = 'float32' AND \"check\" = 'agreement'"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    return small_run(tmp_path_factory.mktemp("export-data"), "base")


@pytest.mark.slow
def test_parquet_export_reads_back_equal_to_the_query(root: DataRoot, tmp_path: Path) -> None:
    view = open_run(root)
    result = export_rows(view, WHERE, "parquet", tmp_path / "rows.parquet")
    expected = select_rows(view, WHERE)
    back = pq.read_table(result.path)
    assert result.rows == expected.num_rows > 0
    assert back.equals(expected)
    assert set(back.column("dtype").to_pylist()) == {"float32"}
    total = view.query("SELECT count(*) FROM obs")[0][0]
    assert expected.num_rows < total


def test_csv_and_json_hold_the_same_rows(root: DataRoot, tmp_path: Path) -> None:
    view = open_run(root)
    expected = select_rows(view, WHERE).column("observation_id").to_pylist()
    export_rows(view, WHERE, "csv", tmp_path / "rows.csv")
    export_rows(view, WHERE, "json", tmp_path / "rows.json")
    assert pacsv.read_csv(tmp_path / "rows.csv").column("observation_id").to_pylist() == expected
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [r["observation_id"] for r in rows] == expected


def test_selected_ids_only(root: DataRoot, tmp_path: Path) -> None:
    view = open_run(root)
    ids = select_rows(view).column("observation_id").to_pylist()[:3]
    result = export_rows(view, None, "parquet", tmp_path / "sel.parquet", ids=ids)
    assert sorted(pq.read_table(result.path).column("observation_id").to_pylist()) == sorted(ids)


def test_markdown_report_sections(root: DataRoot, tmp_path: Path) -> None:
    view = open_run(root)
    export_rows(view, None, "md", tmp_path / "report.md")
    text = (tmp_path / "report.md").read_text()
    for heading in ("# gero report: run base", "## Run", "## Result classes", "## Operations",
                    "## Worst observations"):
        assert heading in text
    assert "| Exp |" in text and "onnxruntime_version" in text


def test_cli_export_and_rejected_filter(root: DataRoot, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.parquet"
    assert gero(["export", "--data-dir", str(root.path), "--where", WHERE, "-o", str(out)]) == 0
    assert pq.read_table(out).num_rows > 0
    bad = tmp_path / "bad.csv"
    assert gero(["export", "--data-dir", str(root.path), "--where",
                 "1=1; COPY obs TO '/tmp/pwn.csv'", "-o", str(bad)]) == 2
    assert "bad --where filter" in capsys.readouterr().err
    assert not bad.exists()
    with pytest.raises(GeroError, match="unknown export format"):
        export_rows(open_run(root), None, "xlsx", tmp_path / "x.xlsx")


@pytest.mark.slow
def test_corrupt_parquet_is_named_and_skipped(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = small_run(tmp_path / "data", "good")
    small_run(tmp_path / "data", "other", seed=1)
    broken = root.run_dir("other") / "observations.parquet"
    broken.write_bytes(broken.read_bytes()[:100])  # truncated
    out = tmp_path / "x.json"
    # The good run reads its own file alone: the broken one is not needed, nor named.
    assert gero(["export", "--data-dir", str(root.path), "--run", "good", "-o", str(out)]) == 0
    assert str(broken) not in capsys.readouterr().err
    assert json.loads(out.read_text())
    # The broken run falls back to the other runs' files, which hold none of its
    # observations (another seed): an error naming the file, not an empty export.
    out.unlink()
    assert gero(["export", "--data-dir", str(root.path), "--run", "other", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "none can be read" in err
    assert not out.exists()


def test_report_says_it_lists_the_worst_of_all_and_shows_the_filter_as_written(
        root: DataRoot, tmp_path: Path) -> None:
    view = open_run(root)
    where = "result <> 'passed' OR dtype = 'float16'"
    result = export_rows(view, where, "md", tmp_path / "report.md")
    text = (tmp_path / "report.md").read_text()
    assert result.rows > 25
    assert f"## Worst observations: the 25 worst of {result.rows}" in text
    assert f"observations matching `{where}`" in text
    assert "with parameters" not in text


def test_csv_says_the_path_and_the_run_it_was_exported_from(root: DataRoot, tmp_path: Path
                                                            ) -> None:
    import csv

    view = open_run(root)
    export_rows(view, None, "csv", tmp_path / "rows.csv")
    with (tmp_path / "rows.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["exported_from_run"] == view.run_id for r in rows)
    assert {r["path"] for r in rows if r["optimization"] == "-"} <= {"reference"}
    assert all(r["path"] == r["optimization"] for r in rows if r["optimization"] != "-")
