"""A run's numerical changelog between runtime releases (issue 42): per operator (or model)
and dtype, what each release changed against the reference release, from the ``releases``
check's rows (``gero_runner.checks.releases``).

A cell says ``same`` (every setting bit-identical), the direction of the change at the
changed elements (``closer``/``further``/``equally far`` from float64, ``changed`` where
no float64 result says), ``fails``/``runs`` where only one release ran it, or ``mixed`` when
its settings or cases disagree on the direction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gero_runner.backends.names import release_of, title
from gero_runner.storage.reader import OpenRun

RELEASES_CHECK = "releases"
"""The check's name (``gero_runner.checks.releases.RELEASES``: the query layer imports no
check module)."""
STATES = {"actual": "closer", "reference": "further", "tie": "equally far", "-": "changed"}
"""A changed row's arbiter as a cell's word."""


@dataclass(frozen=True)
class ReleaseCell:
    state: str
    rows: int
    changed: int
    """Elements changed, summed over the cell's changed rows."""
    max_abs: float


@dataclass(frozen=True)
class ReleaseMatrix:
    reference: str
    """The reference release ("ONNX Runtime 1.20.1")."""
    releases: tuple[str, ...]
    """Each release compared with it ("ONNX Runtime 1.32.0"), the column heads."""
    rows: tuple[tuple[str, str, tuple[ReleaseCell | None, ...]], ...]
    """(operator, dtype, a cell per release), operators in name order."""

    def count(self, state: str) -> int:
        return sum(1 for _, _, cells in self.rows for c in cells if c and c.state == state)


_SQL = f"""
SELECT op_type, dtype, backend, backend_version, split_part(reference, ':', 1),
       reference_version,
       result, arbiter, count(*) AS n,
       sum(coalesce(TRY_CAST(json_extract(nullif(figures, ''), '$.changed') AS BIGINT), 0))
           AS changed,
       max(CASE WHEN isfinite(max_abs_error) THEN max_abs_error END) AS max_abs
FROM obs WHERE "check" = '{RELEASES_CHECK}'
GROUP BY ALL ORDER BY op_type, dtype, backend"""


def named(backend: str, version: str) -> str:
    """A release as a sentence names it: "ONNX Runtime 1.20.1" (a release's name holds its
    version; the installed runtime's is its row's)."""
    return title(backend) if release_of(backend) else f"{title(backend)} {version}"


def compared_releases(fields: Mapping[str, Any]) -> str:
    """What a ``releases`` row compares, as the detail view says it: "ONNX Runtime 1.32.0
    against the reference release ONNX Runtime 1.20.1"; '' for any other row."""
    if fields.get("check") != RELEASES_CHECK:
        return ""
    reference = str(fields.get("reference") or "").split(":")[0]
    new = named(str(fields.get("backend") or ""), str(fields.get("backend_version") or ""))
    old = named(reference, str(fields.get("reference_version") or ""))
    return f"{new} against the reference release {old}"


def release_matrix(source: OpenRun) -> ReleaseMatrix | None:
    """The run's release matrix; None for a run that compared no releases."""
    found = source.query(_SQL)
    if not found:
        return None
    reference = named(str(found[0][4]), str(found[0][5]))
    releases = tuple(dict.fromkeys(named(str(r[2]), str(r[3])) for r in found))
    cells: dict[tuple[str, str, str], list[tuple[str, int, int, float]]] = {}
    for op, dtype, backend, version, _, _, result, arbiter, n, changed, max_abs in found:
        release = named(str(backend), str(version))
        if result == "passed":
            state = "same"
        elif result == "execution":
            state = "fails or runs"
        else:
            state = STATES.get(str(arbiter), "changed")
        cells.setdefault((str(op), str(dtype), release), []).append(
            (state, int(n), int(changed or 0), float(max_abs or 0.0)))
    rows = []
    for op, dtype in dict.fromkeys((k[0], k[1]) for k in cells):
        row: list[ReleaseCell | None] = []
        for release in releases:
            parts = cells.get((op, dtype, release))
            if not parts:
                row.append(None)
                continue
            states = {p[0] for p in parts} - ({"same"} if len(parts) > 1 else set())
            state = states.pop() if len(states) == 1 else "mixed"
            row.append(ReleaseCell(state, sum(p[1] for p in parts), sum(p[2] for p in parts),
                                   max(p[3] for p in parts)))
        rows.append((op, dtype, tuple(row)))
    return ReleaseMatrix(reference, releases, tuple(rows))
