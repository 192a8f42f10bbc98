"""The explorer on a run that compares runtime releases (issue 42, item 7): the Release
column (a row's release; a ``releases`` row's after the reference release's), the ``v``
filter, and the detail view naming both releases. A run of one release per runtime keeps
its table as it was (no Release column)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from conftest import RUN_ID, settle, static_text, write_run
from table_helpers import open_table

from gero.query.source import open_source
from gero.query.table import COLUMNS, TableFilter, TableQuery
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.value_picker import ValuePickerScreen

RELEASE_RUN = "20261205-030000-abc123"
CHANGED = "1.32.0 vs 1.20.1"


def _row(backend: str, version: str, check: str, reference: str, reference_version: str,
         result: str, op: str) -> dict[str, Any]:
    key = f"{backend}/{check}/{op}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "run_id": RELEASE_RUN,
            "suite": "synthetic", "case_id": f"synthetic/{op}/[4,16]/float16", "op_type": op,
            "case_name": f"{op} 4x16", "check": check, "dtype": "float16",
            "input_shapes": "[4,16]", "output_name": "y", "backend": backend,
            "backend_version": version, "optimization": "basic", "threads": 1,
            "reference": reference, "reference_version": reference_version,
            "rtol": 1e-3, "atol": 1e-3, "max_abs_error": 4.9e-4 if result != "passed" else 0.0,
            "result": result, "arbiter": "actual" if result == "divergence" else "-",
            "reason": ("changed since ONNX Runtime 1.20.1, closer to float64"
                       if result == "divergence" else "within atol + rtol·|r|"),
            "actual_median_ms": 0.01, "reference_median_ms": 0.01, "repeats": 1, "seed": 0}


def release_rows() -> list[dict[str, Any]]:
    rows = []
    for op in ("Sqrt", "Relu"):
        rows.append(_row("onnxruntime==1.20.1", "1.20.1", "agreement", "onnx-reference",
                         "1.17.0", "passed", op))
        rows.append(_row("onnxruntime", "1.32.0", "agreement", "onnx-reference", "1.17.0",
                         "passed", op))
        rows.append(_row("onnxruntime", "1.32.0", "releases", "onnxruntime==1.20.1:basic",
                         "1.20.1", "divergence" if op == "Sqrt" else "passed", op))
    return rows


@pytest.fixture(scope="module")
def release_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("releases-explorer")
    write_run(root, RELEASE_RUN, release_rows())
    return root


def _shown_keys(app: GeroApp) -> list[str]:
    table = app.screen.table  # type: ignore[attr-defined]
    return [COLUMNS[i].key for i, _ in table.columns_for(120)]


def test_release_filter_and_widths_in_the_query_layer(release_root: Path) -> None:
    query = TableQuery(open_source(release_root, RELEASE_RUN))
    try:
        assert query.distinct("releases") == [("1.20.1", 2), ("1.32.0", 2), (CHANGED, 2)]
        chosen = TableFilter().with_values("releases", frozenset({CHANGED}))
        assert query.count(chosen) == 2
        assert "release: 1.32.0 vs 1.20.1" in chosen.describe()
        assert query.content().widths["release"] == len(CHANGED)
    finally:
        query.close()


def test_a_run_without_releases_has_no_release_width(data_root: Path) -> None:
    query = TableQuery(open_source(data_root, RUN_ID))
    try:
        assert query.content().widths["release"] == 0
    finally:
        query.close()


@pytest.mark.slow
async def test_release_column_and_v_filter(release_root: Path) -> None:
    app = GeroApp(release_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_table(pilot)
        await settle(pilot)
        keys = _shown_keys(app)
        assert keys.index("release") == keys.index("runtime") + 1
        releases = {r.cells["release"] for i in range(screen.table.row_count)
                    if (r := screen.table.row(i)) is not None}
        assert releases == {"1.20.1", "1.32.0", CHANGED}
        header = "".join(s.text for s in screen.table.render_line(0))
        assert "Release" in header
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, ValuePickerScreen)
        await pilot.press("down", "down", "space", "enter")  # the third value: the changes
        await settle(pilot)
        assert screen.table_filter.releases == frozenset({CHANGED})
        assert screen.table.row_count == 2
        rows = [screen.table.row(i) for i in range(2)]
        assert {r.cells["check"] for r in rows if r is not None} == {"releases"}


@pytest.mark.slow
async def test_no_release_column_without_releases(data_root: Path) -> None:
    app = GeroApp(data_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_table(pilot)
        await settle(pilot)
        assert "release" not in _shown_keys(app)
        assert "runtime" in _shown_keys(app)


@pytest.mark.slow
async def test_detail_names_both_releases(release_root: Path) -> None:
    changed = next(r for r in release_rows() if r["result"] == "divergence")
    app = GeroApp(release_root, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_table(pilot)
        app.open_detail(changed["observation_id"])
        await settle(pilot)
        text = static_text(app, "#detail-title")
        assert ("ONNX Runtime 1.32.0 against the reference release ONNX Runtime 1.20.1"
                in text), text


@pytest.mark.slow
def test_release_table_snapshot(snap_compare: Any, release_root: Path) -> None:
    """The Release column between Runtime and Path (a release's runtime in short, its
    version beside it) at 80 columns, where the other columns are cut and it is not."""
    assert snap_compare(GeroApp(release_root, screen="evaluations"), terminal_size=(80, 24),
                        run_before=settle)
