"""Our .npy writer is byte-identical to np.save and loads back without pickles."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from gero_runner.storage.hashing import load_npy, npy_bytes


@pytest.mark.parametrize("x", [
    np.arange(6, dtype=np.float16).reshape(2, 3),
    np.zeros((0, 4)),
    np.array(3.5),
    np.ones((2, 3, 4), dtype=bool),
    np.arange(10, dtype=np.int64)[::2],
    np.asfortranarray(np.ones((3, 2), dtype=np.float32)),
    np.array([np.nan, -0.0, np.inf], dtype=np.float64),
])
def test_same_bytes_as_np_save(x: np.ndarray) -> None:
    buffer = io.BytesIO()
    # C order, rank kept (np.ascontiguousarray would save a scalar as [1])
    np.save(buffer, np.array(x, order="C"), allow_pickle=False)
    assert npy_bytes(x) == buffer.getvalue()
    back = load_npy(npy_bytes(x))
    assert back.shape == x.shape
    np.testing.assert_array_equal(back, x)


def test_object_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="pickles"):
        npy_bytes(np.array([object()]))


def test_packed_tensors_round_trip_and_stay_deterministic(tmp_path: Path) -> None:
    from gero_runner.storage.artifacts import (
        PACKED,
        EvidenceWriter,
        has_member,
        load_array,
        verify_manifest,
    )

    def writer() -> EvidenceWriter:
        w = EvidenceWriter()
        w.add_array("inputs/input_0.npy", np.arange(3.0))
        w.add_array("outputs/ort-all/output_0.npy", np.arange(4, dtype=np.float16))
        w.add_array("contracts/partition/ort-all/y.actual.npy", np.ones((2, 2)))
        return w

    first = writer().write(tmp_path)
    assert writer().write(tmp_path) == first  # same evidence, same bytes, same address
    directory = tmp_path / first
    assert (directory / PACKED).is_file()
    assert not (directory / "outputs").exists() and not (directory / "inputs").exists()
    assert has_member(directory, "inputs/input_0.npy")
    verify_manifest(directory)
    assert has_member(directory, "outputs/ort-all/output_0.npy")
    assert not has_member(directory, "outputs/ort-all/output_9.npy")
    np.testing.assert_array_equal(load_array(directory, "contracts/partition/ort-all/y.actual.npy"),
                                  np.ones((2, 2)))
    assert np.load(directory / PACKED, allow_pickle=False)["outputs/ort-all/output_0"].size == 4
