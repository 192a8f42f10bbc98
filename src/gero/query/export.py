"""Export a run's observations (all, filtered, or selected) as CSV, Parquet, JSON or a report.

The Markdown format is a report rather than a table dump: run metadata, counts per result
class, a per-operation table and the worst observations with their reasons, every name and
reason in it escaped (gero_runner.escape) so that none can act as Markdown or HTML. CSV,
JSON and Parquet keep the raw values: they are data, and their format escapes them.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv

from gero.query.filters import Filter, parse_filter
from gero.query.options import EXPORT_FORMATS
from gero.query.summary import class_counts, operations
from gero_runner.errors import GeroError
from gero_runner.escape import for_markdown, markdown_code
from gero_runner.result_classes import severity_sql
from gero_runner.schema import COLUMN_NAMES, OBSERVATION_SCHEMA, RESULT_CLASSES, RESULT_LABELS
from gero_runner.storage.reader import OpenRun, arrow_table
from gero_runner.storage.store import atomic_write_bytes, atomic_write_table

FORMATS = EXPORT_FORMATS
WORST_LIMIT = 25
_ORDER = 'case_id, "check", backend, optimization, output_name, observation_id'
# Worst first: issues before passes, then the largest scaled error.
_SEVERITY = f"({severity_sql()}) DESC"


@dataclass(frozen=True)
class ExportResult:
    path: Path
    rows: int
    format: str
    seconds: float


def _as_filter(where: str | Filter | None) -> Filter:
    return where if isinstance(where, Filter) else parse_filter(where)


@dataclass(frozen=True)
class RowOrder:
    """Another order than the default (case, check, path): the explorer's table order.

    ``relation`` is ``obs`` with extra columns the ORDER BY reads (``rn``, a finding's
    rank), dropped from what is written."""

    relation: str
    order_by: str
    """A whole ``ORDER BY …`` clause over ``relation``."""
    extra: tuple[str, ...] = ()


def select_rows(view: OpenRun, where: str | Filter | None = None,
                ids: Iterable[str] | None = None, cursor: duckdb.DuckDBPyConnection | None = None,
                order: RowOrder | None = None) -> pa.Table:
    """The run's observations matching ``where`` (and, if given, with these ids), in
    ``order`` (default: case, check, backend, level, output)."""
    flt = _as_filter(where)
    if order is None:
        sql = f"SELECT * FROM obs WHERE {flt.sql}"
    else:
        dropped = f" EXCLUDE ({', '.join(order.extra)})" if order.extra else ""
        sql = f"SELECT *{dropped} FROM {order.relation} WHERE {flt.sql}"
    params: list[Any] = list(flt.params)
    if ids is not None:
        sql += " AND observation_id IN (SELECT unnest(?::VARCHAR[]))"
        params.append(list(ids))
    con = cursor or view.connection
    table = arrow_table(con, f"{sql} ORDER BY {_ORDER}" if order is None
                        else f"{sql} {order.order_by}", params)
    if sorted(table.column_names) == sorted(COLUMN_NAMES):
        # a run of an older gero reads its newer columns (NULL) last: the schema's order
        table = table.select(list(COLUMN_NAMES)).cast(OBSERVATION_SCHEMA)
    return table


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # strict JSON: NaN / ±inf become null
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _json_bytes(table: pa.Table) -> bytes:
    rows = [{k: _json_value(v) for k, v in r.items()} for r in table.to_pylist()]
    return json.dumps(rows, indent=1, allow_nan=False).encode()


def _csv_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pacsv.write_csv(table, buffer)
    return buffer.getvalue()


def export_rows(view: OpenRun, where: str | Filter | None, fmt: str, path: Path | str,
                ids: Sequence[str] | None = None,
                cursor: duckdb.DuckDBPyConnection | None = None,
                order: RowOrder | None = None) -> ExportResult:
    """Write the matching rows to ``path`` in ``fmt`` (atomically: all or nothing)."""
    if fmt not in FORMATS:
        raise GeroError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    path = Path(path)
    if path.is_dir():
        raise GeroError(f"-o {path}: is a directory; give a file name")
    start = time.perf_counter()
    flt = _as_filter(where)
    table = select_rows(view, flt, ids, cursor, order)
    try:
        if fmt == "parquet":
            atomic_write_table(path, table)
        elif fmt == "csv":
            atomic_write_bytes(path, _csv_bytes(with_context(table, view.run_id)))
        elif fmt == "json":
            atomic_write_bytes(path, _json_bytes(with_context(table, view.run_id)))
        else:
            atomic_write_bytes(path, markdown_report(view, table, flt, ids).encode())
    except OSError as e:
        raise GeroError(f"cannot write {path}: {e}") from e
    return ExportResult(path, table.num_rows, fmt, time.perf_counter() - start)


def worst_heading(rows: int) -> str:
    """The report lists at most ``WORST_LIMIT`` rows one by one: it says so."""
    if rows > WORST_LIMIT:
        return f"## Worst observations: the {WORST_LIMIT} worst of {rows}"
    return f"## Worst observations: all {rows}, worst first"


def with_context(table: pa.Table, run_id: str) -> pa.Table:
    """CSV and JSON rows: ``path`` (the table's name for the path: the optimisation level,
    ``reference``, "ov:f32") after ``optimization``, and the run the export was made from
    (``run_id`` is the run that first saw the observation)."""
    from gero_runner.backends import path_label

    names = table.column_names
    if "optimization" in names and "backend" in names:
        paths = [path_label(str(b), str(o)) for b, o in zip(
            table.column("backend").to_pylist(), table.column("optimization").to_pylist(),
            strict=True)]
        table = table.add_column(names.index("optimization") + 1, "path",
                                 pa.array(paths, pa.string()))
    at = table.column_names.index("run_id") + 1 if "run_id" in table.column_names else 0
    return table.add_column(at, "exported_from_run",
                            pa.array([run_id] * table.num_rows, pa.string()))


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.3g}"
    return for_markdown(str(value).replace("\n", " "))


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


# Figures of model-level and parity rows worth a column in the report (from ``details``).
_MODEL_FIGURES = ("scaled_error", "floored_rel_error", "row_cosine", "pooled_cosine",
                  "decision_share", "need_row_cosine", "ratio", "mae", "max_diff",
                  "relative_error_pct", "conf_mae", "rotation_error_deg_max",
                  "translation_error_max", "match_ratio")


def _model_metrics_section(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Model-level (model:*) and parity (parity:*) rows with their figures from details."""
    rows = con.execute(
        """SELECT case_id, "check", output_name, backend, optimization, result, details
           FROM obs WHERE "check" LIKE 'model:%' OR "check" LIKE 'parity:%'
           ORDER BY case_id, "check", output_name, backend, optimization""").fetchall()
    if not rows:
        return []
    table = []
    for case_id, check, output, backend, opt, result, details in rows:
        try:
            figures = json.loads(details or "{}")
        except ValueError:
            figures = {}
        text = ", ".join(f"{k} {_cell(float(figures[k]))}" for k in _MODEL_FIGURES
                         if isinstance(figures.get(k), int | float)
                         and not isinstance(figures.get(k), bool))
        table.append((case_id, check, output, backend, opt, result, text or "—"))
    return ["", "## Model-level and parity metrics", "",
            *_table(("case", "check", "output", "backend", "opt.", "result", "figures"),
                    table)]


