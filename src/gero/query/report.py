"""Everything a run report shows, gathered from a stored run: headless, no HTML.

The report summarises (it never embeds every row): counts, the paths and settings that ran,
the findings with their representatives' element-wise histograms, a bar per operation with
the few worst rows of each of its segments, and the timings. What the runner measured is read
as stored; only the representatives' histograms are computed, from their evidence, as the
explorer's detail view computes them. ``gero.html_report`` renders it.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gero.query.assessable import Split, split_counts, unassessable_sql
from gero.query.findings import MEMBERS_TABLE, Finding, FindingsReport, ensure_members
from gero.query.plan_notes import not_run, notes
from gero.query.releases import ReleaseMatrix, release_matrix
from gero.query.runtimes import RuntimeTiming, timings
from gero.query.stored_localization import StoredOrigin, parse_localization
from gero.query.summary import OperationSummary, class_counts, operations, runtime_medians
from gero.query.table import CASE_SQL, OPTIMIZATION_ORDER_SQL, PATH_SQL
from gero.query.tensors import ElementAnalysis, analyse, load_evidence
from gero.query.verdicts import Verdict, verdicts
from gero_runner.backends import REFERENCE
from gero_runner.errors import GeroError
from gero_runner.result_classes import COMPARISON_CHECKS, RESULT_CLASSES, SEVERITY, severity_sql
from gero_runner.storage.artifacts import (
    DERIVED_DIR,
    LOCALIZE_DIR,
    read_json_object,
    resolve_artifact,
)
from gero_runner.storage.reader import OpenRun
from gero_runner.tolerances import DEFAULT_TOLERANCES

BLAME_DIR = DERIVED_DIR
"""``gero blame`` keeps ``blame/OBSERVATION_ID.json`` in the observation's evidence directory,
``gero localize`` ``localize/OBSERVATION_ID.json`` (``LOCALIZE_DIR``) beside it."""
ROWS_PER_SEGMENT = 5
"""Worst rows listed per operation and result class: the report summarises, the explorer and
``gero export`` have every row."""
"""The rows whose tolerance is the dtype's comparison tolerance (laws have their own)."""


@dataclass(frozen=True)
class PathSetting:
    """One path that ran (a runtime at one setting, or the ReferenceEvaluator)."""

    backend: str
    version: str
    setting: str
    """The setting as the evaluations table names it: an ORT level, ``reference``, ov:f32."""
    session_settings: tuple[tuple[str, str], ...]
    observations: int


@dataclass(frozen=True)
class RuntimeSettings:
    """One runtime's paths in one row: its settings, the session settings they all share
    (said once) and those that differ between its paths (each key with its values)."""

    backend: str
    versions: tuple[str, ...]
    settings: tuple[str, ...]
    """The settings that ran, in the evaluations table's order."""
    shared: tuple[tuple[str, str], ...]
    varying: tuple[tuple[str, tuple[str, ...]], ...]
    """(key, its values): a key some path lacks counts ``—`` among its values."""
    observations: int


def compact_paths(paths: Iterable[PathSetting]) -> tuple[RuntimeSettings, ...]:
    """The paths one row a runtime (``paths`` in their order): a runtime whose settings
    differ between cases (ONNX Runtime's threads law runs each level at 1 and at the
    machine's threads) was one row per distinct session string, 9 to 29 rows of full
    strings above the counts."""
    by_backend: dict[str, list[PathSetting]] = {}
    for p in paths:
        by_backend.setdefault(p.backend, []).append(p)
    out = []
    for backend, group in by_backend.items():
        pairs = [dict(p.session_settings) for p in group]
        keys = sorted({k for d in pairs for k in d})
        shared = tuple((k, pairs[0][k]) for k in keys
                       if all(k in d and d[k] == pairs[0][k] for d in pairs))
        common = {k for k, _ in shared}
        varying = tuple((k, tuple(dict.fromkeys(d.get(k, "—") for d in pairs)))
                        for k in keys if k not in common)
        out.append(RuntimeSettings(
            backend, tuple(dict.fromkeys(p.version for p in group)),
            tuple(dict.fromkeys(p.setting for p in group)), shared, varying,
            sum(p.observations for p in group)))
    return tuple(out)


