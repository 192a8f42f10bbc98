"""Content hashes are stable: the same content has the same hash in any order, process or
container type, and a different content (bits, dtype, shape, column) a different one.
Observation ids are these hashes, so `gero diff` pairs runs by them."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gero_runner.schema import IDENTITY_COLUMNS, Observation
from gero_runner.storage.hashing import load_npy, npy_bytes, row_hash, tensor_hash

DTYPES = st.sampled_from(["float16", "float32", "float64", "int8", "int64", "bool"])
arrays = DTYPES.flatmap(lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=0, max_dims=3,
                                                                  max_side=4)))
cells = st.one_of(st.text(max_size=8), st.floats(allow_nan=False), st.integers(-3, 3))


@given(x=arrays)
def test_a_tensor_hash_is_its_dtype_shape_and_bits(x: np.ndarray) -> None:
    assert tensor_hash(x) == tensor_hash(x.copy()) == tensor_hash(np.asfortranarray(x))
    column = x.reshape(-1, 1)
    if column.shape != x.shape:  # the same bits in another shape
        assert tensor_hash(x) != tensor_hash(column)
    # the same bits as another dtype
    assert tensor_hash(x) != tensor_hash(x.view(f"V{x.dtype.itemsize}"))


@given(x=arrays)
def test_npy_bytes_are_numpy_s_and_read_back(x: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, x, allow_pickle=False)
    assert npy_bytes(x) == buffer.getvalue()
    back = load_npy(npy_bytes(x))
    assert back.dtype == x.dtype and back.shape == x.shape
    assert back.tobytes() == np.ascontiguousarray(x).tobytes()


@given(values=st.dictionaries(st.sampled_from(IDENTITY_COLUMNS), cells, min_size=1))
@pytest.mark.slow
def test_a_row_hash_ignores_order_and_container(values: dict[str, object]) -> None:
    columns = list(IDENTITY_COLUMNS)
    reordered = dict(reversed(list(values.items())))
    assert row_hash(values, columns) == row_hash(reordered, columns)
    changed = {**values, columns[0]: f"{values.get(columns[0])}!"}
    assert row_hash(values, columns) != row_hash(changed, columns)


@settings(max_examples=1, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({"case_id": st.text(max_size=8),
                                            "max_abs_error": st.floats(allow_nan=False)}),
                     min_size=20, max_size=20))
def test_a_row_hash_is_the_same_in_another_process(rows: list[dict[str, object]]) -> None:
    """No per-process salt (Python's str hash is salted; SHA-256 of the JSON is not)."""
    columns = ["case_id", "max_abs_error"]
    code = ("import sys, json; from gero_runner.storage.hashing import row_hash; "
            f"print(*(row_hash(r, {columns!r}) for r in json.loads(sys.stdin.read())))")
    other = subprocess.run([sys.executable, "-c", code], input=json.dumps(rows), check=True,
                           capture_output=True, text=True).stdout.split()
    assert other == [row_hash(r, columns) for r in rows]


def test_an_observation_hashes_as_its_dict() -> None:
    o = Observation(suite="synthetic", case_id="synthetic/Exp/a/float32", op_type="Exp",
                    case_name="a", check="agreement", dtype="float32", input_shapes="[2]",
                    output_name="y", backend="onnxruntime", backend_version="1", threads=1,
                    reference="onnx-reference", reference_version="1", rtol=1e-5, atol=1e-6,
                    result="passed", reason="", graph_hash="g", input_hash="i", seed=0,
                    optimization="all")
    assert row_hash(o, IDENTITY_COLUMNS) == row_hash(o.as_dict(), IDENTITY_COLUMNS)
