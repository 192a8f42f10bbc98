"""A stored localization read with every field checked (issue 45 item 8): each field of each
wrong type counts as absent, in the reader and in the Markdown lines made from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gero.query.finding_report import localization_lines
from gero.query.stored_localization import (
    StoredOrigin,
    parse_localization,
    read_stored_localization,
)

ORIGIN = {"node": "LN/Sub", "op_type": "Sub", "nodes": ["Sub 'LN/Sub'"],
          "inputs_scaled_error": 6.6e-8, "local_scaled_error": 0.93, "share": 1.0,
          "fused_as": ""}
GOOD = {"observation_id": "ab" * 32, "actual": "onnxruntime:all", "reference": "float64-shadow",
        "summary": "the error enters at LN/Sub (Sub)", "origins": [ORIGIN], "repro": "/tmp/r"}
WRONG = [None, True, 3, 2.5, "text", [1, "a"], {"a": 1}]
"""A value of each JSON type (a field gets each that is not its own)."""


def test_a_well_formed_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / f"{'ab' * 32}.json"
    path.write_text(json.dumps(GOOD))
    loc = read_stored_localization(path)
    assert loc is not None
    assert (loc.observation_id, loc.actual, loc.reference, loc.summary, loc.repro) == (
        "ab" * 32, "onnxruntime:all", "float64-shadow", "the error enters at LN/Sub (Sub)",
        "/tmp/r")
    assert loc.origins == (StoredOrigin("LN/Sub", "Sub", 1, 6.6e-8, 0.93, 1.0),)
    assert localization_lines(loc)[2] == (
        "- origin: `LN/Sub` (Sub; 1 node(s)): inputs agree to 6.6e-08 scaled, alone it "
        "differs by 0.93, 100% of the final error")


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", '"origins"', "\x00\xff"])
def test_a_file_that_is_no_json_object_is_none(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert read_stored_localization(path) is None
    assert read_stored_localization(tmp_path / "absent.json") is None


@pytest.mark.parametrize("field", sorted(GOOD))
@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_a_field_of_the_wrong_type_counts_as_absent(field: str, value: Any) -> None:
    if isinstance(value, type(GOOD[field])) and field != "origins":
        return  # its own type
    loc = parse_localization({**GOOD, field: value}, "from-the-file-name")
    lines = localization_lines(loc)  # was a ValueError, AttributeError or TypeError
    if field == "origins":
        assert loc.origins == () and not any(line.startswith("- origin") for line in lines)
    elif field == "observation_id":
        assert loc.observation_id == "from-the-file-name"
    else:
        assert getattr(loc, field) == ""
    if field == "repro":
        assert not any(line.startswith("- repro") for line in lines)


@pytest.mark.parametrize("field", sorted(ORIGIN))
@pytest.mark.parametrize("value", WRONG, ids=repr)
def test_an_origin_field_of_the_wrong_type_counts_as_absent(field: str, value: Any) -> None:
    number = field in ("inputs_scaled_error", "local_scaled_error", "share")
    own = (int, float) if number else type(ORIGIN[field])
    if isinstance(value, own) and not isinstance(value, bool):
        return  # its own type
    loc = parse_localization({**GOOD, "origins": [{**ORIGIN, field: value}, value]})
    lines = "\n".join(localization_lines(loc))
    if field == "node":  # an origin that names no node is no origin
        assert loc.origins == ()
        return
    (origin,) = loc.origins  # the origin that is not an object is left out
    if field == "nodes":
        assert origin.nodes == 0 and "(Sub; 0 node(s))" in lines
    elif number:
        assert getattr(origin, field) is None
        assert "—" in lines or "of the final error" not in lines
    else:
        assert getattr(origin, field) == ""


@pytest.mark.parametrize("share", [float("inf"), float("nan")])
def test_a_share_that_is_not_finite_is_not_shown(share: float) -> None:
    (origin,) = parse_localization({**GOOD, "origins": [{**ORIGIN, "share": share}]}).origins
    assert origin.share is None
