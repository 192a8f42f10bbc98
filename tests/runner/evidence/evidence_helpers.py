"""Small real runs for the evidence tests: a few Exp cases, or one model, one timed repeat;
the rows of a run, and a localization as `gero localize --format json` prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gero_processes import gero
from shared_helpers import obs_rows

from gero_runner.request import ModelOptions
from gero_runner.run import RunRequest, execute
from gero_runner.storage.store import DataRoot


def small_run(root: Path, run_id: str = "base", **overrides: object) -> DataRoot:
    request = RunRequest(suite="synthetic", data_root=root, ops=["Exp"], limit=3, repeats=1,
                         jobs=1, run_id=run_id, **overrides)  # type: ignore[arg-type]
    execute(request)
    return DataRoot(root)


def artifact_dirs(root: DataRoot) -> list[Path]:
    return sorted(p for p in (root.path / "artifacts").glob("*/*") if p.is_dir())


def model_rows(root: Path, model: Path, backends: tuple[str, ...] | None = ("onnxruntime",),
               **options: Any) -> list[dict[str, Any]]:
    """Every row of a run of ``model`` (``options``: its ModelOptions; backends None: every
    installed runtime)."""
    execute(RunRequest(data_root=root, models=[str(model)], repeats=1, backends=backends,
                       model_options=ModelOptions(**options)))
    return obs_rows(root)


def row_where(rows: list[dict[str, Any]], **where: str) -> dict[str, Any]:
    """The first row with these values."""
    found = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert found, f"no row with {where}"
    return found[0]


def localized(root: Path, row: dict[str, Any]) -> dict[str, Any]:
    """``gero localize`` of ``row`` (by its id's first 16 characters), read from its JSON."""
    done = gero("localize", str(row["observation_id"])[:16], "--data-dir", str(root),
                "--format", "json", cwd=root)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
