"""Small real runs for the query-layer evidence tests."""

from __future__ import annotations

from pathlib import Path

from gero_runner.run import RunRequest, execute
from gero_runner.storage.store import DataRoot


def small_run(root: Path, run_id: str, **overrides: object) -> DataRoot:
    request = RunRequest(suite="synthetic", data_root=root, ops=["Exp"], limit=3, repeats=1,
                         jobs=1, run_id=run_id, **overrides)  # type: ignore[arg-type]
    execute(request)
    return DataRoot(root)
