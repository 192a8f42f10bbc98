"""One observation's full row, fetched by id, and its fields grouped for display.

Headless: the detail screen shows these sections as they are; nothing is recomputed here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

from gero.query.source import NUMBERED_RELATION
from gero_runner.checks.gates import non_elementwise_gate
from gero_runner.distribution import DISTRIBUTION_NAMES
from gero_runner.errors import GeroError
from gero_runner.schema import COLUMN_NAMES

# Every column of the schema appears in exactly one section (checked by a test).
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Evaluation", ("op_type", "case_name", "case_id", "suite", "check", "dtype",
                    "input_shapes", "output_name", "result", "reason", "arbiter")),
    ("Paths", ("backend", "backend_version", "optimization", "threads", "reference",
               "reference_version", "session_settings")),
    ("Tolerance", ("rtol", "atol", "min_atol", "min_rtol")),
    ("Error", ("max_abs_error", "max_rel_error", "max_ulp", "scaled_error",
               "floored_rel_error", "mismatch_count", "element_count", "bit_exact",
               "nan_actual", "inf_actual", "nan_reference", "inf_reference")),
    ("Error distribution", DISTRIBUTION_NAMES),
    ("Timing", ("actual_median_ms", "reference_median_ms", "repeats")),
    ("Evidence", ("artifact_path", "actual_file", "reference_file", "seed", "actual_hash",
                  "reference_hash", "graph_hash", "input_hash")),
    ("Record", ("observation_id", "run_id", "created_at", "details")),
)


@dataclass(frozen=True)
class DetailRecord:
    """One observation row (every schema column) as the runner stored it, read back for the
    detail view: a plain mapping, where the runner's ``schema.Observation`` is typed."""

    fields: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    @property
    def observation_id(self) -> str:
        return str(self.fields["observation_id"])

    @property
    def is_contract(self) -> bool:
        return str(self.fields.get("check") or "").startswith("contract:")

    def json_field(self, name: str) -> dict[str, Any]:
        """A JSON column (session_settings, details) decoded; {} when empty or not JSON."""
        text = self.fields.get(name) or ""
        try:
            value = json.loads(text)
        except (TypeError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """(section, [(column, shown value)]) in display order; a user model's rows also
        say what its inputs were and why (shape, values, where each came from)."""
        shown = [(title, [(c, explained_value(c, self.fields)) for c in columns])
                 for title, columns in SECTIONS]
        fed = self.json_field("details").get("inputs")
        if isinstance(fed, str) and fed:
            evaluation = shown[0][1]
            at = next(i for i, (c, _) in enumerate(evaluation) if c == "input_shapes") + 1
            evaluation.insert(at, ("inputs fed", fed))
        return shown


def fetch_observation(connection: duckdb.DuckDBPyConnection, observation_id: str,
                      row_number: int | None = None) -> DetailRecord:
    """The row of ``observation_id`` from the ``obs`` view; GeroError if the id is unknown.

    With the row's table number ``row_number`` (``rn``) the row is read by it, a filter
    DuckDB pushes into the Parquet scan; by id, every id is scanned. The id is checked
    either way, and the id alone is the fallback (a connection without the numbered view).
    """
    columns = ", ".join(f'"{c}"' for c in COLUMN_NAMES)
    if row_number is not None:
        try:
            row = connection.execute(
                f"SELECT {columns} FROM {NUMBERED_RELATION} WHERE rn = ? LIMIT 1", [row_number]
            ).fetchone()
        except duckdb.CatalogException:
            row = None
        if row is not None and row[COLUMN_NAMES.index("observation_id")] == observation_id:
            return DetailRecord(dict(zip(COLUMN_NAMES, row, strict=True)))
    cursor = connection.execute(
        f"SELECT {columns} FROM obs WHERE observation_id = ? LIMIT 1", [observation_id]
    )
    row = cursor.fetchone()
    if row is None:
        raise GeroError(f"no observation {observation_id!r} in this run")
    return DetailRecord(dict(zip(COLUMN_NAMES, row, strict=True)))


def format_value(column: str, value: Any) -> str:
    """A field as the detail view shows it: exact figures, JSON compacted, '-' for absent."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if column.endswith("_ms"):
            return f"{value:.4f} ms"
        return f"{value:.6g}" if value != 0 else "0"
    if column in ("session_settings", "details") and isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if not decoded:
            return "-"
        return json.dumps(decoded, sort_keys=True, separators=(", ", ": "))
    return str(value)


ERROR_FIGURES = ("max_abs_error", "max_rel_error", "max_ulp", "scaled_error",
                 "floored_rel_error", "min_atol", "min_rtol")


_ELEMENTWISE_FIGURES = ("rtol", "atol", "min_atol", "min_rtol", "max_ulp", "mismatch_count")
"""Figures of the element-wise tolerance, which some model rows are not gated by."""


def deciding_gate(fields: Mapping[str, Any]) -> str:
    """The gate in words where rtol, atol and ULP figures do not decide a row (a model
    row of a task judged otherwise: ``checks.gates``); '' where they do."""
    return non_elementwise_gate(str(fields.get("check", "")))


def explained_value(column: str, fields: dict[str, Any]) -> str:
    """``format_value``, with the reason where a figure is absent or reads against the
    row's result: every field the detail view shows agrees with the row's class."""
    value = fields.get(column)
    shown = format_value(column, value)
    result = fields.get("result")
    absent = value is None or (isinstance(value, float) and math.isnan(value))
    if column == "arbiter" and (value == "-" or absent):
        if result == "divergence":
            return "- (no float64 value for this comparison to arbitrate with)"
        return "- (only a divergence has an arbiter)"
    gate = deciding_gate(fields)
    if gate and column in _ELEMENTWISE_FIGURES and not absent:
        return f"{shown} (context only: this row's gate is {gate}, see its reason)"
    if column in DISTRIBUTION_NAMES and value is None:
        return "- (recorded by a gero before error percentiles: run the case again)"
    if column in (*ERROR_FIGURES, *DISTRIBUTION_NAMES) and absent:
        if result == "execution":
            return "- (no output to compare: a path failed)"
        return "- (no finite pair of elements to compare)"
    if column == "max_rel_error" and not absent and result in ("divergence", "contract_issue"):
        rtol, atol, abs_error = fields.get("rtol"), fields.get("atol"), fields.get("max_abs_error")
        if (isinstance(rtol, float) and isinstance(atol, float) and isinstance(abs_error, float)
                and isinstance(value, float) and value <= rtol and abs_error > atol):
            # |a−r|/|r| leaves out r = 0; an element off against a zero reference is not in it.
            return (f"{shown} (over elements with r ≠ 0: the elements out of tolerance have "
                    "r = 0, see max_abs_error and floored_rel_error)")
    return shown