@dataclass(frozen=True)
class ReferencePath:
    """A path the others are compared against (float64 formula, the ReferenceEvaluator)."""

    reference: str
    version: str
    observations: int


@dataclass(frozen=True)
class ToleranceUse:
    """The comparison tolerance the observations of one dtype store, against the default."""

    dtype: str
    rtol: float
    atol: float
    observations: int
    default: tuple[float, float] | None
    """(rtol, atol) of the specification's table; None for a dtype it does not list."""
    run: tuple[float, float] | None = None
    """The run's tolerance for the dtype (the defaults with its ``--rtol``/``--atol``)."""
    operators: tuple[str, ...] = ()
    """The operators whose rows store it (a case may bring its own bound)."""

    @property
    def overridden(self) -> bool:
        """Set on the command line: the run's tolerance, and not the default."""
        return (self.default is not None and self.run == (self.rtol, self.atol)
                and self.run != self.default)

    @property
    def own(self) -> bool:
        """A case's own bound (an operator's accumulation), neither default nor override."""
        return (self.rtol, self.atol) not in (self.default, self.run) \
            and self.default is not None


@dataclass(frozen=True)
class EvaluationRow:
    """One row of the evaluations table, as the explorer shows it."""

    observation_id: str
    case: str
    dtype: str
    input_shapes: str
    optimization: str
    check: str
    max_abs_error: float | None
    result: str
    arbiter: str
    details: str


@dataclass(frozen=True)
class LandingRow:
    """One operation in the landing table: the row a user looks at first (the worst that
    can be assessed: class by severity, then the largest max abs. error; a passed row when
    nothing failed), with the operation's counts."""

    op_type: str
    row: EvaluationRow
    observations: int
    not_passed: int
    not_assessable: int
    """Of ``not_passed``: what cannot be assessed by construction (counted apart)."""
    finding_id: str = ""
    """The finding that holds ``row`` (none for a passed row)."""

    @property
    def actionable(self) -> bool:
        """Whether the operation has a non-passed row that can be assessed."""
        return self.not_passed > self.not_assessable


@dataclass(frozen=True)
class Segment:
    """One result class of one operation: its count and its worst rows."""

    result: str
    count: int
    worst: tuple[EvaluationRow, ...]
    export_command: str
    """The command that writes every row of the segment."""


@dataclass(frozen=True)
class OperationBar:
    op_type: str
    segments: tuple[Segment, ...]
    """One per result class, in ``RESULT_CLASSES`` order (zero counts included)."""

    @property
    def total(self) -> int:
        return sum(s.count for s in self.segments)


@dataclass(frozen=True)
class Localization:
    """Where a finding's error was traced to, as ``gero localize`` or ``gero blame`` stored it."""

    tool: str
    """``localize`` or ``blame``."""
    observation_id: str
    summary: str
    origins: tuple[str, ...] = ()
    """The origin nodes, one line each (localize)."""
    repro: str = ""
    """Where ``gero localize -o`` wrote the origin's repro directory, when it did."""


@dataclass(frozen=True)
class DownloadFile:
    """A file of a representative's evidence, copied beside the report for download."""

    label: str
    """What it is: graph, inputs, manifest, case."""
    name: str
    """Its name in the evidence directory (``model.onnx``), or what it was made from."""
    href: str
    """Relative to the report's folder, URL-quoted (a file shared by findings is written
    once: the others link to it)."""
    size: int
    sha256: str
    manifest: bool | None
    """Whether the case's manifest records this digest (None: it records no digest of the
    file as a whole, e.g. inputs.npz gathered from the packed members)."""


@dataclass(frozen=True)
class FindingEvidence:
    """A finding with what the report shows of it beyond its figures."""

    finding: Finding
    analysis: ElementAnalysis | None
    """The representative's element-wise picture (histogram, worst elements)."""
    analysis_note: str
    """Why there is no picture, when there is none."""
    localized: tuple[Localization, ...]
    replay_command: str
    bundle_command: str
    downloads: tuple[DownloadFile, ...] = ()
    """The representative's graph, inputs and manifest beside the report (``gero report``
    writes them; none when its evidence is missing)."""


