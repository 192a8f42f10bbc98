"""The data root's file names, importable without pyarrow (the explorer lists runs first)."""

from __future__ import annotations

from pathlib import Path

RUNS_DIR = "runs"
RUN_FILE = "run.json"
OBSERVATIONS_FILE = "observations.parquet"
SIGHTINGS_FILE = "sightings.parquet"
FINDINGS_CACHE_DIR = ("cache", "findings")
"""Under the data root, one folder per run: its findings, computed once (query.findings)."""


def run_ids(data_root: Path) -> list[str]:
    """Runs with a record, oldest first (ids sort by time)."""
    runs = data_root / RUNS_DIR
    if not runs.is_dir():
        return []
    return sorted(p.name for p in runs.iterdir() if (p / RUN_FILE).is_file())
