"""A localization ``gero localize`` stored beside the evidence (``localize/ID.json``), read
for display with every field checked.

The file is outside the manifest and anyone who can write the data root can edit it, so
each field is taken only when it has the type the localizer writes: a field of another
type counts as absent (a string where a number belongs shows as no figure, an origin that
is not an object naming its node is left out). The Markdown findings report, the HTML report and the
explorer's Findings screen all read stored localizations through here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gero_runner.storage.artifacts import read_json_object


@dataclass(frozen=True)
class StoredOrigin:
    """One origin node of a stored localization (``NodeFinding``'s fields a report shows)."""

    node: str
    op_type: str
    nodes: int
    """How many original nodes it stands for (one, or those a runtime fused)."""
    inputs_scaled_error: float | None
    local_scaled_error: float | None
    share: float | None
    """The final error its own error explains (None: not measured, or not finite)."""
    fused_as: str = ""


@dataclass(frozen=True)
class StoredLocalization:
    """What a report shows of a stored localization."""

    observation_id: str
    actual: str
    reference: str
    summary: str
    origins: tuple[StoredOrigin, ...]
    repro: str
    """Where ``gero localize -o`` wrote the origin's repro directory ("" when it did not)."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    # bool is an int to Python, not a figure to a report
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _origin(value: Any) -> StoredOrigin | None:
    if not isinstance(value, dict) or not _text(value.get("node")):
        return None
    nodes = value.get("nodes")
    share = _number(value.get("share"))
    return StoredOrigin(
        node=_text(value.get("node")), op_type=_text(value.get("op_type")),
        nodes=len(nodes) if isinstance(nodes, list) else 0,
        inputs_scaled_error=_number(value.get("inputs_scaled_error")),
        local_scaled_error=_number(value.get("local_scaled_error")),
        share=share if share is not None and math.isfinite(share) else None,
        fused_as=_text(value.get("fused_as")))


def parse_localization(data: dict[str, Any], observation_id: str = "") -> StoredLocalization:
    """A stored localization's JSON object as checked fields (see the module docstring);
    ``observation_id`` where the object names none (its file is named after it)."""
    origins = data.get("origins")
    found = [_origin(o) for o in origins] if isinstance(origins, list) else []
    return StoredLocalization(
        observation_id=_text(data.get("observation_id")) or observation_id,
        actual=_text(data.get("actual")),
        reference=_text(data.get("reference")), summary=_text(data.get("summary")),
        origins=tuple(o for o in found if o is not None), repro=_text(data.get("repro")))


def read_stored_localization(path: Path) -> StoredLocalization | None:
    """The localization stored at ``path``; None when it is absent, unreadable or not a
    JSON object."""
    data = read_json_object(path)
    return None if data is None else parse_localization(data, path.stem)
