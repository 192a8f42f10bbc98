"""The error distribution of a comparison beside its maximum: mean, median, p90 and p99 of
|a − r| and of the scaled error |a − r| / max|r|, over its finite pairs (Polygraphy reports
the same for every comparison: a maximum alone cannot tell one bad element from a bad
tensor).

Standard library only: the reader names these columns (a file of a gero before schema
version 2 lacks them, and reads them as NULL) without NumPy; ``compare`` computes them.
"""

from __future__ import annotations

from typing import Final

QUANTILES: Final = (("median", 0.5), ("p90", 0.9), ("p99", 0.99))
"""The quantiles stored, by the name their columns start with."""

DISTRIBUTION_COLUMNS: Final = (
    ("mean_abs_error", "mean |a - r| over finite pairs"),
    ("median_abs_error", "median |a - r| over finite pairs"),
    ("p90_abs_error", "90th percentile of |a - r| over finite pairs"),
    ("p99_abs_error", "99th percentile of |a - r| over finite pairs"),
    ("mean_scaled_error", "mean |a - r| / max|r| over finite pairs"),
    ("median_scaled_error", "median |a - r| / max|r| over finite pairs"),
    ("p90_scaled_error", "90th percentile of |a - r| / max|r| over finite pairs"),
    ("p99_scaled_error", "99th percentile of |a - r| / max|r| over finite pairs"),
)
"""(column, meaning) of each figure, in the schema's order."""
DISTRIBUTION_NAMES: Final = tuple(name for name, _ in DISTRIBUTION_COLUMNS)

SINCE_SCHEMA: Final = 2
"""The schema version that added these columns."""
