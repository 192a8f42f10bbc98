"""The observation table and the run record: the one contract between runner and explorer.

The runner writes rows with exactly these columns; the explorer, export and diff read
them. Adding a column means adding it here, with its type and a one-line meaning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, Final

import pyarrow as pa

from gero_runner.distribution import DISTRIBUTION_COLUMNS
from gero_runner.facts import FACT_COLUMNS, VARIANT_FILES
from gero_runner.result_classes import (
    CONTRACT_ISSUE,
    DIVERGENCE,
    EXECUTION,
    PASSED,
    RESULT_CLASSES,
    RESULT_LABELS,
)

SCHEMA_VERSION: Final = 5
"""2 added the error distribution (``gero_runner.distribution``), 3 the facts of a verdict
(``gero_runner.facts``), 4 its kind of failure, 5 its scope, cause key, note and figures: files written before lack those columns,
and every reader reads them as NULL (the findings derive the facts of such rows from their
reason)."""

# The result classes live in a module of their own (no pyarrow); re-exported here.
__all__ = ["CONTRACT_ISSUE", "DIVERGENCE", "EXECUTION", "PASSED", "RESULT_CLASSES",
           "RESULT_LABELS"]

MODEL_VARIANTS: Final = VARIANT_FILES
"""The variant files a model case builds (``models.variants``); rows name them in their
check (``model:VARIANT``, ``model:VARIANT:GATE``) and in failed paths (``VARIANT:PATH``)."""


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    identity: bool = False
    """Part of the content hash: two rows equal on identity columns are the same observation."""


_C = Column
OBSERVATION_COLUMNS: Final[tuple[Column, ...]] = (
    _C("observation_id", pa.string(), "SHA-256 of the identity columns (hex)"),
    _C("run_id", pa.string(), "run that first recorded this observation"),
    _C("suite", pa.string(), "synthetic | onnx-backend | models | model | parity", True),
    _C("case_id", pa.string(), "stable id of the case: suite/op/name/dtype", True),
    _C("op_type", pa.string(), "ONNX operator (or model name) under test", True),
    _C("case_name", pa.string(), "human name of the case (shape, edge values)", True),
    _C("check", pa.string(),
       "agreement | levels | analytic | expected | variant:NAME | contract:NAME | model:NAME",
       True),
    _C("dtype", pa.string(), "element type of the compared output", True),
    _C("input_shapes", pa.string(), "shapes of the graph inputs, e.g. '[2,3];[3]'", True),
    _C("output_name", pa.string(), "graph output compared", True),
    _C("backend", pa.string(), "path under test: onnxruntime | onnx-reference | ...", True),
    _C("backend_version", pa.string(), "version of the path under test", True),
    _C("optimization", pa.string(),
       "the runtime's setting: ORT level, OpenVINO precision, tract optimiser; '-' if none",
       True),
    _C("threads", pa.int32(), "intra-op threads of the path under test (0 = not applicable)", True),
    _C("reference", pa.string(), "path the output is compared with", True),
    _C("reference_version", pa.string(), "version of the reference path", True),
    _C("rtol", pa.float64(), "relative tolerance actually used", True),
    _C("atol", pa.float64(), "absolute tolerance actually used", True),
    _C("max_abs_error", pa.float64(), "max |a - r| over finite pairs"),
    _C("max_rel_error", pa.float64(), "max |a - r| / |r| over r != 0"),
    _C("max_ulp", pa.float64(), "max distance in units in the last place of the dtype"),
    _C("scaled_error", pa.float64(), "max|a - r| / max|r|"),
    _C("floored_rel_error", pa.float64(), "max |a - r| / max(|r|, 1e-3 max|r|)"),
    *(_C(name, pa.float64(), doc) for name, doc in DISTRIBUTION_COLUMNS),
    _C("mismatch_count", pa.int64(), "elements outside tolerance (non-finite mismatches included)"),
    _C("element_count", pa.int64(), "elements compared"),
    _C("nan_actual", pa.int64(), "NaN elements in the actual output"),
    _C("inf_actual", pa.int64(), "±inf elements in the actual output"),
    _C("nan_reference", pa.int64(), "NaN elements in the reference output"),
    _C("inf_reference", pa.int64(), "±inf elements in the reference output"),
    _C("min_atol", pa.float64(), "smallest atol that passes at the rtol used"),
    _C("min_rtol", pa.float64(), "smallest rtol that passes at the atol used"),
    _C("bit_exact", pa.bool_(), "actual and reference are identical bit for bit"),
    _C("result", pa.string(), "passed | divergence | contract_issue | execution", True),
    _C("reason", pa.string(), "one sentence saying why this result", True),
    _C("arbiter", pa.string(),
       "on a disagreement: which side float64 is closer to at the out-of-tolerance elements "
       "(actual | reference | tie | -); part of the verdict, so of the identity", True),
    _C("actual_hash", pa.string(), "SHA-256 of the actual output bytes", True),
    _C("reference_hash", pa.string(), "SHA-256 of the reference output bytes", True),
    _C("graph_hash", pa.string(), "SHA-256 of the serialised model", True),
    _C("input_hash", pa.string(), "SHA-256 over all input tensors", True),
    _C("seed", pa.int64(), "seed of the input generator (-1 when inputs were given)", True),
    _C("artifact_path", pa.string(), "evidence directory, relative to the data root"),
    _C("actual_file", pa.string(), "actual output inside the artifact directory"),
    _C("reference_file", pa.string(), "reference output inside the artifact directory"),
    _C("actual_median_ms", pa.float64(), "median time of the path under test (ms)"),
    _C("reference_median_ms", pa.float64(), "median time of the reference path (ms)"),
    _C("repeats", pa.int32(), "timed repetitions behind each median"),
    _C("session_settings", pa.string(),
       "JSON: the path's settings, enough to rebuild its session (provider, level, threads, "
       "inference precision, ...)", True),
    _C("details", pa.string(), "JSON: check-specific figures (contract sides, model metrics)"),
    *(_C(name, pa.string(), doc) for name, doc in FACT_COLUMNS),
    _C("created_at", pa.timestamp("us", tz="UTC"), "when the observation was first made"),
)

OBSERVATION_SCHEMA: Final = pa.schema(
    [pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in OBSERVATION_COLUMNS],
    metadata={"gero.schema_version": str(SCHEMA_VERSION)},
)
COLUMN_NAMES: Final = tuple(c.name for c in OBSERVATION_COLUMNS)
IDENTITY_COLUMNS: Final = tuple(c.name for c in OBSERVATION_COLUMNS if c.identity)

@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One observation row, typed: the fields are ``COLUMN_NAMES`` in order (a test holds
    them equal). The metric fields' defaults are a row without a comparison (a path failed):
    NaN errors, zero counts."""

    observation_id: str = ""
    """Set by ``execution.evaluate.finish_row`` from the identity columns."""
    run_id: str | None = None
    """Set by the parent when it stores the run."""
    suite: str
    case_id: str
    op_type: str
    case_name: str
    check: str
    dtype: str
    input_shapes: str
    output_name: str
    backend: str
    backend_version: str
    optimization: str
    threads: int
    reference: str
    reference_version: str
    rtol: float
    atol: float
    max_abs_error: float = math.nan
    max_rel_error: float = math.nan
    max_ulp: float = math.nan
    scaled_error: float = math.nan
    floored_rel_error: float = math.nan
    mean_abs_error: float = math.nan
    median_abs_error: float = math.nan
    p90_abs_error: float = math.nan
    p99_abs_error: float = math.nan
    mean_scaled_error: float = math.nan
    median_scaled_error: float = math.nan
    p90_scaled_error: float = math.nan
    p99_scaled_error: float = math.nan
    mismatch_count: int = 0
    element_count: int = 0
    nan_actual: int = 0
    inf_actual: int = 0
    nan_reference: int = 0
    inf_reference: int = 0
    min_atol: float = math.nan
    min_rtol: float = math.nan
    bit_exact: bool = False
    result: str
    reason: str
    arbiter: str = "-"
    actual_hash: str = ""
    reference_hash: str = ""
    graph_hash: str
    input_hash: str
    seed: int
    artifact_path: str = ""
    actual_file: str = ""
    reference_file: str = ""
    actual_median_ms: float = math.nan
    reference_median_ms: float = math.nan
    repeats: int = 0
    session_settings: str = "{}"
    details: str = "{}"
    failed_path: str = ""
    cause: str = ""
    failure_kind: str = ""
    scope: str = ""
    cause_key: str = ""
    note: str = ""
    figures: str = ""
    created_at: datetime | None = None
    """Set by the parent when it stores the run."""

    def get(self, name: str, default: Any = None) -> Any:
        """A column by name (``row_hash`` and readers of dict rows use this)."""
        return getattr(self, name, default)

    def __getitem__(self, name: str) -> Any:
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(name) from None

    def as_dict(self) -> dict[str, Any]:
        """The row as ``{column: value}``, in column order."""
        return {name: getattr(self, name) for name in OBSERVATION_FIELDS}


