"""One error base class: everything gero raises on bad input is a GeroError."""

from __future__ import annotations


class GeroError(Exception):
    """A user-facing error: the message names the bad value and, where useful, the valid ones."""


class ArtifactError(GeroError):
    """A missing, tampered or unsafe evidence artifact."""


class StoreError(GeroError):
    """A data root, run or Parquet file that cannot be read as gero data."""
