"""One colour per result class, for every widget that shows them.

Explicit colours rather than ANSI names: a terminal theme maps ANSI red and magenta to
near-identical pinks, and contract issues must not look like execution failures.
(evaluations.tcss states the same colours for the table's Result column.)
"""

from __future__ import annotations

CLASS_COLORS: dict[str, str] = {
    "passed": "#98e024",
    "divergence": "#fd971f",
    "contract_issue": "#b18cff",
    "execution": "#f4005f",
}
