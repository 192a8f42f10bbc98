"""Data roots with a history, written in-process: runs of made-up observations (no backends)
through the run writer ``gero run`` uses, or in the layout of a gero before keys."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa

from gero_runner.schema import OBSERVATION_SCHEMA, SIGHTING_SCHEMA
from gero_runner.storage.reader import open_run
from gero_runner.storage.run_writer import RunWriter
from gero_runner.storage.store import DataRoot, atomic_write_table, rows_to_table

FIELDS: dict[str, Any] = {
    "suite": "synthetic", "command_line": "gero run", "seed": 0, "jobs": 1, "threads": 1,
    "cpu_model": "cpu", "python_version": "3", "numpy_version": "2", "onnx_version": "1",
    "onnxruntime_version": "1", "tolerances": {}, "models": [], "backends": {}}


def oid(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def artifact(name: str) -> str:
    return f"artifacts/{oid(name)[:2]}/{oid(name)[2:26]}"


def row(name: str, run_id: str, ms: float = 0.5) -> dict[str, Any]:
    """An observation named ``name`` (its id, case and evidence follow from the name)."""
    case = name.split(".")[0]
    return {"observation_id": oid(name), "run_id": run_id, "suite": "synthetic",
            "case_id": f"synthetic/{case}", "op_type": case, "check": "agreement",
            "dtype": "float32", "backend": "onnxruntime", "optimization": "all",
            "reference": "onnx-reference", "result": "divergence" if "bad" in name else "passed",
            "reason": f"reason of {name}", "max_abs_error": float("nan") if "nan" in name
            else 1e-6 * len(name), "artifact_path": artifact(name),
            "actual_median_ms": ms, "reference_median_ms": 2 * ms}


def make_artifacts(root: Path, names: list[str]) -> None:
    for name in names:
        directory = root / artifact(name)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "case.json").write_text(json.dumps({"name": name}))


def write_with_writer(root: Path, run_id: str, names: list[str], saves: int = 2,
                      ms: float = 0.5) -> None:
    """A complete run that sighted ``names`` (in order; one case per name prefix), written
    as ``gero run`` writes it, with ``saves`` saves."""
    writer = RunWriter.create(DataRoot(root), run_id,
                              {**FIELDS, "run_id": run_id, "started_at": _started(run_id)})
    cases: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        cases.setdefault(name.split(".")[0], []).append(row(name, run_id, ms))
    for position, (case, rows) in enumerate(cases.items()):
        batch = pa.RecordBatch.from_pylist(rows, schema=OBSERVATION_SCHEMA)
        writer.add(position, f"synthetic/{case}", batch, 0.0, 0.0, 0.0)
        if saves > 1 and position == len(cases) // 2:
            writer.save("running")
    writer.finish("complete")


def write_legacy(root: Path, run_id: str, stored: list[str], sighted: list[str]) -> None:
    """A run as a gero before keys wrote it: sightings by id, observations without keys."""
    record = {**FIELDS, "run_id": run_id, "started_at": _started(run_id),
              "finished_at": _started(run_id), "status": "complete", "case_count": 1,
              "observation_count": len(sighted), "new_observation_count": len(stored),
              "counts": {}, "wall_seconds": 1.0, "backend_seconds": 1.0}
    directory = DataRoot(root).run_dir(run_id)
    directory.mkdir(parents=True)
    atomic_write_table(directory / "observations.parquet",
                       rows_to_table([row(n, run_id) for n in stored]))
    atomic_write_table(directory / "sightings.parquet", pa.Table.from_pylist(
        [{"run_id": run_id, "observation_id": oid(n), "actual_median_ms": 0.5,
          "reference_median_ms": 1.0} for n in sighted], schema=SIGHTING_SCHEMA))
    (directory / "run.json").write_text(json.dumps(record))


def _started(run_id: str) -> str:
    return (f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T{run_id[9:11]}:{run_id[11:13]}:"
            f"{run_id[13:15]}+00:00")


def _plain(value: Any) -> Any:
    return "nan" if isinstance(value, float) and math.isnan(value) else value


def run_rows(root: Path, run_id: str) -> list[tuple[Any, ...]]:
    """Every column of every observation a run made, as the one opener reads them."""
    with open_run(root, run_id) as run:
        table = run.arrow("SELECT * FROM obs ORDER BY observation_id")
        assert "observation_key" not in table.column_names
        return [tuple(_plain(v) for v in r.values()) for r in table.to_pylist()]
