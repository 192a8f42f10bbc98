"""The data root's file names, importable without pyarrow (the explorer lists runs first)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

RUNS_DIR = "runs"
RUN_FILE = "run.json"
OBSERVATIONS_FILE = "observations.parquet"
SIGHTINGS_FILE = "sightings.parquet"
FINDINGS_CACHE_DIR = ("cache", "findings")
"""Under the data root, one folder per run: its findings, computed once (query.findings)."""
OUTPUTS_DIR = ("cache", "outputs")
"""Under the data root, the path outputs kept for reuse (``storage.path_outputs``)."""


def run_ids(data_root: Path) -> list[str]:
    """Runs with a record, oldest first: by the start time each record says (ids need not
    sort by time: ``ci-100`` starts after ``ci-99``), then by id."""
    runs = data_root / RUNS_DIR
    if not runs.is_dir():
        return []
    found = [p for p in runs.iterdir() if (p / RUN_FILE).is_file()]
    return [p.name for p in sorted(found, key=lambda p: (run_started(p), p.name))]


def run_started(run_dir: Path) -> float:
    """When the run in ``run_dir`` started (POSIX seconds): its record's ``started_at``; for
    a record without one, the time its id begins with (``YYYYMMDD-HHMMSS``, as gero names
    runs), else the oldest modification time of the files in its directory."""
    try:
        record = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        started = record.get("started_at") if isinstance(record, dict) else None
        if isinstance(started, str):
            return _aware(datetime.fromisoformat(started)).timestamp()
    except (OSError, ValueError, OverflowError):
        pass
    try:
        return _aware(datetime.strptime(run_dir.name[:15], "%Y%m%d-%H%M%S")).timestamp()
    except ValueError:
        pass
    times = []
    try:
        for entry in os.scandir(run_dir):
            times.append(entry.stat(follow_symlinks=False).st_mtime)
    except OSError:
        pass
    return min(times, default=0.0)


def _aware(moment: datetime) -> datetime:
    """A time without a zone is UTC (gero records UTC)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
