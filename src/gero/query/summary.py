"""Per-run figures: counts per result class, per-operation outcomes and timings."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gero_runner.schema import RESULT_CLASSES
from gero_runner.storage.reader import OpenRun


@dataclass(frozen=True)
class OperationSummary:
    op_type: str
    passed: int
    divergence: int
    contract_issue: int
    execution: int
    measured_pairs: int
    """Cases where both ONNX Runtime and the ReferenceEvaluator produced a timing."""
    runtime_median_ms: float | None
    reference_median_ms: float | None
    max_abs_error: float | None


def class_counts(view: OpenRun) -> dict[str, int]:
    counts = dict.fromkeys(RESULT_CLASSES, 0)
    for result, n in view.query("SELECT result, count(*) FROM obs GROUP BY result"):
        counts[result] = n
    return counts


# Median of per-case medians over rows timing ONNX Runtime against a timed reference path
# (the ReferenceEvaluator, or PyTorch for parity runs).
_OPERATIONS_SQL = """
WITH per_case AS (
    SELECT op_type, case_id,
           median(actual_median_ms) AS runtime_ms,
           median(reference_median_ms) AS reference_ms
    FROM obs
    WHERE "check" IN ('agreement', 'expected') AND backend = 'onnxruntime'
      AND isfinite(actual_median_ms) AND isfinite(reference_median_ms)
    GROUP BY op_type, case_id
), outcomes AS (
    SELECT op_type,
           count(*) FILTER (WHERE result = 'passed') AS passed,
           count(*) FILTER (WHERE result = 'divergence') AS divergence,
           count(*) FILTER (WHERE result = 'contract_issue') AS contract_issue,
           count(*) FILTER (WHERE result = 'execution') AS execution,
           max(max_abs_error) FILTER (WHERE isfinite(max_abs_error)) AS max_abs_error
    FROM obs GROUP BY op_type
)
SELECT o.op_type, o.passed, o.divergence, o.contract_issue, o.execution,
       count(p.case_id) AS measured_pairs,
       median(p.runtime_ms) AS runtime_median_ms,
       median(p.reference_ms) AS reference_median_ms,
       o.max_abs_error
FROM outcomes o LEFT JOIN per_case p USING (op_type)
GROUP BY ALL
ORDER BY o.op_type
"""


def operations(view: OpenRun) -> list[OperationSummary]:
    return [OperationSummary(*row) for row in view.query(_OPERATIONS_SQL)]


def runtime_medians(view: OpenRun) -> dict[str, dict[str, float]]:
    """Per operation, each runtime's median over cases of its per-case median inference time
    (ms), on its comparison rows (every setting together), runtimes by name."""
    rows = view.query("""
        WITH per_case AS (
            SELECT op_type, backend, case_id, median(actual_median_ms) AS ms
            FROM obs
            WHERE "check" IN ('agreement', 'analytic', 'expected')
              AND backend <> 'onnx-reference' AND isfinite(actual_median_ms)
            GROUP BY ALL
        )
        SELECT op_type, backend, median(ms) FROM per_case GROUP BY op_type, backend
        ORDER BY op_type, backend""")
    out: dict[str, dict[str, float]] = {}
    for op, backend, ms in rows:
        out.setdefault(str(op), {})[str(backend)] = float(ms)
    return out


def check_outcomes(view: OpenRun) -> list[tuple[str, str, int, int]]:
    """Per operator (or model) and contract, variant or model-level check:
    (op_type, check, passed, not passed)."""
    rows = view.query(
        """SELECT op_type, "check", count(*) FILTER (WHERE result = 'passed'),
                  count(*) FILTER (WHERE result <> 'passed')
           FROM obs WHERE "check" LIKE 'contract:%' OR "check" LIKE 'variant:%'
                       OR "check" LIKE 'model:%' OR "check" LIKE 'parity:%'
           GROUP BY ALL ORDER BY op_type, "check" """
    )
    return [(str(a), str(b), int(c), int(d)) for a, b, c, d in rows]


def seeded_inputs(view: OpenRun) -> list[dict[str, str]]:
    """Model cases fed gero's seeded default inputs (models.inputs marks them '(default)'),
    with what they were fed: their verdicts rest on noise, not on the user's data."""
    rows = view.query(
        """SELECT op_type, any_value(json_extract_string(details, '$.inputs'))
           FROM obs WHERE suite = 'model' AND contains(details, '(default)')
           GROUP BY op_type ORDER BY op_type""")
    return [{"model": str(m), "inputs": str(t)} for m, t in rows]


def summary_dict(view: OpenRun) -> dict[str, Any]:
    from gero.query.assessable import split_counts
    from gero.query.plan_notes import not_run, notes
    from gero.query.runtimes import runtimes_dict
    from gero.query.verdicts import verdicts

    record = view.record()
    by_runtime = runtime_medians(view)
    return {
        "runtimes": runtimes_dict(view),
        "run": record,
        "counts": class_counts(view),
        # the non-passed counts split: to act on, and what cannot be assessed (apart)
        **split_counts(view).as_dict(),
        "operations": [{**asdict(o), "runtime_median_ms_by_backend": by_runtime.get(o.op_type, {})}
                       for o in operations(view)],
        "checks": [
            {"op_type": a, "check": b, "passed": c, "not_passed": d}
            for a, b, c, d in check_outcomes(view)
        ],
        "problems": view.problems,
        "seeded_inputs": seeded_inputs(view),
        # one entry per model case, runtime setting and file (gero verdict)
        "verdicts": [v.as_dict() for v in verdicts(view)],
        # shown, counted in no class: the settings the plan left out (why), the rows' notes
        "not_run": not_run(view),
        "notes": notes(view),
    }
