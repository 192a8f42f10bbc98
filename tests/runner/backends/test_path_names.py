"""A path's name has one owner: the backend's attributes, rendered the same in Python and SQL."""

from __future__ import annotations

import duckdb
from hypothesis import given
from hypothesis import strategies as st

from gero_runner import backends
from gero_runner.backends.base import NOT_APPLICABLE

KNOWN = ["onnxruntime", "openvino", "tract", "onnx-reference", "onnx-reference-corrected"]


def _sql(expression: str, backend: str, optimization: str) -> str:
    rows = duckdb.execute(f"SELECT {expression} FROM (SELECT ?::VARCHAR AS backend, "
                          "?::VARCHAR AS optimization)", [backend, optimization]).fetchall()
    return str(rows[0][0])


def test_labels_as_every_view_shows_them() -> None:
    assert backends.path_label("onnxruntime", "all") == "all"
    assert backends.path_label("onnx-reference", NOT_APPLICABLE) == "reference"
    assert backends.path_label("openvino", "f32") == "ov:f32"
    assert backends.path_label("openvino", "bf16-default") == "ov:bf16-default"
    assert backends.path_label("tract", "optimized") == "tract:optimized"
    assert backends.path_label("elsewhere", NOT_APPLICABLE) == "elsewhere"
    assert backends.path_label("elsewhere", "fast") == "elsewhere:fast"
    assert backends.title("onnxruntime") == "ONNX Runtime"
    assert backends.short_name("openvino") == "ov"
    assert backends.short_name("elsewhere") == "elsewhere"


@given(backend=st.sampled_from(KNOWN) | st.text(min_size=1, max_size=12),
       optimization=st.sampled_from([NOT_APPLICABLE, "all", "f32"]) | st.text(max_size=12))
def test_python_and_sql_labels_agree(backend: str, optimization: str) -> None:
    assert _sql(backends.path_label_sql(), backend, optimization) == backends.path_label(
        backend, optimization)


@given(optimization=st.text(min_size=1, max_size=12).filter(lambda s: s != NOT_APPLICABLE))
def test_path_names_are_the_specs_names(optimization: str) -> None:
    """``path_name_sql`` gives what ``Backend.spec`` names a path (its evidence folder)."""
    for name in backends.RUNTIMES:
        runtime = backends.get(name)
        spec = runtime.spec(optimization, 1, {})
        assert _sql(backends.path_name_sql(), name, optimization) == spec.name
    reference = backends.get(backends.REFERENCE).paths(0)[0]
    assert _sql(backends.path_name_sql(), reference.backend, NOT_APPLICABLE) == reference.name


def test_every_label_of_a_runtime_is_distinct() -> None:
    """Two paths of a run never share a label (OpenVINO's f32 and bf16-default once did in
    the what-if list)."""
    labels = [backends.path_label(name, setting) for name in backends.RUNTIMES
              for setting in ("f32", "bf16-default", "all", "basic", "optimized")]
    labels += [backends.path_label(name, NOT_APPLICABLE) for name in KNOWN
               if name not in backends.RUNTIMES]
    assert len(labels) == len(set(labels))
