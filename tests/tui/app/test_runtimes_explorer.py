"""The explorer on a run with two runtimes: per-operation bars per runtime, the runtime in
the table, and the `b` key filtering by runtime (tract's extra: skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import settle

from gero_runner import backends
from gero_runner.run import RunRequest, execute
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.value_picker import ValuePickerScreen
from gero_tui.app.widgets.operation_bars import OperationBars


@pytest.fixture(scope="module")
def two_runtimes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not backends.get("tract").installed():
        pytest.skip(f"tract is not installed ({backends.get('tract').install_hint()})")
    root = tmp_path_factory.mktemp("two-runtimes")
    execute(RunRequest(data_root=root, ops=["Relu", "Exp"], dtypes=["float32"], repeats=1,
                       checks=(), backends=("onnxruntime", "tract")))
    return root


@pytest.mark.slow
async def test_bars_per_operation_and_runtime_open_their_rows(two_runtimes: Path) -> None:
    app = GeroApp(two_runtimes)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        bars = app.screen.query_one(OperationBars)
        ids = [bars.get_option_at_index(i).id for i in range(bars.option_count)]
        assert "Exp\ttract" in ids and "Exp\tonnxruntime" in ids and "Relu\tonnx-reference" in ids
        bars.highlighted = ids.index("Relu\ttract")
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.table_filter.backends == frozenset({"tract"})
        assert screen.table_filter.operations == frozenset({"Relu"})
        rows = [screen.table.row(i) for i in range(screen.table.row_count)]
        cells = [str(c) for r in rows if r is not None for c in r.cells.values()]
        assert any(c.startswith("tract:") for c in cells)  # the runtime is in the table
        assert not any(c in ("all", "disable_all") for c in cells)


@pytest.mark.slow
async def test_b_key_filters_by_runtime(two_runtimes: Path) -> None:
    app = GeroApp(two_runtimes, screen="evaluations")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert isinstance(app.screen, ValuePickerScreen)
        await pilot.press("space", "enter")  # the first value, alphabetically: onnx-reference
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EvaluationsScreen)
        assert screen.table_filter.backends == frozenset({"onnx-reference"})


async def test_timing_table_has_a_column_per_runtime(two_runtimes: Path) -> None:
    from gero_tui.app.widgets.timing_table import TimingTable

    app = GeroApp(two_runtimes)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TimingTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels == ["Operation", "Pairs", "ort", "tract", "Reference"]
        row = [str(c).strip() for c in table.get_row("Relu")]
        assert all(float(ms) > 0 for ms in row[2:]), row  # each runtime timed Relu