def markdown_report(view: OpenRun, table: pa.Table, flt: Filter,
                    ids: Sequence[str] | None = None) -> str:
    """A Markdown report over exactly the exported rows."""
    with duckdb.connect() as con:  # closed at once: see storage.reader.resolve_observation
        # A table, not a registered Arrow object: those are invisible to the cursors that
        # the summary queries run on.
        con.register("exported", table)
        con.execute("CREATE TABLE obs AS SELECT * FROM exported")
        return _report(view, OpenRun(view.data_root, view.run_id, con), table, flt, ids)


def _report(view: OpenRun, sub: OpenRun, table: pa.Table, flt: Filter,
            ids: Sequence[str] | None) -> str:
    con = sub.connection
    record = view.record()
    scope = "all observations of the run"
    if flt.sql != "TRUE":
        # As the user wrote it; the SQL and its parameters only when there is no text.
        scope = (f"observations matching {markdown_code(flt.text)}" if flt.text else
                 f"observations matching {markdown_code(flt.sql)} with parameters "
                 f"{for_markdown(list(flt.params))}")
    if ids is not None:
        scope += f", {len(ids)} selected"
    out = [f"# gero report: run {for_markdown(view.run_id)}", "",
           f"{table.num_rows} observations ({scope}).", "", "## Run", ""]
    fields = ("run_id", "status", "suite", "started_at", "finished_at", "command_line",
              "cpu_model", "python_version", "numpy_version", "onnx_version",
              "onnxruntime_version", "seed", "jobs", "threads", "case_count",
              "observation_count")
    out += _table(("field", "value"), [(f, record.get(f, "")) for f in fields])
    tolerances = record.get("tolerances", {})
    out += ["", "Tolerances (|a − r| ≤ atol + rtol·|r|): " + ", ".join(
        f"{d} rtol={t['rtol']:g} atol={t['atol']:g}" for d, t in tolerances.items()), ""]
    counts = class_counts(sub)
    total = sum(counts.values()) or 1
    out += ["## Result classes", ""]
    out += _table(("class", "meaning", "count", "share"),
                  [(c, RESULT_LABELS[c], counts[c], f"{100 * counts[c] / total:.1f} %")
                   for c in RESULT_CLASSES])
    out += ["", "## Operations", ""]
    out += _table(("operation", "passed", "divergence", "contract issue", "execution",
                   "max abs error", "runtime median ms", "reference median ms"),
                  [(o.op_type, o.passed, o.divergence, o.contract_issue, o.execution,
                    o.max_abs_error, o.runtime_median_ms, o.reference_median_ms)
                   for o in operations(sub)])
    out += ["", "Timings: median of per-case medians in ms, Python call overhead included, "
            "session construction excluded; the reference evaluator's timings are context, "
            "not a ranking.", "", worst_heading(table.num_rows), ""]
    worst = con.execute(
        f"""SELECT observation_id[:12], case_id, "check", backend, optimization, dtype, result,
                   max_abs_error, scaled_error, max_ulp, reason
            FROM obs ORDER BY {_SEVERITY},
                 CASE WHEN isnan(scaled_error) THEN NULL ELSE scaled_error END DESC NULLS LAST,
                 max_abs_error DESC NULLS LAST, observation_id
            LIMIT {WORST_LIMIT}""").fetchall()
    out += _table(("id", "case", "check", "backend", "opt.", "dtype", "result",
                   "max abs error", "scaled error", "max ULP", "reason"), worst)
    out += _model_metrics_section(con)
    if view.problems:
        out += ["", "## Skipped files", "", *[f"- {for_markdown(p)}" for p in view.problems]]
    return "\n".join(out) + "\n"
