"""The detail view says what a user model was fed (shape, values, where each came from)."""

from __future__ import annotations

import json

from gero.query.detail import DetailRecord
from gero_runner.schema import COLUMN_NAMES


def _obs(details: dict[str, object]) -> DetailRecord:
    fields: dict[str, object] = dict.fromkeys(COLUMN_NAMES)
    fields.update(input_shapes="[1,512];[]", details=json.dumps(details))
    return DetailRecord(fields)


def test_the_inputs_fed_follow_the_input_shapes() -> None:
    fed = "input float32 [1,512]: uniform in [-0.5, 0.5] (--input-range); sr int64 []: " \
          "constant 16000 (--input-value)"
    evaluation = dict(_obs({"inputs": fed}).sections()[0][1])
    names = list(evaluation)
    assert names[names.index("input_shapes") + 1] == "inputs fed"
    assert evaluation["inputs fed"] == fed


def test_rows_without_input_choices_show_no_such_line() -> None:
    assert "inputs fed" not in dict(_obs({"law": "partition"}).sections()[0][1])
