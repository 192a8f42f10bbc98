"""Runtimes that agree with each other against the reference and float64.

Two findings can be one fact seen twice: ONNX Runtime and OpenVINO give the same float16
Softmax output, 0.401 off the reference and float64, and each is a finding of its own
(findings group by the runtime blamed). This module finds, for one finding, the other
findings whose rows on the same cases (same check, output and reference) gave the same
output: the same tensor hash, or the same max |a − r| to three significant digits (the
runtimes round differently in the last place).
"""

from __future__ import annotations

from dataclasses import dataclass

from gero.query.findings import MEMBERS_TABLE, Queryable, ensure_members, path_name

FAMILIES = "('numeric', 'precision')"
"""Findings whose rows compare outputs (not laws, failures or NaN fed to every path)."""
SAME_ERROR = 1e-3
"""Relative difference under which two rows' max |a − r| count as the same error."""


@dataclass(frozen=True)
class Agreement:
    """Another finding whose runtime gave the same output as this finding's on some cases."""

    finding_id: str
    outlier: str
    """That finding's blamed path (``findings.Finding.outlier``)."""
    cases: int
    """Cases of this finding where the other runtime's output is the same."""
    of_cases: int
    """Cases of this finding."""
    identical: int
    """Of those cases, where the two outputs are bit-identical (same tensor hash)."""

    def sentence(self) -> str:
        same = "the same output" if self.identical == self.cases else "the same error"
        return (f"{path_name(self.outlier)} gives {same} on {self.cases} of {self.of_cases} "
                f"case{'s' if self.of_cases != 1 else ''} (finding {self.finding_id}): the "
                "runtimes agree with each other, against the reference and float64")


_SQL = f"""
WITH mine AS (
    SELECT o.case_id, o."check", o.output_name, o.reference, o.backend, o.actual_hash,
           o.max_abs_error
    FROM {MEMBERS_TABLE} m JOIN obs o USING (observation_id)
    WHERE m.finding_id = ? AND m.family IN {FAMILIES} AND m.outlier <> 'every path'
), theirs AS (
    SELECT m.finding_id, m.outlier, o.case_id, o."check", o.output_name, o.reference,
           o.backend, o.actual_hash, o.max_abs_error
    FROM {MEMBERS_TABLE} m JOIN obs o USING (observation_id)
    WHERE m.finding_id <> ? AND o.case_id IN (SELECT case_id FROM mine)
      AND m.family IN {FAMILIES} AND m.outlier <> 'every path'
)
SELECT t.finding_id, any_value(t.outlier), count(DISTINCT t.case_id),
       count(DISTINCT t.case_id) FILTER (t.actual_hash = m.actual_hash)
FROM mine m JOIN theirs t
  ON t.case_id = m.case_id AND t."check" = m."check" AND t.output_name = m.output_name
     AND t.reference = m.reference AND t.backend <> m.backend
WHERE t.actual_hash = m.actual_hash
   OR abs(t.max_abs_error - m.max_abs_error)
      <= {SAME_ERROR} * greatest(abs(m.max_abs_error), 1e-30)
GROUP BY t.finding_id ORDER BY 3 DESC, 1
"""


def agreeing(source: Queryable, finding_id: str) -> list[Agreement]:
    """The findings of other runtimes that gave this finding's output on its cases."""
    ensure_members(source)
    counted = source.query(f"SELECT count(DISTINCT case_id) FROM {MEMBERS_TABLE} "
                           "WHERE finding_id = ?", [finding_id])
    of = int(counted[0][0]) if counted else 0
    return [Agreement(str(fid), str(outlier), cases=int(cases), of_cases=of,
                      identical=int(identical))
            for fid, outlier, cases, identical in source.query(_SQL, [finding_id,
                                                                     finding_id])]
