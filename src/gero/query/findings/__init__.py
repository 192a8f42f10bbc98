"""Findings: the run's non-passed observations grouped by cause, computed in DuckDB.

A finding is what a person would name in one sentence ("ONNX Runtime has no float64
kernel", "the ReferenceEvaluator's float16 LayerNormalization is off", "OpenVINO computes
float64 in f32"). Its signature is

- the check family: ``numeric`` (agreement, analytic, expected and levels rows of a case
  read together), ``execution``, or the contract / variant check itself; a law or variant
  that a runtime breaks in a case where its outputs are already off joins ``numeric``;
- the outlier: the path each row blames (its own, or for an agreement or levels row the
  side float64 does not side with; a reference that failed), grouped per case by runtime:
  ``onnxruntime`` when every level it ran is off, ``onnxruntime@extended,all`` when some
  are; ``every path`` when every runtime that ran the case is blamed. So a case can hold
  two causes (the ReferenceEvaluator's Erf defect and OpenVINO's float32 arithmetic);
- the reason's template: for comparisons its kind (finite values out of tolerance; NaN or
  inf on the blamed side only; finite where the other side is not; a registered upstream
  defect), for laws their sentence without figures, for failures the message with numbers,
  names, shapes and element types taken out (a chained error by its root cause);
- the operator, except where the cause is shared across operators: a failure message, NaN
  fed to every path, a registered defect, a runtime whose settings compute the dtype in
  fewer bits (OpenVINO's ``inference_precision``), a runtime's non-finite outputs.

Every non-passed observation belongs to one finding (a row that hits two registered
defects, to each defect's: one defect, one finding): the members table
``finding_members`` (observation id, finding id) is written into the run's DuckDB
database, so the explorer filters and groups by finding without loading rows into Python.
The finding id is a hash of the signature: the same cause has the same id in every run,
whichever other runtimes ran beside it.

The package, by responsibility: ``model`` (the signature's words, the dataclasses, their
order), ``members`` (the grouping, as named SQL stages composed in order, each testable
alone), ``read`` (findings read back from the members table), ``titles`` (titles as data),
``cache`` (a run's findings kept under the data root) and ``compute`` (computed once per
run). Against a baseline: ``gero.query.finding_status``.
"""

from gero.query.findings.cache import ALGORITHM, CACHE_DIR, cache_files
from gero.query.findings.compute import compute_findings, compute_findings_fresh, ensure_members
from gero.query.findings.members import build_members, has_members, members_sql
from gero.query.findings.model import (
    BUILD_FAILED,
    GERO_LIMIT,
    LOWER_PRECISION,
    MEMBERS_TABLE,
    NAN_TEMPLATE,
    NONFINITE,
    NUMERIC_CHECKS,
    ORDER_TABLE,
    OUTSIDE,
    PAIR,
    SWALLOWED,
    VARIANT_TOOLING,
    WIDENS_FP16,
    Finding,
    FindingsReport,
    Queryable,
    Representative,
    finding_order,
    findings_json,
)
from gero.query.findings.read import non_passed_count, read_findings
from gero.query.findings.titles import SEEDED, path_name, with_title

__all__ = [
    "ALGORITHM",
    "BUILD_FAILED",
    "CACHE_DIR",
    "GERO_LIMIT",
    "LOWER_PRECISION",
    "MEMBERS_TABLE",
    "NAN_TEMPLATE",
    "NONFINITE",
    "NUMERIC_CHECKS",
    "ORDER_TABLE",
    "OUTSIDE",
    "PAIR",
    "SEEDED",
    "SWALLOWED",
    "VARIANT_TOOLING",
    "WIDENS_FP16",
    "Finding",
    "FindingsReport",
    "Queryable",
    "Representative",
    "build_members",
    "cache_files",
    "compute_findings",
    "compute_findings_fresh",
    "ensure_members",
    "finding_order",
    "findings_json",
    "has_members",
    "members_sql",
    "non_passed_count",
    "path_name",
    "read_findings",
    "with_title",
]
