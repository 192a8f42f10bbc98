"""The words every layer shares: the four result classes (display order, labels and one
severity order) and the check names, their families and which of them compare outputs.

Only the standard library, so that the explorer and the query layer name them without the
schema module (which imports pyarrow, ~0.2 s before the first paint); ``schema`` re-exports
them for the runner.
"""

from __future__ import annotations

from typing import Final

PASSED: Final = "passed"
DIVERGENCE: Final = "divergence"
CONTRACT_ISSUE: Final = "contract_issue"
EXECUTION: Final = "execution"
RESULT_CLASSES: Final = (PASSED, DIVERGENCE, CONTRACT_ISSUE, EXECUTION)

# Labels from the product's landing page.
RESULT_LABELS: Final = {
    PASSED: "Within contract",
    DIVERGENCE: "Backend divergences",
    CONTRACT_ISSUE: "Contract issue",
    EXECUTION: "Execution / unsupported",
}
RESULT_WORDS: Final = {
    PASSED: "passed", DIVERGENCE: "divergence", CONTRACT_ISSUE: "contract",
    EXECUTION: "execution",
}
"""One word a class, where the explorer names a row's class (table cells, the filter bar)."""
RESULT_ABBREVIATIONS: Final = {
    PASSED: "pass", DIVERGENCE: "div", CONTRACT_ISSUE: "contr", EXECUTION: "exec",
}
"""Five letters at most, for narrow columns and headers."""

SEVERITY: Final = {PASSED: 0, EXECUTION: 1, DIVERGENCE: 2, CONTRACT_ISSUE: 3}
"""How bad a class is: the one order of every "worst" gero picks (a grouped table row, a
finding's representative, the findings' and an export's order). A broken law or a
non-finite output first, then a divergence, then what could not run or be assessed."""


def severity_sql(column: str = "result") -> str:
    """``SEVERITY`` of the result class in ``column``, as a SQL expression (0 to 3)."""
    cases = " ".join(f"WHEN '{k}' THEN {v}" for k, v in SEVERITY.items() if v)
    return f"CASE {column} {cases} ELSE 0 END"


# Check names. The four below compare two paths' stored outputs element by element (so a
# replay can recompute them under each row's own tolerance); the others are prefixed by
# their family.
AGREEMENT: Final = "agreement"
"""Each runtime setting against the ReferenceEvaluator."""
LEVELS: Final = "levels"
"""Each setting of a runtime against its first (a graph rewrite's own difference)."""
ANALYTIC: Final = "analytic"
"""Against the operator's float64 formula (synthetic suite)."""
EXPECTED: Final = "expected"
"""Against the outputs a case ships with."""
COMPARISON_CHECKS: Final = (AGREEMENT, ANALYTIC, EXPECTED, LEVELS)
"""Checks whose row compares two stored output files."""
MODEL_FP32: Final = "model:fp32"
"""Each path on a model against its float64 shadow or shipped outputs (its arbiter then
names the path); without either, against another engine (arbiter '-': neither is blamed)."""
INT8_GATES: Final = tuple(f"model:{v}:{g}" for v in ("int8-dynamic", "int8-static")
                          for g in ("cosine", "decision"))
"""Each path on an int8 file against the run's baseline on it (the file computed exactly
names the path off; without it, arbiter '-': neither is blamed)."""
ARBITRATED_CHECKS: Final = (AGREEMENT, LEVELS, MODEL_FP32, *INT8_GATES)
"""Comparisons of two computations, whose disagreements float64 arbitrates."""
TRUTH_CHECKS: Final = (ANALYTIC, EXPECTED)
"""Comparisons against a truth (a formula or shipped outputs): the path alone is at fault."""

CONTRACT_PREFIX: Final = "contract:"
VARIANT_PREFIX: Final = "variant:"
MODEL_PREFIX: Final = "model:"
FAMILIES: Final = ("comparison", "contract", "variant", "model")


def check_family(check: str) -> str:
    """The family of a check name: ``comparison`` for the four output comparisons, else the
    prefix before its first colon (``contract:probability`` -> ``contract``)."""
    if check in COMPARISON_CHECKS:
        return "comparison"
    family, sep, _ = check.partition(":")
    return family if sep and family in FAMILIES else "other"
