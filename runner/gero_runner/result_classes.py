"""The four result classes of the specification, in display order, with their labels.

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
