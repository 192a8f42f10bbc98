"""The observation rows that belong to an artifact directory, and their JSON form.

An artifact directory inside a data root finds its rows in the root's Parquet files; a
bundle (or a copied directory) carries them in ``observations.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.errors import ArtifactError
from gero_runner.storage.index import KEY_COLUMN
from gero_runner.storage.layout import RUNS_DIR
from gero_runner.storage.store import DataRoot

OBSERVATIONS_JSON = "observations.json"


def find_data_root(directory: Path) -> DataRoot | None:
    """The nearest ancestor of ``directory`` that holds a ``runs/`` folder, if any."""
    for parent in directory.resolve().parents:
        if (parent / RUNS_DIR).is_dir():
            return DataRoot(parent)
    return None


def rows_for_artifact(root: DataRoot, directory: Path,
                      warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every stored observation whose artifact_path is ``directory``; corrupt files skipped."""
    relative = directory.resolve().relative_to(root.path.resolve()).as_posix()
    rows: list[dict[str, Any]] = []
    for path in root.observation_files():
        try:
            table = pq.read_table(path, filters=[("artifact_path", "=", relative)])
        except (OSError, pa.ArrowException) as e:
            if warn is not None:
                warn(f"{path}: unreadable Parquet file, skipped ({e})")
            continue
        rows += table.drop_columns([c for c in (KEY_COLUMN,) if c in table.column_names]
                                   ).to_pylist()
    return rows


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf': strict JSON has no literal for these
    return value


def row_to_json(row: dict[str, Any]) -> dict[str, Any]:
    """A row as strict JSON values (timestamps as ISO text, non-finite floats as text)."""
    return {k: _jsonable(v) for k, v in row.items()}


def row_from_json(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for k, v in row.items():
        if v in ("nan", "inf", "-inf") and k not in ("reason", "details"):
            out[k] = float(v)
    return out


def write_rows_json(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps([row_to_json(r) for r in rows], indent=2, sort_keys=True))


def read_rows_json(path: Path) -> list[dict[str, Any]]:
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: cannot read observation rows ({e})") from e
    if not isinstance(payload, list) or not all(isinstance(r, dict) for r in payload):
        raise ArtifactError(f"{path}: expected a JSON list of observation rows")
    return [row_from_json(r) for r in payload]
