"""Across runtimes: the conformance matrix, lower-precision settings, findings unique to one
runtime, and each runtime's session build and run times (context, not a ranking)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gero_runner.schema import RESULT_CLASSES
from gero_runner.storage.reader import OpenRun

REFERENCE = "onnx-reference"
# Comparisons of a path's own output with the reference or expected outputs: the rows a
# runtime's conformance is counted on (contracts and variants are other families).
_COMPARISONS = "('agreement', 'analytic', 'expected')"
# Element types by width, for "computes in a lower precision than the model declares".
_WIDTH = {"bf16": 16, "f16": 16, "float16": 16, "bfloat16": 16, "f32": 32, "float32": 32,
          "f64": 64, "float64": 64}


@dataclass(frozen=True)
class MatrixRow:
    """Counts per result class of one runtime setting on one suite's comparisons."""

    suite: str
    backend: str
    optimization: str
    passed: int
    divergence: int
    contract_issue: int
    execution: int


def matrix(view: OpenRun) -> list[MatrixRow]:
    rows = view.query(f"""
        SELECT suite, backend, optimization,
               count(*) FILTER (WHERE result = 'passed'),
               count(*) FILTER (WHERE result = 'divergence'),
               count(*) FILTER (WHERE result = 'contract_issue'),
               count(*) FILTER (WHERE result = 'execution')
        FROM obs WHERE "check" IN {_COMPARISONS}
        GROUP BY suite, backend, optimization
        ORDER BY suite, backend = '{REFERENCE}', backend, optimization""")
    return [MatrixRow(*r) for r in rows]


@dataclass(frozen=True)
class LowerPrecision:
    """A runtime setting that computes a model's tensors in fewer bits than they declare."""

    backend: str
    optimization: str
    precision: str
    dtype: str
    observations: int
    not_passed: int


def lower_precision(view: OpenRun) -> list[LowerPrecision]:
    rows = view.query(f"""
        SELECT backend, optimization,
               json_extract_string(session_settings, '$.inference_precision') AS precision,
               dtype, count(*), count(*) FILTER (WHERE result <> 'passed')
        FROM obs WHERE "check" IN {_COMPARISONS} AND precision IS NOT NULL
        GROUP BY ALL ORDER BY backend, optimization, dtype""")
    settings = [LowerPrecision(*r) for r in rows]
    return [s for s in settings if _WIDTH.get(str(s.precision), 64) < _WIDTH.get(str(s.dtype), 0)]


@dataclass(frozen=True)
class UniqueFinding:
    """Comparisons (case and output) that fail on every setting of one runtime while every
    other runtime that ran them passes, grouped by operation."""

    backend: str
    op_type: str
    outputs: int
    """Case outputs where only this runtime does not pass."""
    result: str
    """The most frequent non-passed class among them."""
    max_abs_error: float | None
    example: str
    """One such case id, and the reason of its row."""


def unique_findings(view: OpenRun) -> list[UniqueFinding]:
    rows = view.query(f"""
        WITH per_runtime AS (
            SELECT case_id, op_type, "check", output_name, backend,
                   bool_and(result <> 'passed') AS failed,
                   bool_and(result = 'passed') AS passed,
                   mode(result) FILTER (WHERE result <> 'passed') AS result,
                   max(max_abs_error) FILTER (WHERE isfinite(max_abs_error)) AS error,
                   min(case_id || ': ' || reason) FILTER (WHERE result <> 'passed') AS example
            FROM obs
            WHERE "check" IN {_COMPARISONS} AND backend <> '{REFERENCE}'
            GROUP BY ALL
        ), alone AS (
            SELECT r.* FROM per_runtime r
            WHERE r.failed
              AND EXISTS (SELECT 1 FROM per_runtime o
                          WHERE o.case_id = r.case_id AND o."check" = r."check"
                            AND o.output_name = r.output_name AND o.backend <> r.backend)
              AND NOT EXISTS (SELECT 1 FROM per_runtime o
                              WHERE o.case_id = r.case_id AND o."check" = r."check"
                                AND o.output_name = r.output_name
                                AND o.backend <> r.backend AND NOT o.passed)
        )
        SELECT backend, op_type, count(DISTINCT case_id || '/' || output_name),
               mode(result), max(error), min(example)
        FROM alone GROUP BY ALL ORDER BY backend, count(*) DESC, op_type""")
    return [UniqueFinding(*r) for r in rows]


@dataclass(frozen=True)
class RuntimeTiming:
    backend: str
    optimization: str
    cases: int
    build_median_ms: float | None
    """Median over cases of building the session."""
    run_median_ms: float | None
    """Median over cases of the per-case median inference time."""


def timings(view: OpenRun) -> list[RuntimeTiming]:
    rows = view.query(f"""
        WITH per_case AS (
            SELECT backend, optimization, case_id,
                   median(TRY_CAST(json_extract(details, '$.build_ms') AS DOUBLE)) AS build_ms,
                   median(actual_median_ms) AS run_ms
            FROM obs WHERE "check" IN {_COMPARISONS} AND isfinite(actual_median_ms)
            GROUP BY ALL
        )
        SELECT backend, optimization, count(*), median(build_ms), median(run_ms)
        FROM per_case GROUP BY backend, optimization
        ORDER BY backend = '{REFERENCE}', backend, optimization""")
    return [RuntimeTiming(*r) for r in rows]


def runtimes_dict(view: OpenRun) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "matrix": [asdict(r) for r in matrix(view)],
        "lower_precision": [asdict(r) for r in lower_precision(view)],
        "unique_findings": [asdict(r) for r in unique_findings(view)],
        "timings": [asdict(r) for r in timings(view)],
        "classes": list(RESULT_CLASSES),
    }


def operation_runtimes(view: OpenRun) -> list[tuple[str, str, dict[str, int]]]:
    """Per operation and runtime (the ReferenceEvaluator included), counts per class; empty
    when the run has one runtime under test (the per-operation bars then say it all)."""
    rows = view.query("""
        SELECT op_type, backend,
               count(*) FILTER (WHERE result = 'passed'),
               count(*) FILTER (WHERE result = 'divergence'),
               count(*) FILTER (WHERE result = 'contract_issue'),
               count(*) FILTER (WHERE result = 'execution')
        FROM obs GROUP BY op_type, backend ORDER BY op_type, backend = ?, backend""",
                      [REFERENCE])
    if len({str(r[1]) for r in rows} - {REFERENCE}) < 2:
        return []
    return [(str(op), str(backend), dict(zip(RESULT_CLASSES, map(int, counts), strict=True)))
            for op, backend, *counts in rows]
