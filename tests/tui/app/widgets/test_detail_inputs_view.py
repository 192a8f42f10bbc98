"""The detail view's Inputs tab: every input of the case, at the element side by side shows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from detail_data import CREATED, RUN_ID, _metrics, _row, softmax_tensors
from detail_harness import Harness, sync
from rich.console import Console

from gero.query.slicing import broadcast_index
from gero_runner.schema import IDENTITY_COLUMNS, RunRecord
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import row_hash
from gero_runner.storage.store import DataRoot
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.widgets.inputs_view import InputsView
from gero_tui.app.widgets.tensor_view import TensorView


def _build(path: Path, fed: str = "") -> str:
    """One Softmax divergence whose case had two inputs: X like the output, and a [2,1,8]
    mask with a −1e4 entry (broadcast over the middle axis)."""
    actual, reference, _ = softmax_tensors()
    x = np.linspace(-3, 3, 80, dtype=np.float16).reshape(2, 5, 8)
    mask = np.zeros((2, 1, 8), np.float16)
    mask[1, 0, 0] = np.float16(-1e4)
    w = EvidenceWriter()
    w.add_bytes("model.onnx", b"not a model: hand-made evidence for tests")
    w.add_array("outputs/ort-all/output_0.npy", actual)
    w.add_array("outputs/onnx-reference/output_0.npy", reference)
    w.add_array("inputs/input_0.npy", x)
    w.add_array("inputs/input_1.npy", mask)
    w.add_json("case.json", {"inputs": {"X": "inputs/input_0.npy",
                                        "mask": "inputs/input_1.npy"}})
    artifact = w.write(path)
    row = _row(**_metrics(actual, reference, 5e-3, 5e-4), artifact_path=artifact,
               actual_file="outputs/ort-all/output_0.npy",
               reference_file="outputs/onnx-reference/output_0.npy",
               details=json.dumps({"inputs": fed} if fed else {}))
    row["observation_id"] = row_hash(row, IDENTITY_COLUMNS)
    record = RunRecord(
        run_id=RUN_ID, started_at=CREATED.isoformat(), finished_at=CREATED.isoformat(),
        status="complete", suite="synthetic", command_line="gero run (test data)", seed=7,
        jobs=1, threads=1, cpu_model="test", python_version="3.11", numpy_version="2",
        onnx_version="1.17.0", onnxruntime_version="1.20.0", tolerances={}, case_count=1,
        observation_count=1, new_observation_count=1, counts={"divergence": 1},
        wall_seconds=0.0, backend_seconds=0.0)
    DataRoot(path).write_run(record, [row], [
        {"run_id": RUN_ID, "observation_id": row["observation_id"], "actual_median_ms": 0.1,
         "reference_median_ms": 0.2, "seen_at": CREATED}])
    return str(row["observation_id"])


def _text(view: InputsView, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(view.render())
    return console.export_text()


def test_an_input_element_pairs_with_the_output_element_by_broadcasting() -> None:
    assert broadcast_index((1, 3, 6), (2, 5, 8), (2, 5, 8)) == (1, 3, 6)
    assert broadcast_index((1, 3, 6), (2, 5, 8), (2, 1, 8)) == (1, 0, 6)
    assert broadcast_index((1, 3, 6), (2, 5, 8), (8,)) == (6,)
    assert broadcast_index((1, 3, 6), (2, 5, 8), ()) == ()
    assert broadcast_index((1, 3, 6), (2, 5, 8), (5, 8, 3)) is None
    assert broadcast_index((1, 3), (4, 6), (2, 4, 6)) is None


@sync
@pytest.mark.slow
async def test_the_inputs_tab_shows_every_input_at_the_worst_element(tmp_path: Path) -> None:
    oid = _build(tmp_path, fed="X float16 [2,5,8]: uniform in [-3, 3] (--input-range)")
    app = Harness(tmp_path, "detail", oid)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(20):
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        # The side-by-side cursor is on the worst element: +inf against -inf at [1, 0, 0].
        tensors = screen.query_one(TensorView)
        assert tensors.cursor is not None and tensors.cursor.original_index == (1, 0, 0)
        await pilot.press("n")
        await pilot.pause()
        view = screen.query_one(InputsView)
        assert screen.focused is view
        assert [i.name for i in view.inputs] == ["X", "mask"]
        text = _text(view, 118)
        assert "inputs fed: X float16 [2,5,8]: uniform in [-3, 3] (--input-range)" in text
        assert "X float16 [2, 5, 8]" in text and "mask float16 [2, 1, 8]" in text
        assert "mask float16 [2, 1, 8]  min -10000 · max 0 · 2 distinct" in text
        assert "[1, 0, 0] = 0.03796  ■ fed to output [1, 0, 0]" in text
        await pilot.press("o")  # the mask: its cursor is on the broadcast element
        text = _text(view, 118)
        assert view.cursors[1].original_index == (1, 0, 0)
        assert "[1, 0, 0] = -10000  ■ fed to output [1, 0, 0]" in text
        # Moving in the side by side, then back: the inputs follow.
        await pilot.press("t", "down", "right", "n")
        moved = tensors.cursor.original_index
        assert moved != (1, 0, 0)
        assert view.cursors[0].original_index == moved
        assert view.cursors[1].original_index == (1, 0, moved[2])
        await pilot.press("right", "y", "s", "right_square_bracket")  # its own keys
        assert app.is_running


@sync
@pytest.mark.slow
async def test_a_case_without_recorded_inputs_says_so(tmp_path: Path) -> None:
    from detail_data import build

    ids = build(tmp_path)  # hand-made evidence without a case.json
    app = Harness(tmp_path, "detail", ids["divergence"])
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(20):
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
        await pilot.press("n")
        view = app.screen.query_one(InputsView)
        assert "No inputs:" in _text(view, 80) and "case.json is missing" in _text(view, 200)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.slow
def test_inputs_view_snapshot(snap_compare, tmp_path: Path,  # type: ignore[no-untyped-def]
                              size: tuple[int, int]) -> None:
    """The mask input at the worst element (`n o`)."""
    app = Harness(tmp_path, "detail", _build(tmp_path, fed="X float16 [2,5,8]: a ramp"))

    async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
        for _ in range(5):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    assert snap_compare(app, press=("n", "o"), terminal_size=size, run_before=settle)
