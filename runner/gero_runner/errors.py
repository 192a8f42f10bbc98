"""One error base class: everything gero raises on bad input is a GeroError."""

from __future__ import annotations

import re

ERROR_TEXT_LIMIT = 2000
"""Characters of a path's error message kept in a row's reason (a traceback can be huge)."""


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_OPENVINO_NODE = re.compile(r"(opset\d+::(\w+) \2|friendly_name '\w+?)_\d+\b")
"""OpenVINO names the nodes it builds from a per-process counter (``opset1::Parameter
Parameter_93664``, ``friendly_name 'GatherElements_93665'``): the number depends on what
the process compiled before, so it differs between workers and runs."""


def error_text(e: BaseException) -> str:
    """What a path or law raised, as a row's reason records it: type and message, cut.

    Memory addresses (``0x7ffe60733d00``) differ on every run; the reason is part of an
    observation's identity, so they are written as ``0x…`` (or a rerun never deduplicates);
    OpenVINO's numbered node names likewise lose their number (``Parameter_…``).
    """
    if isinstance(e, PathFailed):
        return str(e)
    text = _ADDRESS.sub("0x…", f"{type(e).__name__}: {e}".strip())
    text = _OPENVINO_NODE.sub(r"\1_…", text)
    return text if len(text) <= ERROR_TEXT_LIMIT else text[:ERROR_TEXT_LIMIT] + " …"


class PathFailed(Exception):
    """A path gave no result for a reason already worded (it ran out of its budget, its
    worker died): ``error_text`` gives the message as it is."""


class NotRun(Exception):
    """A path was not run at all: it ran out of its budget earlier in the case, and the row
    saying so names what it was not run on."""


class GeroError(Exception):
    """A user-facing error: the message names the bad value and, where useful, the valid ones."""


class ArtifactError(GeroError):
    """A missing, tampered or unsafe evidence artifact."""


class StoreError(GeroError):
    """A data root, run or Parquet file that cannot be read as gero data."""
