"""What a grouped row covers, in its cell: the names in their natural order when they fit,
short forms or a count when not, "all 4 levels" for ONNX Runtime's four levels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from gero.query.table import COVERS_RESULT, COVERS_SEPARATOR, LEVEL_NAMES, natural_key
from gero_runner.result_classes import RESULT_CLASSES
from gero_tui.app.widgets.evaluations_table import COVERED_NOUN, NARROW_VALUES, covers_label

names = st.sampled_from([*LEVEL_NAMES, "reference", "ov:f32", "ov:bf16-default",
                         "tract:optimized", "float16", "float32", "float64"])
groups = st.lists(st.tuples(names, st.sampled_from(RESULT_CLASSES)), min_size=1,
                  unique_by=lambda p: p[0])


def _value(pairs: list[tuple[str, str]]) -> str:
    return COVERS_SEPARATOR.join(f"{n}{COVERS_RESULT}{r}" for n, r in pairs)


@given(pairs=groups, width=st.integers(1, 60),
       column=st.sampled_from(["optimization", "dtype", "case"]))
@pytest.mark.slow
def test_the_cell_names_what_fits_else_counts(pairs: list[tuple[str, str]], width: int,
                                              column: str) -> None:
    text = covers_label(_value(pairs), width, column)
    ordered = sorted((n for n, _ in pairs), key=natural_key)
    if ordered == list(LEVEL_NAMES):
        assert text == ("all 4 levels" if width >= 12 else "4 levels")
        return
    full = ",".join(ordered)
    short = ",".join(NARROW_VALUES["dtype"].get(n, n) for n in ordered)
    if cell_len(full) <= width:
        assert text == full
    elif cell_len(short) <= width:
        assert text == short
    else:
        assert text == f"{len(ordered)} {COVERED_NOUN.get(column, 'values')}"


@given(pairs=groups)
def test_the_order_of_the_stored_list_does_not_matter(pairs: list[tuple[str, str]]) -> None:
    assert covers_label(_value(pairs), 40) == covers_label(_value(pairs[::-1]), 40)
