"""Choices and defaults the command line offers before any run is read.

Standard library only: ``gero --help`` builds every subcommand's parser, and a choice that
lived beside its query (which imports DuckDB and pyarrow, ~0.3 s) made it slow.
"""

from __future__ import annotations

from typing import Final

EXPORT_FORMATS: Final = ("csv", "parquet", "json", "md")
"""What ``gero export`` writes."""
DIFF_FACTOR: Final = 10.0
"""Error growth that ``gero diff`` counts as a regression by default."""
DIFF_KINDS: Final = ("regression", "fix", "changed", "incompatible", "new", "missing")
"""The kinds of a diff entry, in the order they are listed."""