OBSERVATION_FIELDS: Final = tuple(f.name for f in fields(Observation))
_REQUIRED_FIELDS: Final = tuple(f.name for f in fields(Observation)
                                if f.default is MISSING and f.default_factory is MISSING)


def observation_from_row(row: Mapping[str, Any]) -> Observation:
    """A row read back (Parquet, DuckDB, JSON) as an Observation: a column this schema does not
    name is dropped, one it lacks takes its default; ValueError names the lacking columns
    that have none."""
    missing = [name for name in _REQUIRED_FIELDS if name not in row]
    if missing:
        raise ValueError(f"the row lacks the column(s) {', '.join(missing)}")
    return Observation(**{k: v for k, v in row.items() if k in OBSERVATION_FIELDS})


# One row per observation per run that saw it: repeated identical observations are stored
# once in the observation table, and each sighting (with its own timings) here.
SIGHTING_SCHEMA: Final = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("observation_id", pa.string()),
        pa.field("actual_median_ms", pa.float64()),
        pa.field("reference_median_ms", pa.float64()),
        pa.field("seen_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class RunRecord:
    """What a run was: where, with which versions, settings and outcome counts."""

    run_id: str
    started_at: str
    finished_at: str
    status: str  # complete | interrupted | failed
    suite: str
    command_line: str
    seed: int
    jobs: int
    threads: int
    cpu_model: str
    python_version: str
    numpy_version: str
    onnx_version: str
    onnxruntime_version: str
    tolerances: dict[str, dict[str, float]]
    case_count: int
    observation_count: int
    new_observation_count: int
    counts: dict[str, int]
    wall_seconds: float
    backend_seconds: float
    evidence_seconds: float = 0.0
    """Summed over workers: writing evidence directories and hashing observation ids."""
    store_seconds: float = 0.0
    """In the parent: deduplicating and preparing the rows (before the Parquet write)."""
    case_seconds: float = 0.0
    """Summed over workers: evaluating cases, backends, checks and evidence together."""
    models: list[str] = field(default_factory=list)
    """The model files of a ``--model`` run (absolute paths)."""
    backends: dict[str, str] = field(default_factory=dict)
    """Runtimes under test and the ReferenceEvaluator: name -> version."""
    gero_version: str = ""
    """The gero that started the run (``--resume`` refuses another)."""
