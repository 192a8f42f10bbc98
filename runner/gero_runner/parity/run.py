"""A parity run: build the module, evaluate each seeded sample, store a gero run.

The run is written exactly like ``gero run`` writes one (``gero_runner.run.store_results``: new
observations, sightings, run.json with suite ``parity``), so summary, export, diff and the
explorer read it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gero_runner.errors import GeroError
from gero_runner.execution.pool import Outcome
from gero_runner.metrics.parity import ParityTolerances
from gero_runner.parity.evaluate import SUITE, ParitySettings, evaluate_sample
from gero_runner.parity.export import DEFAULT_OPSET, OPSETS
from gero_runner.parity.module import InputSpec, load_module
from gero_runner.parity.torch_support import require_torch
from gero_runner.run import allocate_run_id, store_results
from gero_runner.schema import Observation, RunRecord
from gero_runner.storage.store import DataRoot
from gero_runner.tolerances import ToleranceTable


@dataclass
class ParityRequest:
    """What ``gero parity`` was asked to do."""

    module: str
    inputs: list[InputSpec]
    data_root: Path = Path("data")
    checkpoint: Path | None = None
    onnx: Path | None = None
    output_kinds: dict[str, str] = field(default_factory=dict)
    tolerances: ParityTolerances = field(default_factory=ParityTolerances)
    samples: int = 1
    """Seeded input samples fed to both runtimes (``--max-pairs``)."""
    seed: int = 0
    threads: int = 1
    repeats: int = 3
    opset: int = DEFAULT_OPSET
    run_id: str | None = None
    command_line: str = ""
    search_path: Path | None = None
    """Put first on sys.path before importing the module (the CLI passes the cwd)."""


@dataclass
class ParityResult:
    record: RunRecord
    rows: list[Observation]
    """Every observation of this run (new or seen before), in evaluation order."""


def run_parity(request: ParityRequest,
               warn: Callable[[str], None] | None = None) -> ParityResult:
    """Evaluate every sample and store the run; GeroError on bad input."""

    if request.samples < 1:
        raise GeroError(f"--max-pairs must be at least 1, got {request.samples}")
    if request.opset not in OPSETS:
        raise GeroError(f"--opset {request.opset} is not supported; choose from "
                        f"{', '.join(str(o) for o in OPSETS)}")
    if request.threads < 1 or request.repeats < 1:
        raise GeroError("--threads and --repeats must be at least 1")
    onnx_model = None
    if request.onnx is not None:
        if not request.onnx.is_file():
            raise GeroError(f"--onnx {request.onnx}: no such file")
        onnx_model = _read_onnx(request.onnx)
    started = datetime.now(UTC)
    root = DataRoot(request.data_root)
    run_id = allocate_run_id(root, request.run_id, started)

    torch = require_torch()
    torch.set_num_threads(request.threads)
    module = load_module(request.module, request.checkpoint, request.search_path)
    settings = ParitySettings(data_root=str(request.data_root), tolerances=request.tolerances,
                              output_kinds=dict(request.output_kinds), threads=request.threads,
                              repeats=request.repeats, opset=request.opset)
    results: dict[int, Outcome] = {}
    for sample in range(request.samples):
        result = evaluate_sample(module, request.module, request.inputs, sample,
                                 request.seed + sample, onnx_model, settings)
        results[sample] = Outcome(sample, result)

    dtypes = sorted({str(r["dtype"]) for o in results.values() for r in o.result.rows
                     if str(r["dtype"]).startswith("float")})
    table = ToleranceTable({d: (request.tolerances.rtol, request.tolerances.atol)
                            for d in dtypes})
    record = store_results(root, run_id, suite=SUITE, command_line=request.command_line,
                           seed=request.seed, jobs=1, threads=request.threads,
                           started=started, status="complete",
                           results=results, table=table, warn=warn)
    rows = [r for i in sorted(results) for r in results[i].result.rows]
    return ParityResult(record, rows)


def _read_onnx(path: Path) -> bytes:
    """The model's bytes with any external data inlined (the evidence must be self-contained)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=True)
    except Exception as e:  # onnx raises DecodeError and friends
        raise GeroError(f"--onnx {path}: not a readable ONNX model ({e})") from e
    return model.SerializeToString()
