"""Compare two runs: regressions, fixes, new and missing observations.

Observations are paired only where the baseline is compatible: the same slot (case, check,
backend, optimisation level, output, reference) with the same graph hash and input hash.
A slot present in both runs with a different graph or input has no compatible baseline and
is listed as such, never as a regression or a fix.

A pair is a regression when it passed in the baseline and does not now, or when its max abs
error grew by more than ``factor`` (default 10×) over the larger of the baseline's max abs
error and the current absolute tolerance (the floor keeps a bit-exact baseline from turning
every last-place wobble into a regression). It is a fix when it did not pass and passes now.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from gero.query.options import DIFF_FACTOR, DIFF_KINDS
from gero_runner.errors import GeroError
from gero_runner.storage.reader import open_run

DEFAULT_FACTOR = DIFF_FACTOR
SLOT = ("case_id", "check", "backend", "optimization", "output_name", "reference")
_COLUMNS = (*SLOT, "observation_id", "graph_hash", "input_hash", "result", "reason",
            "max_abs_error", "rtol", "atol")
KINDS = DIFF_KINDS


@dataclass(frozen=True)
class DiffEntry:
    """One slot that differs between the runs (a pair, or an observation without one)."""

    kind: str
    """regression | fix | changed | incompatible | new | missing"""
    case_id: str
    check: str
    backend: str
    optimization: str
    output_name: str
    reference: str
    base_id: str | None
    current_id: str | None
    base_result: str | None
    current_result: str | None
    base_error: float | None
    current_error: float | None
    tolerance_changed: bool
    why: str


@dataclass(frozen=True)
class DiffReport:
    base_run: str
    current_run: str
    factor: float
    entries: tuple[DiffEntry, ...]
    unchanged: int
    """Compatible pairs with the same result and no error growth."""
    problems: tuple[str, ...] = field(default=())

    def of(self, kind: str) -> list[DiffEntry]:
        return [e for e in self.entries if e.kind == kind]

    def counts(self) -> dict[str, int]:
        counts = {k: 0 for k in KINDS}
        for e in self.entries:
            counts[e.kind] += 1
        counts["unchanged"] = self.unchanged
        counts["compatible_pairs"] = (self.unchanged + counts["regression"] + counts["fix"]
                                      + counts["changed"])
        return counts

    @property
    def has_regressions(self) -> bool:
        return any(e.kind == "regression" for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {"base_run": self.base_run, "current_run": self.current_run,
                "factor": self.factor, "counts": self.counts(),
                "problems": list(self.problems),
                **{kind: [_clean(asdict(e)) for e in self.of(kind)] for kind in KINDS}}


def _clean(item: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in item.items()}


def _fin(x: str) -> str:
    return f"(CASE WHEN isfinite({x}) THEN {x} END)"


_DIFF_SQL = f"""
WITH b AS (SELECT *, row_number() OVER (PARTITION BY {", ".join(f'"{c}"' for c in SLOT)}
                                          ORDER BY observation_id) AS ordinal FROM base),
     c AS (SELECT *, row_number() OVER (PARTITION BY {", ".join(f'"{c}"' for c in SLOT)}
                                          ORDER BY observation_id) AS ordinal FROM cur),
