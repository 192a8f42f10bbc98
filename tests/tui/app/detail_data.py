"""A small, fully deterministic data root for the detail, histogram and export tests.

Hand-made tensors (no backend runs), so snapshots do not move with timings or versions:
a float16 divergence on a 2×5×8 tensor (some elements out of tolerance, one NaN, a float64
value kept), a bit-exact float32 pass, a contract with its two sides, and an execution
failure without evidence.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner.classify import classify
from gero_runner.distribution import DISTRIBUTION_NAMES
from gero_runner.metrics.compare import compare
from gero_runner.schema import IDENTITY_COLUMNS, RunRecord
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import row_hash, tensor_hash
from gero_runner.storage.store import DataRoot

RUN_ID = "20250101-000000-abcdef"
CREATED = datetime(2025, 1, 1, tzinfo=UTC)


def _row(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": RUN_ID, "suite": "synthetic", "case_id": "synthetic/Softmax/3d/float16",
        "op_type": "Softmax", "case_name": "Softmax 2x5x8 axis=-1", "check": "agreement",
        "dtype": "float16", "input_shapes": "[2,5,8]", "output_name": "y",
        "backend": "onnxruntime", "backend_version": "1.20.0", "optimization": "all",
        "threads": 1, "reference": "onnx-reference", "reference_version": "1.17.0",
        "rtol": 5e-3, "atol": 5e-4, "arbiter": "-", "graph_hash": "g" * 64,
        "input_hash": "i" * 64, "seed": 7, "actual_median_ms": 0.0123,
        "reference_median_ms": 0.456, "repeats": 5,
        "session_settings": json.dumps({"execution_mode": "sequential", "intra_op_threads": 1,
                                        "level": "all", "provider": "CPUExecutionProvider"}),
        "details": "{}", "created_at": CREATED,
    }
    row.update(over)
    return row


def _metrics(a: np.ndarray, r: np.ndarray, rtol: float, atol: float) -> dict[str, Any]:
    c = compare(a, r, rtol, atol)
    result, reason = classify(c, rtol, atol)
    return {"max_abs_error": c.max_abs_error, "max_rel_error": c.max_rel_error,
            "max_ulp": c.max_ulp, "scaled_error": c.scaled_error,
            "floored_rel_error": c.floored_rel_error, "mismatch_count": c.mismatch_count,
            "element_count": c.element_count, "nan_actual": c.nan_actual,
            "inf_actual": c.inf_actual, "nan_reference": c.nan_reference,
            "inf_reference": c.inf_reference, "min_atol": c.min_atol, "min_rtol": c.min_rtol,
            "bit_exact": c.bit_exact, "result": result, "reason": reason,
            "actual_hash": tensor_hash(a), "reference_hash": tensor_hash(r),
            **{name: getattr(c, name) for name in DISTRIBUTION_NAMES}}


def softmax_tensors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actual float16, reference float16, float64 value) with known bad elements."""
    x = np.linspace(-3, 3, 80, dtype=np.float64).reshape(2, 5, 8)
    exact = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    reference = exact.astype(np.float16)
    actual = reference.copy()
    actual[1, 3, 6] = np.float16(exact[1, 3, 6] + 0.02)   # the worst element
    actual[0, 2, 4] = np.float16(exact[0, 2, 4] - 0.004)  # out of tolerance
    actual[0, 0, 1] = np.nextafter(reference[0, 0, 1], np.float16(1))  # 1 ULP, within
    actual[1, 0, 0] = np.float16(np.inf)                    # +inf against -inf: a mismatch
    reference[1, 0, 0] = np.float16(-np.inf)
    return actual, reference, exact


def build(path: Path) -> dict[str, str]:
    """Write the data root; returns observation ids by name (divergence, passed, contract,
    execution)."""
    root = DataRoot(path)
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}

    actual, reference, exact = softmax_tensors()
    w = EvidenceWriter()
    w.add_bytes("model.onnx", b"not a model: hand-made evidence for tests")
    w.add_array("outputs/ort-all/output_0.npy", actual)
    w.add_array("outputs/onnx-reference/output_0.npy", reference)
    w.add_array("outputs/numpy-float64-exact/output_0.npy", exact)
    side_a = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    side_b = side_a.copy()
    side_b[2, 1] += np.float32(1e-3)
    # As the runner writes a batch law: the constrained side, then the law's side.
    w.add_array("contracts/partition/ort-all/y.actual.npy", side_b)
    w.add_array("contracts/partition/ort-all/y.reference.npy", side_a)
    passed = np.linspace(0, 1, 6, dtype=np.float32)
    w.add_array("outputs/ort-basic/output_0.npy", passed)
    w.add_array("outputs/numpy-float64/output_0.npy", passed)
    artifact = w.write(path)

    div = _row(**_metrics(actual, reference, 5e-3, 5e-4), arbiter="reference",
               artifact_path=artifact, actual_file="outputs/ort-all/output_0.npy",
               reference_file="outputs/onnx-reference/output_0.npy")
    ok = _row(**_metrics(passed, passed, 1e-5, 1e-6), case_id="synthetic/Relu/1d/float32",
              op_type="Relu", case_name="Relu 6", dtype="float32", input_shapes="[6]",
              optimization="basic", rtol=1e-5, atol=1e-6, reference="numpy-float64",
              check="analytic", artifact_path=artifact,
              actual_file="outputs/ort-basic/output_0.npy",
              reference_file="outputs/numpy-float64/output_0.npy")
    con = _row(**_metrics(side_b, side_a, 1e-5, 1e-6), check="contract:partition",
               dtype="float32", rtol=1e-5, atol=1e-6, artifact_path=artifact,
               reference="law:full-batch",
               actual_file="contracts/partition/ort-all/y.actual.npy",
               reference_file="contracts/partition/ort-all/y.reference.npy",
               details=json.dumps({"law": "partition", "bit_exact": False, "batch": 4,
                                   "parts": [1, 1, 2], "batched_inputs": ["X"]}))
    ex = _row(case_id="synthetic/Erf/1d/float64", op_type="Erf", case_name="Erf 4",
              dtype="float64", rtol=1e-12, atol=1e-13, result="execution",
              reason="ort-all failed: NOT_IMPLEMENTED", artifact_path="", actual_file="",
              reference_file="", max_abs_error=float("nan"), mismatch_count=0,
              element_count=0, bit_exact=False, actual_hash="", reference_hash="")
    for name, row in (("divergence", div), ("passed", ok), ("contract", con),
                      ("execution", ex)):
        row["observation_id"] = row_hash(row, IDENTITY_COLUMNS)
        ids[name] = row["observation_id"]
        rows.append(row)

    record = RunRecord(
        run_id=RUN_ID, started_at=CREATED.isoformat(), finished_at=CREATED.isoformat(),
        status="complete", suite="synthetic", command_line="gero run (test data)", seed=7,
        jobs=1, threads=1, cpu_model="test", python_version="3.11", numpy_version="2",
        onnx_version="1.17.0", onnxruntime_version="1.20.0",
        tolerances={"float16": {"rtol": 5e-3, "atol": 5e-4}}, case_count=4,
        observation_count=len(rows), new_observation_count=len(rows),
        counts={"passed": 1, "divergence": 2, "contract_issue": 0, "execution": 1},
        wall_seconds=0.0, backend_seconds=0.0,
    )
    root.write_run(record, rows, [
        {"run_id": RUN_ID, "observation_id": r["observation_id"],
         "actual_median_ms": r.get("actual_median_ms"),
         "reference_median_ms": r.get("reference_median_ms"), "seen_at": CREATED}
        for r in rows
    ])
    return ids