@dataclass(frozen=True)
class RunReport:
    run_id: str
    data_root: Path
    record: dict[str, Any]
    counts: dict[str, int]
    paths: tuple[PathSetting, ...]
    references: tuple[ReferencePath, ...]
    tolerances: tuple[ToleranceUse, ...]
    findings: tuple[FindingEvidence, ...]
    operations: tuple[OperationSummary, ...]
    bars: tuple[OperationBar, ...]
    runtime_medians: dict[str, dict[str, float]]
    """Per operation, each runtime's median of per-case medians (ms)."""
    timings: tuple[RuntimeTiming, ...]
    baseline_run_id: str | None = None
    baseline_problem: str = ""
    gone: tuple[Finding, ...] = ()
    unresolved: tuple[Finding, ...] = ()
    problems: tuple[str, ...] = ()
    rows_per_segment: int = ROWS_PER_SEGMENT
    non_passed: int = 0
    split: Split | None = None
    """The non-passed counts split: to act on, and what cannot be assessed (apart)."""
    landing: tuple[LandingRow, ...] = ()
    """One row per operation, what can be assessed and fails first."""
    evidence_folder: str = ""
    """The folder beside the report that holds the representatives' downloads."""
    generated_with: dict[str, str] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    releases: ReleaseMatrix | None = None
    """Operator × release: what each runtime release changed (None: no releases compared)."""
    not_run: tuple[dict[str, Any], ...] = ()
    """The settings the needed-paths plan did not run on a model, with why (no row: in no
    count; ``gero.query.plan_notes``)."""
    notes: tuple[dict[str, Any], ...] = ()
    """The rows' notes (sentences that change no verdict), each with its model and row count."""
    """The verdict card of each model case (none for the operator suites)."""

    @property
    def runtimes(self) -> tuple[RuntimeSettings, ...]:
        return compact_paths(self.paths)

    @property
    def observations(self) -> int:
        return sum(self.counts.values())


Commands = Callable[[Finding], tuple[str, str]]
"""A finding's (replay command, bundle command)."""


def gather(source: OpenRun, findings: FindingsReport, commands: Commands,
           problems: Iterable[str] = (), rows_per_segment: int = ROWS_PER_SEGMENT) -> RunReport:
    """The report of the open run ``source`` whose findings (with status against a baseline)
    are ``findings``."""
    counts = class_counts(source)
    localized = _localizations(source, findings.findings)
    record = source.record()
    evidence = _evidence_rows(source, findings.findings)
    # absolute: the commands the page prints work from wherever it is opened
    root = Path(source.data_root).resolve()
    return RunReport(
        run_id=source.run_id, data_root=root, record=record,
        counts={c: int(counts.get(c, 0)) for c in RESULT_CLASSES},
        paths=_paths(source), references=_references(source),
        tolerances=_tolerances(source, record),
        findings=tuple(_evidence(source, f, evidence.get(f.representative.observation_id),
                                 localized.get(f.finding_id, ()), commands)
                       for f in findings.findings),
        operations=tuple(operations(source)),
        bars=_bars(source, rows_per_segment, root),
        split=split_counts(source), landing=landing(source, bool(findings.findings)),
        runtime_medians=runtime_medians(source), timings=tuple(timings(source)),
        baseline_run_id=findings.baseline_run_id, baseline_problem=findings.baseline_problem,
        gone=tuple(findings.gone), unresolved=tuple(findings.unresolved),
        problems=tuple(dict.fromkeys(problems)), rows_per_segment=rows_per_segment,
        non_passed=findings.non_passed, verdicts=tuple(verdicts(source)),
        releases=release_matrix(source), not_run=tuple(not_run(source)),
        notes=tuple(notes(source)))


# What was compared ----------------------------------------------------------------------

def _settings_pairs(text: str | None) -> tuple[tuple[str, str], ...]:
    try:
        decoded = json.loads(text or "{}")
    except ValueError:
        return (("settings", str(text)),)
    if not isinstance(decoded, dict):
        return (("settings", str(text)),)
    return tuple((str(k), v if isinstance(v, str) else json.dumps(v))
                 for k, v in sorted(decoded.items()))


