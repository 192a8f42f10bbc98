"""Pilot tests of the evaluation detail: fields, histogram, worst elements, slicing, replay
(verdict in place, failures that never crash), and the per-operation histogram."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest
from conftest import gero_run, static_text
from detail_data import build
from detail_harness import Harness, sync
from rich.console import Console
from textual.widgets import ContentSwitcher, DataTable

import gero
from gero_runner.storage.artifacts import PACKED, is_packed
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.op_histogram import OpHistogramScreen
from gero_tui.app.widgets.histogram import Histogram
from gero_tui.app.widgets.tensor_view import TensorView
from gero_tui.app.widgets.worst_list import WorstList


def _text(app: Harness, selector: str) -> str:
    return static_text(app, selector, width=200)


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.fixture()
def data(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return tmp_path, build(tmp_path)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (tiny) run, so that replay re-executes an actual model."""
    root = tmp_path_factory.mktemp("real")
    done = gero_run(root, "--ops", "Relu", "--dtypes", "float32", "--limit", "1")
    assert done.returncode == 0, done.stderr
    return root


@sync
async def test_detail_fields_histogram_and_worst(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["divergence"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        title = _text(app, "#detail-title")
        # The row holds +inf against -inf: a non-finite mismatch is a contract issue.
        assert "Softmax" in title and "contract_issue" in title
        assert "closer to the reference side (onnx-reference)" in title
        # It opens on the histogram.
        assert app.screen.query_one("#detail-tabs", ContentSwitcher).current == "histogram"
        await pilot.press("f")
        fields = _text(app, "#fields-table")
        for expected in ("backend_version", "1.20.0", "session_settings",
                         "CPUExecutionProvider", "min_atol", "artifact_path", "seed"):
            assert expected in fields
        await pilot.press("h")
        counts = _text(app, "#histogram-counts")
        assert "3 outside tolerance" in counts and "inf mismatches 1" in counts
        chart = app.screen.query_one("#abs-histogram", Histogram).chart
        assert chart is not None and chart.marker_label.startswith("tolerance")
        assert any(b.beyond for b in chart.bars)
        worst = app.screen.query_one("#worst", WorstList)
        assert len(worst.rows) == 4 and worst.has_focus
        assert worst.rows[1][0] == "[1, 3, 6]" and worst.rows[0][1] == "OUT"


@sync
@pytest.mark.slow
async def test_slices_and_jump_to_worst(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["divergence"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        await pilot.press("t")
        view = app.screen.query_one(TensorView)
        assert view.has_focus and view.cursor is not None
        assert view.cursor.original_index == (1, 0, 0)  # the inf mismatch ranks first
        # The 5x8 plane shows more of itself transposed in this room: rows along axis 2.
        assert (view.cursor.row_axis, view.cursor.col_axis) == (2, 1)
        await pilot.press("down", "down", "right")
        assert view.cursor.original_index == (1, 1, 2)
        await pilot.press("left_square_bracket")
        assert view.cursor.original_index == (0, 1, 2)
        await pilot.press("y")  # rows along axis 0 now, chosen: the room no longer decides
        assert (view.cursor.row_axis, view.cursor.col_axis) == (0, 1)
        await pilot.press("w")
        assert view.cursor.original_index == (1, 0, 0)
        # Enter on the second worst element shows it side by side.
        await pilot.press("h", "down", "enter")
        assert view.cursor.original_index == (1, 3, 6)
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(view.render())
        assert "OUT OF TOLERANCE" in console.export_text()


@sync
async def test_contract_shows_both_sides(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["contract"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        view = app.screen.query_one(TensorView)
        # Named by the law (evidence files are shared between rows, their names no guide).
        assert view.labels == ("concat(f(parts))", "f(full batch)")
        assert view.cursor is not None and view.cursor.original_index == (2, 1)


@pytest.mark.parametrize("details,check,expected", [
    ({"law": "threads", "threads": [1, 8]}, "contract:threads", ("8 threads", "1 thread")),
    ({"law": "probability", "row_length": 5}, "contract:probability", ("row sums", "1")),
    ({"law": "probability"}, "contract:probability", ("output", "output clipped to [0, 1]")),
    ({"actual_label": "left", "reference_label": "right"}, "contract:partition",
     ("left", "right")),
    ({}, "contract:unknown_law", ("contracts/x/a", "contracts/x/b")),
])
def test_contract_side_labels(details: dict[str, object], check: str,
                              expected: tuple[str, str]) -> None:
    import json

    import numpy as np

    from gero.query.detail import DetailRecord
    from gero.query.tensors import Evidence
    from gero_tui.app.screens.detail import contract_labels

    obs = DetailRecord({"check": check, "details": json.dumps(details),
                        "backend": "onnxruntime"})
    x = np.zeros(2, np.float32)
    ev = Evidence(Path("."), x, x, None, "contracts/x/a.npy", "contracts/x/b.npy", 0, 0)
    assert contract_labels(obs, ev) == expected


@sync
async def test_execution_row_explains_missing_evidence(
        data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["execution"])
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        assert "kept no tensors" in _text(app, "#histogram-counts")
        # Nothing to draw: the screen shows the recorded fields instead.
        assert app.screen.query_one("#detail-tabs", ContentSwitcher).current == "fields"
        assert "observation_id" in _text(app, "#fields-table")
        await pilot.press("r")
        await _settle(pilot)
        assert "nothing to replay" in _text(app, "#detail-verdict")


@sync
@pytest.mark.slow
async def test_replay_shows_verdict_in_place(real_run: Path) -> None:
    from gero.query.source import open_source

    source = open_source(real_run)
    oid = source.query("SELECT observation_id FROM obs WHERE artifact_path <> '' "
                       "AND \"check\" = 'agreement' LIMIT 1")[0][0]
    app = Harness(real_run, "detail", oid)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        await pilot.press("r")
        await _settle(pilot)
        verdict = _text(app, "#detail-verdict")
        assert "✓ reproduced bit-exact" in verdict and "max |replayed − stored| = 0" in verdict


@sync
async def test_failing_replay_does_not_crash(real_run: Path, tmp_path: Path) -> None:
    import shutil

    from gero.query.source import open_source

    copy = tmp_path / "tampered"
    shutil.copytree(real_run, copy)
    source = open_source(copy)
    oid, rel, actual = source.query(
        "SELECT observation_id, artifact_path, actual_file FROM obs "
        "WHERE artifact_path <> '' AND actual_file <> '' LIMIT 1")[0]
    # Outputs are packed into tensors.npz; flipping its last byte tampers the evidence.
    target = copy / rel / (PACKED if is_packed(actual) else actual)
    data = target.read_bytes()
    target.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    app = Harness(copy, "detail", oid)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("r")
        await _settle(pilot)
        verdict = _text(app, "#detail-verdict")
        assert "replay failed" in verdict and "SHA-256 mismatch" in verdict
        assert app.is_running and isinstance(app.screen, DetailScreen)
        shutil.rmtree(copy / rel)
        await pilot.press("r")
        await _settle(pilot)
        assert "missing" in _text(app, "#detail-verdict")


@sync
async def test_copy_case_id_and_replay_command(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["divergence"])
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("c")
        assert app.clipboard == "synthetic/Softmax/3d/float16"
        await pilot.press("C")
        # The command `gero findings` and the report print (one spelling): absolute, and
        # replaying this observation alone.
        with gero.open_run(data_dir=root) as run:
            assert app.clipboard == run.replay_command(ids["divergence"])
        words = shlex.split(app.clipboard)
        assert words[:2] == ["gero", "replay"] and Path(words[2]).is_absolute()
        assert words[3:] == ["--observation", ids["divergence"]]


@sync
@pytest.mark.slow
async def test_per_operation_histogram(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["divergence"])
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("g")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpHistogramScreen) and screen.histogram is not None
        assert [(g.optimization, g.dtype) for g in screen.histogram.groups] == [
            ("all", "float16"), ("all", "float32")]
        groups = screen.query_one("#op-groups", DataTable)
        assert groups.row_count == 2
        await pilot.press("down")
        chart = screen.query_one("#op-bars", Histogram).chart
        assert chart is not None and chart.title.startswith("all · float32")
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)


@pytest.mark.parametrize("size,auto", [((120, 40), "side"), ((80, 24), "side"),
                                       ((36, 24), "stacked"), ((36, 14), "actual")])
@sync
async def test_side_by_side_layout_follows_the_room_and_l_cycles(
        data: tuple[Path, dict[str, str]], size: tuple[int, int], auto: str) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["divergence"])
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        await pilot.press("t")
        view = app.screen.query_one(TensorView)
        assert view.current_layout() == auto
        seen = []
        for _ in range(5):
            await pilot.press("l")
            seen.append(view.current_layout())
            console = Console(width=size[0], record=True, file=io.StringIO())
            console.print(view.render())
            shown = console.export_text()
            # Every layout still marks the element under the cursor and names its panes.
            assert "OUT OF TOLERANCE" in shown
            if seen[-1] in ("side", "stacked"):
                # (side by side in 36 columns: actual and reference, the difference below)
                assert "ort-all" in shown
                assert "|difference|" in shown or (seen[-1] == "side" and size[0] < 80)
            else:
                assert f"{seen[-1]}: " in shown
        assert sorted(seen) == sorted(["side", "stacked", "actual", "reference", "difference"])


@sync
async def test_tab_bar_click_and_bit_exact_worst_list(data: tuple[Path, dict[str, str]]) -> None:
    root, ids = data
    app = Harness(root, "detail", ids["passed"])
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        worst = app.screen.query_one("#worst", WorstList)
        assert worst.rows == [] and "no element differs" in worst.empty
        await pilot.click("#detail-tab-bar", offset=(3, 0))  # on "Fields"
        assert app.screen.query_one("#detail-tabs", ContentSwitcher).current == "fields"
        assert "observation_id" in _text(app, "#fields-table")
