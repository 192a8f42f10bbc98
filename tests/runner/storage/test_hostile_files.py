"""Corrupt, foreign and duplicated files in a data root: every reader names what it skipped
and why, the same way in every command, and never shows a traceback or a row twice."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gero_cli import main
from gero_runner.errors import StoreError
from gero_runner.schema import OBSERVATION_COLUMNS
from gero_runner.storage import reader

OLD, NEW = "20250101-a", "20250102-b"
COMMANDS: list[list[str]] = [["summary"], ["export", "-o", "{tmp}/x.csv"], ["diff", OLD, NEW],
                             ["findings"]]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base")
    for run_id, ops in ((OLD, "Exp,Relu"), (NEW, "Exp,Relu,Sigmoid")):
        # Exit status 1: the Relu cases have findings.
        assert main(["run", "--data-dir", str(root), "--ops", ops, "--dtypes", "float32",
                     "--repeats", "1", "--jobs", "1", "--no-contracts", "--run-id", run_id]) == 1
    return root


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(change(pq.read_table(path)), path)


def _string_errors(t: pa.Table) -> pa.Table:
    i = t.schema.get_field_index("max_abs_error")
    return t.set_column(i, "max_abs_error", pa.array([str(x) for x in t.column(i).to_pylist()]))


def _corrupt_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(64, len(data) // 5, 53):  # inside the data pages, far from the footer
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


OLD_OBS = f"runs/{OLD}/observations.parquet"
def _junk_run_directory(path: Path) -> None:
    path.parent.mkdir()
    path.write_text("{}")


# What each damage returns (a byte count, say) is ignored.
HOSTILE: dict[str, tuple[str, Callable[[Path], object], str]] = {
    "no sightings": (f"runs/{NEW}/sightings.parquet", lambda p: p.unlink(), ""),
    "junk sightings": (f"runs/{NEW}/sightings.parquet", lambda p: p.write_bytes(b"PAR1junk"),
                       "skipped, not a readable Parquet file"),
    "no observation_id": (OLD_OBS, lambda p: _rewrite(p, lambda t: t.drop(["observation_id"])),
                          "skipped, it has no observation_id column"),
    "int64 observation_id": (OLD_OBS, lambda p: _rewrite(p, lambda t: t.set_column(
        0, "observation_id", pa.array(range(t.num_rows), pa.int64()))),
        "skipped, column observation_id is BIGINT, expected VARCHAR"),
    "string max_abs_error": (OLD_OBS, lambda p: _rewrite(p, _string_errors),
                             "skipped, column max_abs_error is VARCHAR, expected FLOAT"),
    "corrupt data pages": (OLD_OBS, _corrupt_pages, "skipped, its data does not decode"),
    "run.json a list": (f"runs/{OLD}/run.json", lambda p: p.write_text("[1, 2]"),
                        "not a JSON object"),
    "run.json wrong types": (f"runs/{OLD}/run.json", lambda p: p.write_text(json.dumps(
        {**json.loads(p.read_text()), "counts": "many", "case_count": "x", "status": 5})),
        "wrong type for status, case_count, counts"),
    "junk run directory": ("runs/zzzz-junk/run.json", _junk_run_directory,
                           "not a gero run record"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.slow
def test_every_command_names_the_file_it_skipped(name: str, base: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "data"
    shutil.copytree(base, root)
    relative, damage, why = HOSTILE[name]
    damage(root / relative)
    for command in COMMANDS:
        args = [a.format(tmp=tmp_path) for a in command]
        if args[0] == "summary" and name.startswith("run.json"):
            args += ["--run", OLD]
        code = main([*args, "--data-dir", str(root)])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if args[0] == "diff" and relative == OLD_OBS:
            # Every observation of the older run is in that file: nothing to compare with.
            assert code == 2 and "none can be read" in err and why in err, (args, err)
            continue
        assert code in (0, 1), (args, err)  # diff says 1 for regressions
        reads_it = not ((name.startswith("run.json") and args[0] in ("export", "findings"))
                        or (name.startswith("junk run") and args[0] == "diff"))
        if why and reads_it:
            assert f"gero: warning: {root / relative}: " in err and why in err, (args, err)


@pytest.mark.parametrize("damage", ["deleted", "junk"])
def test_a_run_whose_observations_are_all_gone_is_an_error_not_a_clean_run(
        damage: str, base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "data"
    shutil.copytree(base, root)
    observations = root / OLD_OBS  # the first run: its own file holds all it observed
    if damage == "deleted":
        observations.unlink()
    else:
        observations.write_bytes(b"PAR1junk")
    recorded = json.loads((root / "runs" / OLD / "run.json").read_text())["observation_count"]
    # Read as empty, the run would list 0 findings and exit 0 ("clean").
    for command in (["summary"], ["findings"], ["export", "-o", str(tmp_path / "x.csv")]):
        assert main([*command, "--data-dir", str(root), "--run", OLD]) == 2, command
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert (f"run {OLD} recorded {recorded:,} observations but none can be read: "
                f"{observations}") in err, err
    with pytest.raises(StoreError, match="none can be read"):
        reader.open_run(root, OLD)


@pytest.mark.slow
def test_observations_stored_twice_are_read_once(base: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "data"
    shutil.copytree(base, root)
    # What two concurrent runs of an older gero left: NEW's file stores OLD's rows again.
    old = pq.read_table(root / OLD_OBS)
    new_file = root / "runs" / NEW / "observations.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(new_file), old]), new_file)
    # A later run sights them: it must see each once.
    assert main(["run", "--data-dir", str(root), "--ops", "Exp,Relu", "--dtypes", "float32",
                 "--repeats", "1", "--jobs", "1", "--no-contracts", "--run-id", "c"]) == 1
    sighted = pq.read_table(root / "runs" / "c" / "sightings.parquet").num_rows
    assert sighted == old.num_rows
    capsys.readouterr()
    assert main(["export", "--data-dir", str(root), "--run", "c", "-o",
                 str(tmp_path / "x.csv")]) == 0
    captured = capsys.readouterr()
    assert f"wrote {sighted} observations" in captured.out
    assert f"{old.num_rows} observations are stored in more than one run's file" in captured.err
    with reader.open_run(root, "c") as run:
        assert run.query("SELECT count(*), count(DISTINCT observation_id) FROM obs")[0] == (
            sighted, sighted)


def test_the_reader_types_match_the_schema() -> None:
    families = {"string": "VARCHAR", "double": "FLOAT", "int64": "INTEGER",
                "int32": "INTEGER", "timestamp[us, tz=UTC]": "TIMESTAMP"}
    schema = {c.name: families.get(str(c.type)) for c in OBSERVATION_COLUMNS}
    for name, family in reader.OBSERVATION_TYPES.items():
        assert schema[name] == family, name
    assert duckdb  # the reader's checks run in DuckDB
