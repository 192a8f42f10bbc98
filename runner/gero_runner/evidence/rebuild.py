"""Rebuild the concrete case of an artifact directory: graph, inputs, stored reference data.

Only files inside the directory are read: external tensor data must live inside it, and
``.npy`` files load with pickles disabled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.case import BATCH_NONE, CaseInstance
from gero_runner.errors import ArtifactError
from gero_runner.storage.artifacts import has_member, load_array, safe_member, summary_of

ORT_PREFIX = "ort-"
"""Artifacts written before paths recorded their optimisation: ONNX Runtime's were named so."""


@dataclass(frozen=True)
class ArtifactCase:
    """An artifact directory read back: the case, its recorded paths and settings."""

    directory: Path
    case: CaseInstance
    record: dict[str, Any]
    """case.json as written by the runner."""
    levels: tuple[str, ...]
    """The optimisation labels of the executed paths (RunSettings.levels)."""
    threads: int
    backends: tuple[str, ...] = ("onnxruntime",)
    """The runtimes the case ran on (the ReferenceEvaluator aside)."""

    @property
    def paths(self) -> dict[str, dict[str, Any]]:
        paths: dict[str, dict[str, Any]] = self.record.get("paths", {})
        return paths


def read_case_record(directory: Path) -> dict[str, Any]:
    path = directory / "case.json"
    try:
        record: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise ArtifactError(f"{directory}: case.json is missing; not a gero artifact") from e
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{path}: cannot read ({e})") from e
    return record


def check_external_data(directory: Path, model_bytes: bytes) -> bool:
    """Refuse external tensor data outside the directory; True when the model has any."""
    import onnx
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    try:
        model = onnx.load_from_string(model_bytes)
    except Exception as e:  # onnx raises DecodeError and friends for a corrupt graph
        raise ArtifactError(f"{directory / 'model.onnx'}: not a readable ONNX model ({e})") from e
    found = False
    for tensor in _get_all_tensors(model):
        if not uses_external_data(tensor):
            continue
        found = True
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        path = safe_member(directory, location)  # raises on '..' or absolute escapes
        if not path.is_file():
            raise ArtifactError(
                f"external data {location!r} of tensor {tensor.name!r} is missing from {directory}"
            )
    return found


def load_model_bytes(directory: Path) -> bytes:
    model_path = safe_member(directory, "model.onnx")
    try:
        data = model_path.read_bytes()
    except OSError as e:
        raise ArtifactError(f"{model_path}: cannot read the graph ({e})") from e
    if check_external_data(directory, data):
        import onnx

        # Inline the (checked) external tensors so sessions built from bytes can run it.
        data = onnx.load(str(model_path), load_external_data=True).SerializeToString()
    return data


def _stored_outputs(directory: Path, files: list[str], names: list[str]) -> dict[str, np.ndarray]:
    return {name: load_array(directory, f) for name, f in zip(names, files, strict=False)}


def load_artifact_case(directory: Path) -> ArtifactCase:
    """The CaseInstance of an artifact directory (call after ``verify_manifest``)."""
    record = read_case_record(directory)
    try:
        inputs = {name: load_array(directory, rel) for name, rel in record["inputs"].items()}
        outputs: list[str] = list(record["outputs"])
        paths: dict[str, dict[str, Any]] = dict(record["paths"])
    except (KeyError, TypeError, AttributeError) as e:
        raise ArtifactError(f"{directory / 'case.json'}: missing field {e}") from e
    # Executed paths are re-run; every other path (a float64 formula, shipped expected
    # outputs) is reference data, taken from the artifact as stored.
    executed = {n: p for n, p in paths.items() if backends.is_backend(str(p.get("backend")))}
    label = record.get("expected_label") or next((n for n in paths if n not in executed), "")
    expected = exact = None
    if label and label in paths and paths[label].get("files") and not any(
            summary_of(directory, f) for f in paths[label]["files"]):
        # (Kept as summaries, over the evidence budget: its rows cannot be replayed.)
        expected = _stored_outputs(directory, paths[label]["files"], outputs)
        exact_files = [f"outputs/{label}-exact/output_{j}.npy" for j in range(len(outputs))]
        if all(has_member(directory, f) for f in exact_files):
            exact = _stored_outputs(directory, exact_files, outputs)
    levels = tuple(str(p.get("optimization") or n.removeprefix(ORT_PREFIX))
                   for n, p in executed.items() if p.get("backend") in backends.RUNTIMES)
    runtimes = tuple(dict.fromkeys(str(p["backend"]) for p in executed.values()
                                   if p["backend"] in backends.RUNTIMES))
    threads = max([int(p.get("threads") or p.get("settings", {}).get("intra_op_num_threads", 1))
                   for p in executed.values() if p.get("backend") in backends.RUNTIMES] or [1])
    tolerance = record.get("tolerance")
    case = CaseInstance(
        suite=record.get("suite", ""), case_id=record.get("case_id", ""),
        op_type=record.get("op_type", ""), case_name=record.get("case_name", ""),
        dtype=record.get("dtype", ""), seed=int(record.get("seed", -1)),
        model=load_model_bytes(directory), inputs=inputs, expected=expected,
        expected_label=label or "numpy-float64",
        expected_version=record.get("expected_version")
        or str(paths.get(label, {}).get("version", "")),
        expected_exact=exact,
        tolerance=(float(tolerance[0]), float(tolerance[1])) if tolerance else None,
        batch=record.get("batch", BATCH_NONE), contracts=tuple(record.get("contracts", ())),
        variants=tuple(record.get("variants", ())), spec_name=record.get("spec_name", ""),
    )
    return ArtifactCase(directory, case, record, levels, threads, runtimes or ("onnxruntime",))