def _paths(source: OpenRun) -> tuple[PathSetting, ...]:
    rows = source.query(f"""
        SELECT backend, any_value(backend_version), {PATH_SQL} AS setting,
               session_settings, count(*)
        FROM obs GROUP BY backend, optimization, setting, session_settings
        ORDER BY backend = '{REFERENCE}', {OPTIMIZATION_ORDER_SQL}, setting,
                 session_settings""")
    return tuple(PathSetting(str(b), str(v or "-"), str(s), _settings_pairs(j), int(n))
                 for b, v, s, j, n in rows)


def _references(source: OpenRun) -> tuple[ReferencePath, ...]:
    rows = source.query("""
        SELECT reference, any_value(reference_version), count(*) FROM obs
        WHERE NOT starts_with(reference, 'law:') GROUP BY reference
        ORDER BY count(*) DESC, reference""")
    return tuple(ReferencePath(str(r), str(v or "-"), int(n)) for r, v, n in rows)


def _tolerances(source: OpenRun, record: dict[str, Any]) -> tuple[ToleranceUse, ...]:
    checks = ", ".join(f"'{c}'" for c in COMPARISON_CHECKS)
    rows = source.query(f"""
        SELECT dtype, rtol, atol, count(*), list_sort(list_distinct(list(op_type))) FROM obs
        WHERE "check" IN ({checks}) AND rtol IS NOT NULL AND atol IS NOT NULL
        GROUP BY dtype, rtol, atol ORDER BY dtype, count(*) DESC""")
    table = record.get("tolerances") if isinstance(record.get("tolerances"), dict) else {}
    out = []
    for d, r, a, n, ops in rows:
        run = table.get(str(d)) if isinstance(table, dict) else None
        pair = ((float(run["rtol"]), float(run["atol"]))
                if isinstance(run, dict) and "rtol" in run and "atol" in run else None)
        out.append(ToleranceUse(str(d), float(r), float(a), int(n),
                                DEFAULT_TOLERANCES.get(str(d)), pair or
                                DEFAULT_TOLERANCES.get(str(d)), tuple(map(str, ops))))
    return tuple(out)


# Findings -------------------------------------------------------------------------------

_EVIDENCE_COLUMNS = ("observation_id", "artifact_path", "actual_file", "reference_file",
                     "rtol", "atol", "check", "reference")


