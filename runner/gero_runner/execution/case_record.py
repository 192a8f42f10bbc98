"""The evidence directory's skeleton, the same for every case source (operator cases, user
models, PyTorch parity samples): ``model.onnx``, ``inputs/``, each path's ``outputs/`` and
``case.json``, the record that replay rebuilds the case from (``evidence.rebuild``)."""

from __future__ import annotations

from typing import Any

from gero_runner.case import Arrays, CaseInstance
from gero_runner.execution.context import PathResult
from gero_runner.storage.artifacts import EvidenceWriter


def start_evidence(model: bytes | None, inputs: Arrays, budget: int | None = None
                   ) -> tuple[EvidenceWriter, dict[str, str]]:
    """A writer holding the model (when there is one) and the inputs, and each input's file
    by input name; ``budget``: the case's evidence budget (the inputs are kept whatever it
    is: a replay feeds them)."""
    writer = EvidenceWriter(budget)
    if model is not None:
        writer.add_bytes("model.onnx", model)
    input_files = {name: writer.add_array(f"inputs/input_{i}.npy", x, keep=True)
                   for i, (name, x) in enumerate(inputs.items())}
    return writer, input_files


def store_outputs(writer: EvidenceWriter, path: PathResult, keep: bool = False) -> None:
    """The path's outputs under ``outputs/NAME/``; ``path.files`` names them for case.json.
    ``keep``: stored whatever the budget (the case's expected outputs)."""
    if path.outputs is None:
        return
    path.files = [writer.add_array(f"outputs/{path.name}/output_{j}.npy", x, keep)
                  for j, x in enumerate(path.outputs)]


def add_case_record(writer: EvidenceWriter, case: CaseInstance, input_files: dict[str, str],
                    output_names: list[str], paths: dict[str, PathResult],
                    **extra: Any) -> None:
    """``case.json``: the case's identity, what replay needs to rebuild the CaseInstance,
    every path's settings, files and error, and the source's ``extra`` sections."""
    writer.add_json("case.json", {
        "suite": case.suite, "case_id": case.case_id, "op_type": case.op_type,
        "case_name": case.case_name, "dtype": case.dtype, "seed": case.seed,
        "inputs": input_files, "outputs": output_names,
        "expected_label": case.expected_label, "expected_version": case.expected_version,
        "tolerance": list(case.tolerance) if case.tolerance is not None else None,
        "batch": case.batch, "contracts": list(case.contracts),
        "variants": list(case.variants), "spec_name": case.spec_name,
        "paths": {name: {"backend": p.backend, "version": p.version,
                         "optimization": p.optimization, "threads": p.threads,
                         "settings": p.settings, "files": p.files, "error": p.error}
                  for name, p in paths.items()},
        # Only when the budget bit: every other case's record (and address) is unchanged.
        **({"evidence_budget": {"max_evidence_bytes": writer.budget,
                                "summarised": sorted(writer.summaries),
                                "omitted": writer.omitted}}
           if writer.summaries or writer.omitted else {}),
        **extra,
    })
