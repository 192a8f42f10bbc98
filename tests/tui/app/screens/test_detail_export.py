"""Export from the explorer: select two rows and write each format, export with no selection
(every matching row), and bundle the current evaluation."""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from detail_data import build
from detail_harness import Harness, sync
from textual.widgets import Input, Static

from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.export_dialog import ExportDialog


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(10):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


@contextlib.asynccontextmanager
async def _opened(tmp_path: Path, size: tuple[int, int] = (120, 40), key: str = "",
                  detail: str = "") -> AsyncIterator[tuple[GeroApp | Harness, Any,
                                                           dict[str, str]]]:
    """A fresh data root in the explorer's evaluations screen, or in the detail of its
    ``detail`` observation (divergence, passed...), settled, then ``key`` pressed (``e``
    opens the export dialog, ``b`` the bundle's); (app, pilot, the root's ids by name)."""
    root = tmp_path / "data"
    ids = build(root)
    app = Harness(root, "detail", ids[detail]) if detail else GeroApp(root, screen="evaluations")
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        if key:
            await pilot.press(key)
            await _settle(pilot)
        yield app, pilot, ids


def _status(app: GeroApp | Harness) -> str:
    return str(app.screen.query_one("#export-status", Static).content)


async def _export(pilot, fmt: str, path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = pilot.app.screen
    assert isinstance(dialog, ExportDialog)
    await pilot.click(f"#format-{fmt}")
    dialog.query_one("#export-path", Input).value = str(path)
    dialog.query_one("#export-path", Input).focus()
    await pilot.press("enter")
    await _settle(pilot)


def _read(fmt: str, path: Path) -> list[str]:
    """Observation ids in an exported file."""
    if fmt == "csv":
        with path.open() as f:
            return [r["observation_id"] for r in csv.DictReader(f)]
    if fmt == "parquet":
        return list(pq.read_table(path).column("observation_id").to_pylist())
    if fmt == "json":
        return [r["observation_id"] for r in json.loads(path.read_text())]
    text = path.read_text()
    assert text.startswith("# gero report")
    return [line for line in text.splitlines() if "2 observations" in line]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json", "md"])
@sync
@pytest.mark.slow
async def test_select_two_rows_and_export(tmp_path: Path, fmt: str) -> None:
    async with _opened(tmp_path) as (app, pilot, _):
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        first = screen.current_observation_id
        await pilot.press("space", "down")  # space selects, the cursor stays
        second = screen.current_observation_id
        assert first is not None and second is not None
        await pilot.press("space")
        await _settle(pilot)
        await pilot.press("e")
        await _settle(pilot)
        out = tmp_path / f"two.{fmt}"
        await _export(pilot, fmt, out)
        assert f"wrote 2 rows as {fmt} to {out}" in _status(app)
        ids = _read(fmt, out)
        if fmt == "md":
            assert ids  # "2 observations (…, 2 selected)."
        else:
            assert sorted(ids) == sorted([first, second])


@sync
@pytest.mark.slow
async def test_export_without_selection_writes_every_matching_row(tmp_path: Path) -> None:
    async with _opened(tmp_path, (80, 24), key="e") as (app, pilot, ids):
        out = tmp_path / "all.json"
        await _export(pilot, "json", out)
        assert "wrote 4 rows" in _status(app)
        assert sorted(_read("json", out)) == sorted(ids.values())


@sync
@pytest.mark.slow
async def test_export_bundle_of_current_evaluation(tmp_path: Path) -> None:
    async with _opened(tmp_path, (80, 24), key="b", detail="divergence") as (app, pilot, _):
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        path = tmp_path / "case.tar.gz"
        dialog.query_one("#export-path", Input).value = str(path)
        await pilot.click("#export-bundle")
        await _settle(pilot)
        assert f"wrote bundle {path}" in _status(app) and "gero replay" in _status(app)
        assert path.is_file() and path.stat().st_size > 0


@sync
@pytest.mark.slow
async def test_export_to_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    async with _opened(tmp_path, (80, 24), key="e", detail="passed") as (app, pilot, _):
        await _export(pilot, "csv", tmp_path)
        assert "is a directory" in _status(app)
        assert isinstance(app.screen, ExportDialog)


@sync
@pytest.mark.slow
async def test_enter_on_the_format_chooses_it_and_enter_on_the_path_writes(
        tmp_path: Path) -> None:
    """Enter on the format radio wrote at once, in the format shown first (CSV)."""
    from textual.widgets import RadioSet

    async with _opened(tmp_path, key="e") as (app, pilot, _):
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert isinstance(dialog.focused, RadioSet), "the format is chosen first"
        box = dialog.query_one("#export-path", Input)
        out = tmp_path / "out"
        box.value = str(out / "rows.csv")
        await pilot.press("right", "enter")  # Parquet
        await _settle(pilot)
        assert dialog.format == "parquet"
        assert isinstance(dialog.focused, Input) and dialog.focused.id == "export-path"
        assert not out.exists() and "wrote" not in _status(app)
        assert box.value.endswith("rows.parquet")
        out.mkdir()
        await pilot.press("enter")
        await _settle(pilot)
        assert (out / "rows.parquet").is_file() and "wrote 4 rows as parquet" in _status(app)


@sync
@pytest.mark.slow
async def test_a_second_export_to_the_same_file_asks_first(tmp_path: Path) -> None:
    async with _opened(tmp_path, key="e") as (app, pilot, _):
        out = tmp_path / "rows.json"
        out.write_text("mine")
        await _export(pilot, "json", out)
        assert out.read_text() == "mine"
        assert "already there: enter again to overwrite" in _status(app)
        await pilot.press("enter")
        await _settle(pilot)
        assert "wrote 4 rows" in _status(app) and out.read_text() != "mine"


@sync
@pytest.mark.slow
async def test_a_failed_export_says_so_briefly(tmp_path: Path) -> None:
    async with _opened(tmp_path, key="e") as (app, pilot, _):
        blocker = tmp_path / "file"
        blocker.write_text("")
        deep = blocker / ("x" * 200) / ("y" * 200) / ("z" * 200) / "rows.csv"
        await _export(pilot, "csv", deep)
        status = _status(app)
        assert status.startswith("✗ not written: ") and "writing" not in status
        assert len(status) <= 200, status


@sync
@pytest.mark.slow
async def test_rows_are_exported_in_the_table_order(tmp_path: Path) -> None:
    async with _opened(tmp_path) as (app, pilot, _):
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        from gero.query.table import TableSort

        screen.sort = TableSort("max_abs_error", descending=True)
        await _settle(pilot)
        shown = [screen.table.row(i).observation_id  # type: ignore[union-attr]
                 for i in range(screen.table.row_count)]
        await pilot.press("e")
        await _settle(pilot)
        out = tmp_path / "sorted.json"
        await _export(pilot, "json", out)
        assert _read("json", out) == shown


@sync
async def test_an_export_into_the_data_root_is_refused(tmp_path: Path) -> None:
    """A file written over the store's own would lose the run's observations (issue 45)."""
    async with _opened(tmp_path, key="e") as (app, pilot, _):
        (target,) = (tmp_path / "data" / "runs").glob("*/observations.parquet")
        before = target.read_bytes()
        await _export(pilot, "parquet", target)
        await pilot.press("enter")  # past "already there: enter again to overwrite"
        await _settle(pilot)
        assert "inside the data root" in _status(app)
        assert target.read_bytes() == before
