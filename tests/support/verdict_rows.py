"""Fixed rows of a model run, as the model family writes them, for the verdict card's tests
(query layer, report)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gero_runner.schema import SIGHTING_SCHEMA
from gero_runner.storage.store import rows_to_table

CASE = "model/m/x[0]=2"


def model_row(path: tuple[str, str], check: str, result: str = "passed", output: str = "y",
              reference: str = "float64-shadow", reason: str = "", case: str = CASE,
              model: str = "m", **details: Any) -> dict[str, Any]:
    """One row of runtime setting ``path`` (backend, setting), its figures in ``details``."""
    backend, setting = path
    key = f"{case}|{check}|{backend}|{setting}|{output}|{reference}|{result}|{details}"
    return {"observation_id": hashlib.sha256(key.encode()).hexdigest(), "suite": "model",
            "case_id": case, "op_type": model, "case_name": case, "check": check,
            "dtype": "float32", "input_shapes": "[2,3]", "output_name": output,
            "backend": backend, "backend_version": "1", "optimization": setting,
            "threads": 1, "reference": reference, "reference_version": "1", "rtol": 1e-5,
            "atol": 1e-6, "result": result, "reason": reason or f"{check} {result}",
            "arbiter": "-", "graph_hash": "g", "input_hash": "i", "seed": -1,
            "artifact_path": f"artifacts/{case}", "details": json.dumps(details)}


def write_model_run(root: Path, rows: list[dict[str, Any]],
                    run_id: str = "20260105-000000-aaaaaa") -> Path:
    """``rows`` stored as the run ``run_id`` of the data root ``root``."""
    directory = root / "runs" / run_id
    directory.mkdir(parents=True)
    for r in rows:
        r["run_id"] = run_id
    pq.write_table(rows_to_table(rows), directory / "observations.parquet")
    sightings = [{"run_id": run_id, "observation_id": r["observation_id"]} for r in rows]
    pq.write_table(pa.Table.from_pylist(sightings, schema=SIGHTING_SCHEMA),
                   directory / "sightings.parquet")
    (directory / "run.json").write_text(json.dumps({"run_id": run_id, "suite": "model"}))
    return root