joined AS (
  SELECT {", ".join(f'coalesce(c."{s}", b."{s}") AS "{s}"' for s in SLOT)},
         b.observation_id AS base_id, c.observation_id AS current_id,
         b.result AS base_result, c.result AS current_result,
         {_fin("b.max_abs_error")} AS base_error, {_fin("c.max_abs_error")} AS current_error,
         c.reason AS current_reason,
         (b.rtol IS DISTINCT FROM c.rtol OR b.atol IS DISTINCT FROM c.atol)
             AND b.observation_id IS NOT NULL AND c.observation_id IS NOT NULL
             AS tolerance_changed,
         b.graph_hash <> c.graph_hash AS graph_changed,
         b.input_hash <> c.input_hash AS input_changed,
         coalesce({_fin("c.atol")}, 0.0) AS current_atol
  FROM b FULL OUTER JOIN c
    ON {" AND ".join(f'b."{s}" = c."{s}"' for s in SLOT)} AND b.ordinal = c.ordinal
), kinds AS (
  SELECT *, CASE
    WHEN base_id IS NULL THEN 'new'
    WHEN current_id IS NULL THEN 'missing'
    WHEN graph_changed OR input_changed THEN 'incompatible'
    WHEN base_result = 'passed' AND current_result <> 'passed' THEN 'regression'
    WHEN base_result <> 'passed' AND current_result = 'passed' THEN 'fix'
    WHEN base_error IS NOT NULL AND current_error IS NOT NULL
         AND current_error > ? * greatest(base_error, current_atol) THEN 'regression'
    WHEN base_result <> current_result THEN 'changed'
    ELSE 'unchanged' END AS kind
  FROM joined
)
"""


def _why(row: dict[str, Any], factor: float) -> str:
    kind = row["kind"]
    if kind == "new":
        return "no observation in the baseline for this slot"
    if kind == "missing":
        return "not observed in the current run"
    if kind == "incompatible":
        changed = [n for n, flag in (("graph", row["graph_changed"]),
                                     ("inputs", row["input_changed"])) if flag]
        return f"{' and '.join(changed)} changed: no compatible baseline"
    text = f"{row['base_result']} → {row['current_result']}"
    if kind == "regression" and row["base_result"] == row["current_result"]:
        base, cur = row["base_error"], row["current_error"]
        grew = cur / base if base else math.inf
        text = (f"max abs error grew {grew:.3g}× ({base:.3g} → {cur:.3g}), more than "
                f"{factor:g}× the larger of the baseline error and atol")
    elif row["current_reason"]:
        text += f": {row['current_reason']}"
    if row["tolerance_changed"]:
        text += " (tolerance changed between the runs)"
    return text


def _check_factor(factor: float) -> None:
    if not factor > 1:
        raise GeroError(f"error-growth factor must be greater than 1, got {factor}")


def _pair(con: duckdb.DuckDBPyConnection, factor: float) -> tuple[tuple[DiffEntry, ...], int]:
    """The differences between temp tables ``base`` and ``cur``, and how many slots are
    unchanged."""
    cursor = con.execute(_DIFF_SQL + "SELECT * FROM kinds WHERE kind <> 'unchanged' "
                         "ORDER BY kind, case_id, \"check\", backend, optimization, "
                         "output_name", [factor])
    names = [d[0] for d in cursor.description]
    entries = []
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        entries.append(DiffEntry(
            kind=row["kind"], **{s: row[s] for s in SLOT}, base_id=row["base_id"],
            current_id=row["current_id"], base_result=row["base_result"],
            current_result=row["current_result"], base_error=row["base_error"],
            current_error=row["current_error"],
            tolerance_changed=bool(row["tolerance_changed"]), why=_why(row, factor)))
    unchanged = con.execute(_DIFF_SQL + "SELECT count(*) FROM kinds WHERE kind = 'unchanged'",
                            [factor]).fetchone()
    return tuple(entries), int(unchanged[0]) if unchanged else 0


def diff_runs(data_root: str | os.PathLike[str], base: str, current: str,
              factor: float = DEFAULT_FACTOR) -> DiffReport:
    """Pair the observations of two runs (id prefixes) and classify every difference."""
    _check_factor(factor)
    with duckdb.connect() as con:  # closed at once: see storage.reader.resolve_observation
        problems: list[str] = []
        run_ids = []
        for name, run in (("base", base), ("cur", current)):
            view = open_run(data_root, run, connection=con)
            problems += [p for p in view.problems if p not in problems]
            cols = ", ".join(f'"{c}"' for c in _COLUMNS)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {cols} FROM obs")
            run_ids.append(view.run_id)
        entries, unchanged = _pair(con, factor)
    return DiffReport(run_ids[0], run_ids[1], factor, entries, unchanged, tuple(problems))


def diff_backends(data_root: str | os.PathLike[str], run: str | None, backend: str,
                  against: str, factor: float = DEFAULT_FACTOR) -> DiffReport:
    """Pair one runtime's observations with another's in the same run: same case, check,
    output and reference (graph and inputs are the run's own). ``against`` is the baseline:
    a regression passes there and not on ``backend``. Each is ``RUNTIME`` or
    ``RUNTIME/SETTING``; ``against`` needs a setting when its runtime has several."""
    _check_factor(factor)
    with duckdb.connect() as con:  # closed at once: see storage.reader.resolve_observation
        view = open_run(data_root, run, connection=con)
        settings: dict[str, list[str]] = {}
        for name, opt in con.execute("SELECT DISTINCT backend, optimization FROM obs "
                                     "ORDER BY ALL").fetchall():
            settings.setdefault(str(name), []).append(str(opt))
        mine, mine_opt = _runtime(backend, "--backend", settings)
        base, base_opt = _runtime(against, "--against", settings)
        if base_opt is None:
            if len(settings[base]) > 1:
                raise GeroError(f"--against {against}: {base} ran with settings "
                                f"{', '.join(settings[base])}; name one, e.g. "
                                f"--against {base}/{settings[base][-1]}")
            base_opt = settings[base][0]
        cols = ", ".join(f'"{c}"' for c in _COLUMNS if c not in ("backend", "optimization"))
        own = "" if mine_opt is None else " AND optimization = ?"
        con.execute(f"CREATE OR REPLACE TEMP TABLE cur AS SELECT {cols}, backend, optimization "
                    f"FROM obs WHERE backend = ?{own}",
                    [mine] + ([mine_opt] if mine_opt is not None else []))
        # The baseline's rows once per setting of the runtime under comparison, under its
        # name, so that each setting pairs with the baseline setting.
        con.execute(f"CREATE OR REPLACE TEMP TABLE base AS SELECT {cols}, c.backend, "
                    f"c.optimization FROM obs, (SELECT DISTINCT backend, optimization "
                    f"FROM cur) c WHERE obs.backend = ? AND obs.optimization = ?",
                    [base, base_opt])
        entries, unchanged = _pair(con, factor)
        run_id = view.run_id
    return DiffReport(f"{run_id}:{base}/{base_opt}",
                      f"{run_id}:{mine}" + (f"/{mine_opt}" if mine_opt else ""), factor,
                      entries, unchanged, tuple(view.problems))


def _runtime(text: str, option: str, settings: dict[str, list[str]]) -> tuple[str, str | None]:
    name, _, setting = text.partition("/")
    if name not in settings:
        raise GeroError(f"{option} {text}: no observations of {name!r} in this run; it has "
                        f"{', '.join(settings) or 'none'}")
    if setting and setting not in settings[name]:
        raise GeroError(f"{option} {text}: {name} has no setting {setting!r} in this run; "
                        f"it has {', '.join(settings[name])}")
    return name, setting or None
