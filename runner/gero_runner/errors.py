"""One error base class: everything gero raises on bad input is a GeroError."""

from __future__ import annotations

ERROR_TEXT_LIMIT = 2000
"""Characters of a path's error message kept in a row's reason (a traceback can be huge)."""


def error_text(e: BaseException) -> str:
    """What a path or law raised, as a row's reason records it: type and message, cut."""
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= ERROR_TEXT_LIMIT else text[:ERROR_TEXT_LIMIT] + " …"


class GeroError(Exception):
    """A user-facing error: the message names the bad value and, where useful, the valid ones."""


class ArtifactError(GeroError):
    """A missing, tampered or unsafe evidence artifact."""


class StoreError(GeroError):
    """A data root, run or Parquet file that cannot be read as gero data."""