def _evidence_rows(source: OpenRun, findings: list[Finding]) -> dict[str, dict[str, Any]]:
    """The columns ``load_evidence`` reads, of every representative, in one scan (one scan
    by id each took half a second a finding on a million rows)."""
    ids = [f.representative.observation_id for f in findings if f.representative.artifact_path]
    if not ids:
        return {}
    columns = ", ".join(f'"{c}"' for c in _EVIDENCE_COLUMNS)
    rows = source.query(f"SELECT {columns} FROM obs WHERE observation_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ids])
    return {str(r[0]): dict(zip(_EVIDENCE_COLUMNS, r, strict=True)) for r in rows}


def _evidence(source: OpenRun, finding: Finding, row: dict[str, Any] | None,
              localized: tuple[Localization, ...], commands: Commands) -> FindingEvidence:
    replay, bundle = commands(finding)
    analysis: ElementAnalysis | None = None
    note = ""
    if row is None:
        note = "no evidence kept for this observation"
    else:
        try:
            analysis = analyse(load_evidence(Path(source.data_root), row), worst_count=5)
        except GeroError as e:
            note = str(e)
    return FindingEvidence(finding, analysis, note, localized, replay, bundle)


def _figure(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _origin_line(origin: StoredOrigin) -> str:
    """One origin of a stored localization in words (``gero localize``'s NodeFinding: node,
    op type, its inputs' and its own scaled error, the share of the final error)."""
    line = origin.node
    if origin.op_type:
        line += f" ({origin.op_type})"
    if origin.fused_as:
        line += f", fused as {origin.fused_as}"
    inputs, local = origin.inputs_scaled_error, origin.local_scaled_error
    if inputs is not None and local is not None:
        line += f": inputs agree to {_figure(inputs)} scaled, alone it adds {_figure(local)}"
    share = origin.share
    if share is not None:
        line += (f", explains {share:.0%} of the final error" if share < 10
                 else f", explains {share:.3g}× the final error")
    return line


def localization_of(tool: str, observation_id: str, data: dict[str, Any]) -> Localization:
    """A stored localize or blame result as the report states it (a localization read
    through the checked reader, stored_localization)."""
    summary = next((str(data[k]) for k in ("summary", "sentence", "text") if data.get(k)), "")
    lines: tuple[str, ...] = ()
    repro = ""
    if tool == LOCALIZE_DIR:
        loc = parse_localization(data, observation_id)
        lines, repro = tuple(_origin_line(o) for o in loc.origins), loc.repro
    if not summary and tool == BLAME_DIR and data.get("first_level"):
        summary = f"first level that changes the output: {data['first_level']}"
    if not summary and not lines:
        summary = "stored without a summary"
    return Localization(tool, observation_id, summary, lines, repro=repro)


def _localizations(source: OpenRun, findings: list[Finding]
                   ) -> dict[str, tuple[Localization, ...]]:
    """Stored localize and blame results of the findings' members, per finding id (the
    representative's first). One look per evidence directory of a non-passed row."""
    if not findings:
        return {}
    root = Path(source.data_root)
    stored: dict[str, list[tuple[str, Path]]] = {}
    for (relative,) in source.query("SELECT DISTINCT artifact_path FROM obs "
                                    "WHERE result <> 'passed' AND artifact_path <> ''"):
        try:
            directory = resolve_artifact(root, str(relative))
        except GeroError:
            continue
        for tool in (LOCALIZE_DIR, BLAME_DIR):
            folder = directory / tool
            if not folder.is_dir():
                continue
            for file in sorted(folder.glob("*.json")):
                stored.setdefault(file.stem, []).append((tool, file))
    if not stored:
        return {}
    ensure_members(source)
    owners = source.query(f"SELECT observation_id, finding_id FROM {MEMBERS_TABLE} "
                          "WHERE observation_id IN (SELECT unnest(?::VARCHAR[]))",
                          [sorted(stored)])
    representative = {f.finding_id: f.representative.observation_id for f in findings}
    found: dict[str, list[Localization]] = {}
    for oid, fid in sorted(owners, key=lambda r: (r[0] != representative.get(r[1]), r[0])):
        for tool, file in sorted(stored[str(oid)], key=lambda t: t[0] != LOCALIZE_DIR):
            data = read_json_object(file)  # None: absent or unreadable, not localized
            if data is not None:
                found.setdefault(str(fid), []).append(localization_of(tool, str(oid), data))
    return {fid: tuple(items) for fid, items in found.items()}


# Precision across operations ------------------------------------------------------------

def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def export_command(data_root: Path, run_id: str, op_type: str, result: str) -> str:
    """``gero export`` of every row of one operation and result class."""
    where = f"op_type = {_sql_text(op_type)} AND result = {_sql_text(result)}"
    return " ".join([shlex.join(["gero", "export", "--data-dir", str(data_root), "--run",
                                 run_id, "--where"]), _shell_word(where),
                     shlex.join(["--format", "csv", "-o", f"{result}-rows.csv"])])


def _shell_word(text: str) -> str:
    """``text`` as one shell word: in double quotes when nothing in it is special there (a
    filter reads as written), else quoted the safe way."""
    if any(c in text for c in '"$`\\!\n'):
        return shlex.quote(text)
    return f'"{text}"'


def _bars(source: OpenRun, per_segment: int, root: Path) -> tuple[OperationBar, ...]:
    # Two steps, as the explorer's table pages: the top rows of each segment from narrow
    # columns (max_by keeps n per group without sorting the run; ties go to the larger id,
    # so a report is the same every time), then their wide columns by id. [x][1] hides
    # Parquet statistics, which would fold isnan() to false (histograms.py).
    tops = source.query("""
        SELECT op_type, result, count(*),
               max_by(observation_id, {'x': CASE WHEN x IS NULL OR isnan(x) THEN -1.0
                                                 ELSE x END, 'id': observation_id}, ?)
        FROM (SELECT op_type, result, observation_id, [max_abs_error][1] AS x FROM obs)
        GROUP BY op_type, result""", [per_segment])
    ids = [str(i) for *_, top in tops for i in top]
    rows = {str(r[0]): r for r in source.query(f"""
        SELECT observation_id, {CASE_SQL}, dtype, input_shapes, {PATH_SQL}, "check",
               [max_abs_error][1], result, coalesce(arbiter, '-'), reason
        FROM obs WHERE observation_id IN (SELECT unnest(?::VARCHAR[]))""", [ids])}
    by_op: dict[str, dict[str, tuple[int, list[EvaluationRow]]]] = {}
    for op, result, n, top in tops:
        worst = []
        for oid in top:
            _, case, dtype, shapes, setting, check, x, res, arbiter, reason = rows[str(oid)]
            error = None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
            worst.append(EvaluationRow(str(oid), str(case), str(dtype), str(shapes),
                                       str(setting), str(check), error, str(res),
                                       str(arbiter), str(reason or "")))
        by_op.setdefault(str(op), {})[str(result)] = (int(n), worst)
    return tuple(
        OperationBar(op, tuple(
            Segment(c, classes.get(c, (0, []))[0], tuple(classes.get(c, (0, []))[1]),
                    export_command(root, source.run_id, op, c))
            for c in RESULT_CLASSES))
        for op, classes in sorted(by_op.items()))


# The landing table ----------------------------------------------------------------------

def _evaluation_rows(source: OpenRun, ids: list[str]) -> dict[str, EvaluationRow]:
    """The evaluations table's cells of these observations, by id."""
    rows = source.query(f"""
        SELECT observation_id, {CASE_SQL}, dtype, input_shapes, {PATH_SQL}, "check",
               [max_abs_error][1], result, coalesce(arbiter, '-'), reason
        FROM obs WHERE observation_id IN (SELECT unnest(?::VARCHAR[]))""", [ids])
    out = {}
    for oid, case, dtype, shapes, setting, check, x, res, arbiter, reason in rows:
        error = None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
        out[str(oid)] = EvaluationRow(str(oid), str(case), str(dtype), str(shapes),
                                      str(setting), str(check), error, str(res),
                                      str(arbiter), str(reason or ""))
    return out


def landing(source: OpenRun, with_findings: bool = True) -> tuple[LandingRow, ...]:
    """One row per operation: its worst row that can be assessed (``SEVERITY``, then the
    largest max abs. error; a row that cannot be assessed only when nothing else failed; a
    passed row when nothing failed). Operations with something to act on first, worst
    first, then those whose failures cannot be assessed, then those that passed."""
    tops = source.query(f"""
        SELECT op_type, count(*), count(*) FILTER (WHERE result <> 'passed'),
               count(*) FILTER (WHERE why <> ''),
               max_by(observation_id, {{'act': result <> 'passed' AND why = '',
                                        'severity': severity, 'x': x, 'id': observation_id}})
        FROM (SELECT op_type, observation_id, result, {severity_sql()} AS severity,
                     {unassessable_sql()} AS why,
                     -- [x][1] hides Parquet statistics, which would fold isnan() (_bars)
                     CASE WHEN [max_abs_error][1] IS NULL OR isnan([max_abs_error][1])
                          THEN -1.0 ELSE [max_abs_error][1] END AS x
              FROM obs)
        GROUP BY op_type""")
    rows = _evaluation_rows(source, [str(t[4]) for t in tops])
    owners: dict[str, str] = {}
    if with_findings and any(t[2] for t in tops):
        ensure_members(source)
        owners = {str(o): str(f) for o, f in source.query(
            f"SELECT observation_id, finding_id FROM {MEMBERS_TABLE} "
            "WHERE observation_id IN (SELECT unnest(?::VARCHAR[]))", [list(rows)])}
    out = [LandingRow(str(op), rows[str(oid)], int(n), int(bad), int(apart),
                      owners.get(str(oid), ""))
           for op, n, bad, apart, oid in tops]

    def order(r: LandingRow) -> tuple[int, int, float, str]:
        group = 0 if r.actionable else 1 if r.not_passed else 2
        severity = -SEVERITY.get(r.row.result, 0) if group < 2 else 0
        return (group, severity, -(r.row.max_abs_error or 0.0), r.op_type)

    return tuple(sorted(out, key=order))
