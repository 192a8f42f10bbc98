"""A model's bytes go to each worker once, not inside every part of its case: the pool
pickles a unit with its large bytes objects kept out (by content key), sends a worker those
it lacks before the unit, and the worker keeps only those its last unit referred to."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import rows_of, save

from gero_runner.execution import pool
from gero_runner.run import RunRequest, execute

MODEL = b"m" * (pool.BLOB_BYTES + 1)
OTHER = b"v" * pool.BLOB_BYTES


def test_a_unit_is_pickled_without_its_large_bytes_and_loaded_whole() -> None:
    blobs = pool._Blobs()
    unit = {"model": MODEL, "again": MODEL, "small": b"x" * 10}
    message, found = blobs.dumps((3, unit))
    assert len(message) < 1000 and list(found.values()) == [MODEL]
    held = {**found, "a key no unit refers to": OTHER}
    (index, loaded), kept = pool._loads(message, held)
    assert index == 3 and loaded == unit and loaded["model"] is loaded["again"]
    assert kept == found  # the worker keeps only what this unit referred to


class _Pipe:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)


def _worker() -> Any:
    worker: Any = object.__new__(pool._Worker)
    worker.conn, worker.queue, worker.held, worker.started = _Pipe(), deque(), set(), 0.0
    return worker


def test_a_worker_is_sent_each_large_object_once_while_its_units_refer_to_it() -> None:
    blobs, worker = pool._Blobs(), _worker()
    for item in ({"model": MODEL, "part": 1}, {"model": MODEL, "part": 2},
                 {"model": OTHER}, {"model": MODEL}):
        assert worker.submit(pool._Unit(0, item, 1.0, ""), *blobs.dumps((0, item)))
        worker.queue.clear()
    large = [m for m in worker.conn.sent if m.startswith(pool._BLOB)]
    # The model once for its first two units, the other file, the model again (the worker
    # dropped it when a unit no longer referred to it).
    assert [m[-len(MODEL):] == MODEL for m in large] == [True, False, True]
    assert len(worker.conn.sent) == 4 + 3


def test_a_unit_whose_large_objects_the_worker_lacks_is_not_sent_in_reserve() -> None:
    blobs, worker = pool._Blobs(), _worker()
    message, found = blobs.dumps((0, {"model": MODEL}))
    worker.queue.append("running")
    assert not worker.accepts(message, found)  # 1 MB would wait in a full pipe
    worker.held = set(found)
    assert worker.accepts(message, found)  # the worker has it: only the small unit goes


def _large_model(path: Path) -> str:
    """y = x · sum(W): W's 300,000 float32 (1.2 MB) make the model a large object."""
    w = numpy_helper.from_array(np.full(300_000, 1 / 300_000, np.float32), "W")
    return save(path, [helper.make_node("ReduceSum", ["W"], ["s"], keepdims=0),
                       helper.make_node("Mul", ["x", "s"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])


@pytest.mark.slow
def test_a_model_case_runs_with_its_bytes_sent_once_per_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str] = []
    units: list[str] = []
    submit = pool._Worker.submit

    def counted(self: Any, unit: Any, message: bytes, blobs: Any = None) -> bool:
        sent.extend(k for k in (blobs or {}) if k not in self.held)
        units.append(unit.label)
        return submit(self, unit, message, blobs)

    monkeypatch.setattr(pool._Worker, "submit", counted)
    model = _large_model(tmp_path / "large.onnx")
    record = execute(RunRequest(data_root=tmp_path / "data", models=[model], jobs=1,
                                repeats=1, backends=("onnxruntime",), run_id="r"))
    rows = rows_of(tmp_path / "data", record.run_id)
    assert rows and not [r for r in rows if r["result"] == "execution"], [
        r["reason"][:300] for r in rows if r["result"] == "execution"]
    # One worker: the model went once, for every part of the case.
    assert len(sent) == 1 and len(units) > 3, (sent, units)
