"""A localization's origin as a repro small enough to file: the origin's nodes alone, with
the real tensors that reached them, as an ONNX backend test directory that is also a gero
evidence directory (``gero replay DIR`` runs it again).

The region is run as ``gero run --model`` runs a model (its float64 shadow as the arbiter,
the two compared paths' runtimes at every setting), and the evidence directory that makes
is written to the target with the observation rows (``observations.json``) and
``localize.json`` (what was localized, and which of the repro's observations shows it),
all in its manifest.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.errors import GeroError
from gero_runner.evidence.localization import Localization
from gero_runner.evidence.rows import OBSERVATIONS_JSON, row_to_json
from gero_runner.process import scratch
from gero_runner.request import PATHS_ALL
from gero_runner.schema import Observation
from gero_runner.storage.artifacts import MANIFEST
from gero_runner.storage.hashing import sha256

LOCALIZE_JSON = "localize.json"
SHADOW_LABEL = "float64-shadow"
REFERENCE_LABEL = "localized-reference"
"""The expected outputs' label when the reference side is not the float64 shadow."""
SCRATCH_PREFIX, STAGING_PREFIX = "gero-repro-", ".gero-repro-"
"""The region's run in $TMPDIR, and the repro being written beside ``-o`` (each named after
this process, process.scratch)."""


def _declared(model: bytes, name: str, value: np.ndarray) -> np.dtype[Any]:
    """The dtype the region model declares for output ``name`` (the value's otherwise)."""
    import onnx

    for o in onnx.load_from_string(model).graph.output:
        if o.name == name and o.type.tensor_type.elem_type:
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type))
    return value.dtype


def _runtimes(loc: Localization, row: dict[str, Any]) -> tuple[str, ...]:
    names = [str(row.get("backend") or "")]
    names += [part for part in str(loc.reference).split(":") if part in backends.RUNTIMES]
    found = tuple(dict.fromkeys(n for n in names if n in backends.RUNTIMES))
    return found or ("onnxruntime",)


def _matching(rows: list[Observation], row: dict[str, Any], loc: Localization
              ) -> Observation | None:
    """The repro's observation that compares what the localized one compared."""
    same_path = [r for r in rows if r.backend == row.get("backend")
                 and r.optimization == row.get("optimization")]
    reference = str(loc.reference).split(":")
    for r in same_path:
        if r.check == row.get("check") and r.reference == row.get("reference"):
            return r
    for r in same_path:
        ref = str(r.reference).split(":")
        if ref[-2:] == reference[-2:] or r.reference == reference[-1]:
            return r
    diverging = [r for r in same_path if r.result != "passed"]
    return diverging[0] if diverging else (same_path[0] if same_path else None)


def write_repro(output: Path, model: bytes, feeds: dict[str, np.ndarray],
                expected: dict[str, np.ndarray], loc: Localization, row: dict[str, Any],
                timeout_s: float, reuse_root: str = "") -> None:
    """Write the repro directory (see the module docstring): the region ``model`` fed
    ``feeds`` (the reference side's values in the path's own types), its ``expected``
    outputs the reference side's own alone-outputs (computed from its unrounded values:
    a float64 shadow run on the rounded inputs would hide a cancellation that rounding
    causes); raises GeroError when the region cannot be run as a case. With ``reuse_root``
    (the localized run's data root), the region's paths reuse the outputs that root kept
    for the same region, feeds, settings and runtime version, and keep theirs there: the
    same repro written again runs nothing twice."""
    from gero_runner.case import CaseInstance, ModelChecks
    from gero_runner.checks.task import evaluate_case
    from gero_runner.execution.context import RunSettings

    origin = loc.origins[0]
    label = SHADOW_LABEL if loc.reference == SHADOW_LABEL else REFERENCE_LABEL
    first = next((x for x in feeds.values() if x.dtype.kind == "f"), None)
    out_dtype = {k: _declared(model, k, v) for k, v in expected.items()}
    with np.errstate(over="ignore", invalid="ignore"):  # a float16 overflow is the finding
        rounded = {k: v.astype(out_dtype[k]) if v.dtype.kind == "f" else v
                   for k, v in expected.items()}
    case = CaseInstance(
        suite="model", case_id=f"model/localize/{origin.node}", op_type=origin.op_type,
        case_name=f"{origin.node} alone, from {loc.case_id}",
        dtype=str(first.dtype) if first is not None else "float32", seed=-1, model=model,
        inputs=feeds,
        expected=rounded,
        expected_label=label, expected_version=str(loc.reference),
        expected_exact=dict(expected), model_checks=ModelChecks(), reference_repeats=1)
    # Named after this process: what a kill -9 leaves, the next localization removes.
    with scratch.directory(SCRATCH_PREFIX) as work:
        runtimes = _runtimes(loc, row)
        settings = RunSettings(data_root=str(work / "data"), backends=runtimes,
                               threads=max(1, int(row.get("threads") or 1)), repeats=1,
                               checks=(), reuse_root=reuse_root)
        # Every setting: the localized row's own may be one the default plan leaves out.
        rows = evaluate_case(case, settings, PATHS_ALL).rows
        if not rows or not rows[0].artifact_path:
            raise GeroError(f"-o {output}: the origin's nodes could not be run as a case "
                            f"({rows[0].reason if rows else 'no observation'})")
        artifact = work / "data" / rows[0].artifact_path
        matching = _matching(rows, row, loc)
        extra = {
            OBSERVATIONS_JSON: json.dumps([row_to_json(r) for r in rows], indent=2,
                                          sort_keys=True).encode(),
            LOCALIZE_JSON: json.dumps({
                "localized_observation": loc.observation_id, "case_id": loc.case_id,
                "check": loc.check, "actual": loc.actual, "reference": loc.reference,
                "origin": origin.node, "op_type": origin.op_type, "tensor": origin.tensor,
                "nodes": origin.nodes, "local_scaled_error": origin.local_scaled_error,
                "inputs_scaled_error": origin.inputs_scaled_error,
                "repro_observation": matching.observation_id if matching else None,
                "repro_result": matching.result if matching else None,
                "repro_reason": matching.reason if matching else None,
                "expected": label, "replay_command": f"gero replay {output}",
            }, indent=2, sort_keys=True, default=float).encode(),
        }
        manifest = json.loads((artifact / MANIFEST).read_text())
        manifest["files"].update({k: sha256(v) for k, v in extra.items()})
        output.parent.mkdir(parents=True, exist_ok=True)
        staging = scratch.make(STAGING_PREFIX, output.parent)
        try:
            shutil.copytree(artifact, staging, dirs_exist_ok=True)
            for k, v in extra.items():
                (staging / k).write_bytes(v)
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
            if output.exists():
                output.rmdir()  # empty: checked by the caller
            staging.rename(output)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
