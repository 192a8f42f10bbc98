"""The observation rows that belong to an artifact directory, and their JSON form.

An artifact directory inside a data root finds its rows in the root's Parquet files; a
bundle (or a copied directory) carries them in ``observations.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.errors import ArtifactError
from gero_runner.schema import Observation, observation_from_row
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
                      warn: Callable[[str], None] | None = None) -> list[Observation]:
    """Every stored observation whose artifact_path is ``directory``; corrupt files skipped."""
    relative = directory.resolve().relative_to(root.path.resolve()).as_posix()
    rows: list[Observation] = []
    for path in root.observation_files():
        try:
            table = pq.read_table(path, filters=[("artifact_path", "=", relative)])
        except (OSError, pa.ArrowException) as e:
            if warn is not None:
                warn(f"{path}: unreadable Parquet file, skipped ({e})")
            continue
        try:
            rows += [observation_from_row(r) for r in table.to_pylist()]
        except ValueError as e:
            if warn is not None:
                warn(f"{path}: not observation rows, skipped ({e})")
    return rows


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf': strict JSON has no literal for these
    return value


def row_to_json(row: Observation) -> dict[str, Any]:
    """A row as strict JSON values (timestamps as ISO text, non-finite floats as text)."""
    return {k: _jsonable(v) for k, v in row.as_dict().items()}


def row_from_json(row: dict[str, Any]) -> Observation:
    """The inverse of ``row_to_json`` (ValueError names the columns a row lacks)."""
    out = dict(row)
    for k, v in row.items():
        if v in ("nan", "inf", "-inf") and k not in ("reason", "details"):
            out[k] = float(v)
    if isinstance(out.get("created_at"), str):
        out["created_at"] = datetime.fromisoformat(out["created_at"])
    return observation_from_row(out)


def write_rows_json(path: Path, rows: Iterable[Observation]) -> None:
    path.write_text(json.dumps([row_to_json(r) for r in rows], indent=2, sort_keys=True))


def read_rows_json(path: Path) -> list[Observation]:
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: cannot read observation rows ({e})") from e
    if not isinstance(payload, list) or not all(isinstance(r, dict) for r in payload):
        raise ArtifactError(f"{path}: expected a JSON list of observation rows")
    try:
        return [row_from_json(r) for r in payload]
    except ValueError as e:
        raise ArtifactError(f"{path}: not an observation row ({e})") from None
