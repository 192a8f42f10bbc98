"""Findings: the run's non-passed observations grouped by cause, computed in DuckDB.

A finding is what a person would name in one sentence ("ONNX Runtime has no float64
kernel", "the ReferenceEvaluator's float16 LayerNormalization is off"). Its signature is

- the check family: ``numeric`` (agreement, analytic, expected and levels rows of a case
  read together), ``execution``, or the contract / variant / model check itself;
- the outlier: which path the case's evidence blames, decided per case and family. Rows
  against float64 or shipped outputs (analytic, expected) decide it where they failed;
  otherwise each row blames a side (an agreement row by its float64 arbiter, a levels,
  contract or variant row its own path). ONNX Runtime failing at every level it ran is
  ``onnxruntime``, at some levels ``onnxruntime@extended,all``; all paths ``every path``;
- the reason's template (the decisive row's reason with numbers, quoted names and
  ``Op(opset)`` taken out);
- the operator, except where the template names a cause shared across operators (a
  missing kernel, NaN fed to every path, a registered upstream defect).

Every non-passed observation belongs to exactly one finding: the members table
``finding_members`` (observation id, finding id) is written into the run's DuckDB
database, so the explorer filters and groups by finding without loading rows into Python.
The finding id is a hash of the signature: the same cause has the same id in every run.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, EXECUTION, OPT_LEVELS

MEMBERS_TABLE = "finding_members"
"""observation_id -> finding_id (and the signature parts), one row per non-passed observation."""
ORDER_TABLE = "finding_order"
"""observation_id -> finding_rank (1 = the worst finding): the table grouped by finding."""

NUMERIC_CHECKS = ("agreement", "analytic", "expected", "levels")
"""Checks of one case that compare the same outputs and are read together."""
TRUTH_CHECKS = ("analytic", "expected")
"""Checks against float64 or the case's shipped outputs: they decide which path is off."""

CROSS_OPERATOR_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("%Could not find an implementation for OP(#)%", "a missing kernel, whichever operator"),
    ("%known upstream defect%", "a registered ReferenceEvaluator defect names its operators"),
    ("NaN on both sides at # of # elements%", "NaN fed to every path propagates through any op"),
    ("%OP does not support%", "a runtime without a kernel for a dtype, whichever operator"),
)
"""Templates whose cause does not depend on the operator: one finding across operators."""

NAN_TEMPLATE = "NaN on both sides: NaN == NaN never passes, the baseline cannot be assessed"
"""One cause for every check that saw NaN on both sides: NaN fed to the paths propagated."""

RUNTIME_TEMPLATE = "off from float64, its laws or its variants where ORT and the reference are not"
"""Only a runtime other than ORT and the ReferenceEvaluator is off, in any check of a dtype:
its precision for that dtype is the cause, across operators and checks."""

SEVERITY = {CONTRACT_ISSUE: 3, DIVERGENCE: 2, EXECUTION: 1}
"""Worst first: a broken law or non-finite output, then a divergence, then unsupported."""

_LEVEL_ORDER = "CASE {x} WHEN 'disable_all' THEN '0' WHEN 'basic' THEN '1' " \
               "WHEN 'extended' THEN '2' WHEN 'all' THEN '3' ELSE '4' END"


class Queryable(Protocol):
    """A run opened for reading: an ``obs`` view and a query method (any thread)."""

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True)
class Representative:
    """The worst observation of a finding, with the figures a bug report quotes."""

    observation_id: str
    case_id: str
    check: str
    dtype: str
    input_shapes: str
    backend: str
    optimization: str
    reference: str
    result: str
    reason: str
    max_abs_error: float | None
    max_ulp: float | None
    rtol: float | None
    atol: float | None
    artifact_path: str


@dataclass(frozen=True)
class Finding:
    """One cause behind a run's non-passed observations."""

    finding_id: str
    """Hash of the signature: the same cause has the same id in every run."""
    title: str
    result: str
    """The class of its worst observation."""
    family: str
    outlier: str
    template: str
    operator_key: str
    """The operator of the signature, or ``*`` for a cause shared across operators."""
    observations: int
    cases: int
    operators: tuple[str, ...]
    dtypes: tuple[str, ...]
    levels: tuple[str, ...]
    class_counts: dict[str, int]
    max_abs_error: float | None
    representative: Representative
    status: str = ""
    """Against a baseline: ``new`` or ``still`` (``gone`` findings are the baseline's)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FindingsReport:
    """A run's findings, with those of its baseline that are gone."""

    run_id: str
    findings: list[Finding]
    baseline_run_id: str | None = None
    gone: list[Finding] = field(default_factory=list)
    """Baseline findings whose cases all ran again here and no longer show them."""
    unresolved: list[Finding] = field(default_factory=list)
    """Baseline findings absent here whose cases did not all run again: not assessed."""
    non_passed: int = 0
    """Non-passed observations of the run (each in exactly one finding)."""

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "baseline_run_id": self.baseline_run_id,
                "non_passed": self.non_passed,
                "findings": [f.as_dict() for f in self.findings],
                "gone": [f.as_dict() for f in self.gone],
                "unresolved": [f.as_dict() for f in self.unresolved]}


def _template_sql(column: str) -> str:
    """The reason with the path prefix, ``Op(opset)``, quoted names and numbers taken out."""
    out = f"regexp_replace({column}, '^(variant \\S+: )?\\S+ failed: ', '\\1PATH failed: ')"
    out = f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]*\\(\\d+\\)', 'OP(#)', 'g')"
    out = f"regexp_replace({out}, '''[^'']*''', '''…''', 'g')"
    out = f"regexp_replace({out}, '\"[^\"]*\"( [A-Z][A-Za-z0-9]*)?', '\"…\" OP', 'g')"
    out = (f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]* does not support', "
           "'OP does not support', 'g')")
    out = f"regexp_replace({out}, '\\b\\d+(\\.\\d+)?([eE][-+]?\\d+)?\\b', '#', 'g')"
    return out


def _cross_operator_sql() -> str:
    return " OR ".join(f"template LIKE '{p}'" for p, _ in CROSS_OPERATOR_TEMPLATES)


def _numeric_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def members_sql(relation: str = "obs") -> str:
    """SQL that selects one row per non-passed observation of ``relation`` with its finding."""
    numeric = _numeric_list(NUMERIC_CHECKS)
    truth = _numeric_list(TRUTH_CHECKS)
    level = "substr(p, 13)"
    return f"""
WITH raw AS MATERIALIZED (
    SELECT observation_id, case_id, op_type, dtype, "check" AS chk, optimization, result,
           CASE WHEN backend = 'onnxruntime' THEN 'onnxruntime@' || optimization
                ELSE backend END AS path,
           reference, arbiter, max_abs_error, reason,
           CASE WHEN result = '{EXECUTION}' THEN 'execution'
                WHEN "check" IN ({numeric}) THEN 'numeric' ELSE "check" END AS family,
           "check" IN ({truth}) AS truth,
           {' + '.join(f"(result = '{k}')::INT * {v}" for k, v in SEVERITY.items())} AS severity
    FROM {relation} WHERE result <> 'passed'
), templates AS (
    -- the regular expressions run once per distinct reason, not once per row
    SELECT reason, {_template_sql('reason')} AS template,
           regexp_extract(reason, '^(?:variant \\S+: )?(\\S+) failed: ', 1) AS failed_path
    FROM (SELECT DISTINCT reason FROM raw)
), bad AS (
    SELECT r.* EXCLUDE (reason), t.template, t.failed_path
    FROM raw r JOIN templates t ON r.reason IS NOT DISTINCT FROM t.reason
), blamed AS (
    SELECT *,
           CASE WHEN family = 'execution' AND failed_path LIKE 'ort-%'
                    THEN 'onnxruntime@' || substr(failed_path, 5)
                WHEN family = 'execution' AND failed_path <> '' THEN failed_path
                WHEN chk = 'agreement' AND arbiter = 'actual' THEN reference
                WHEN chk = 'agreement' AND arbiter = 'reference' THEN path
                WHEN chk = 'agreement' THEN 'undecided'
                ELSE path END AS blames,
           -- each failure message of a case is its own cause; other families read a case whole
           CASE WHEN family = 'execution' THEN template ELSE '' END AS grp
    FROM bad
), present AS MATERIALIZED (
    -- every path a case ran per check family, the agreement rows' reference side included
    SELECT case_id, CASE WHEN "check" IN ({numeric}) THEN 'numeric' ELSE "check" END AS fam,
           list_distinct(list_concat(
               list(DISTINCT CASE WHEN backend = 'onnxruntime'
                                  THEN 'onnxruntime@' || optimization ELSE backend END),
               coalesce(list(DISTINCT reference) FILTER ("check" = 'agreement'), [])))
               AS paths
    FROM {relation} WHERE case_id IN (SELECT DISTINCT case_id FROM bad) GROUP BY ALL
), groups AS (
    SELECT case_id, family, grp,
           list_sort(list_distinct(CASE WHEN bool_or(truth) THEN list(blames) FILTER (truth)
                                        ELSE list(blames) END)) AS bad_paths,
           first(template ORDER BY truth DESC, severity DESC, max_abs_error DESC NULLS LAST,
                 observation_id) AS template,
           first(op_type) AS op_type, first(dtype) AS dtype
    FROM blamed GROUP BY case_id, family, grp
), labelled AS (
    SELECT g.case_id, g.family, g.grp, g.template, g.op_type, g.dtype,
           list_filter(g.bad_paths, lambda p: p LIKE 'onnxruntime@%') AS ort_bad,
           list_filter(g.bad_paths, lambda p: p NOT LIKE 'onnxruntime@%') AS other_bad,
           len(list_filter(coalesce(p.paths, []), lambda p: p LIKE 'onnxruntime@%'))
               AS ort_present,
           len(g.bad_paths) > 0 AND len(coalesce(p.paths, [])) > 1
               AND list_has_all(g.bad_paths, p.paths) AS everything
    -- a failure is read against the paths the case compared
    FROM groups g LEFT JOIN present p ON p.case_id = g.case_id
        AND p.fam = CASE WHEN g.family = 'execution' THEN 'numeric' ELSE g.family END
), outliers AS (
    SELECT case_id, family, grp, template, op_type, dtype,
           CASE WHEN everything THEN 'every path'
                ELSE array_to_string(list_concat(other_bad, CASE
                    WHEN len(ort_bad) = 0 THEN []
                    WHEN len(ort_bad) >= ort_present THEN ['onnxruntime']
                    ELSE ['onnxruntime@' || array_to_string(list_transform(list_sort(
                        list_transform(ort_bad, lambda p: {_LEVEL_ORDER.format(x=level)}
                                       || {level})), lambda s: substr(s, 2)), ',')]
                    END), '+') END AS outlier
    FROM labelled
), ruled AS (
    SELECT *, template LIKE '%NaN on both sides at # of # elements%' AS nan_fed,
           -- only runtimes other than ORT and the ReferenceEvaluator are off: the runtime's
           -- precision for the dtype is the cause, across its operators
           family <> 'execution' AND outlier NOT LIKE '%onnxruntime%'
               AND outlier NOT LIKE '%onnx-reference%' AND outlier <> 'every path'
               AND outlier NOT LIKE '%undecided%' AS other_runtime
    FROM outliers
), keyed AS (
    SELECT case_id, family AS group_family, grp, outlier,
           CASE WHEN nan_fed THEN 'nan' WHEN other_runtime THEN 'runtime' ELSE family END
               AS family,
           CASE WHEN nan_fed THEN '{NAN_TEMPLATE}'
                WHEN other_runtime THEN '{RUNTIME_TEMPLATE}' ELSE template END AS template,
           CASE WHEN nan_fed OR {_cross_operator_sql()} THEN '*'
                WHEN other_runtime THEN '*' || dtype ELSE op_type END AS operator_key
    FROM ruled
), signed AS (
    -- hashed per case group, not per row
    SELECT *, left(sha256(family || '|' || outlier || '|' || template || '|' || operator_key),
                   12) AS finding_id
    FROM keyed
)
SELECT b.observation_id, s.finding_id, s.family, s.outlier, s.template, s.operator_key,
       b.case_id, b.op_type, b.dtype, b.optimization, b.result, b.severity, b.max_abs_error
FROM blamed b JOIN signed s ON s.case_id = b.case_id AND s.group_family = b.family
    AND s.grp = b.grp
"""


def build_members(source: Queryable, relation: str = "obs", table: str = MEMBERS_TABLE) -> None:
    """Write the members table into the source's database (kept for filters and grouping),
    and, for the default table, each member's finding rank (worst first, as listed)."""
    source.query(f"CREATE OR REPLACE TABLE {table} AS {members_sql(relation)}")
    if table == MEMBERS_TABLE:
        source.query(f"""CREATE OR REPLACE TABLE {ORDER_TABLE} AS
            SELECT m.observation_id, r.finding_rank FROM {table} m JOIN (
                SELECT finding_id, row_number() OVER (
                    ORDER BY max(severity) DESC, count(*) DESC, finding_id) AS finding_rank
                FROM {table} GROUP BY finding_id) r USING (finding_id)""")


def has_members(source: Queryable) -> bool:
    """Whether the findings of this source were computed (their tables exist)."""
    rows = source.query("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                        [ORDER_TABLE])
    return bool(rows and rows[0][0])


_FINDINGS_SQL = """
SELECT finding_id, any_value(family), any_value(outlier), any_value(template),
       any_value(operator_key), count(*), count(DISTINCT case_id),
       list_sort(list_distinct(list(op_type))), list_sort(list_distinct(list(dtype))),
       list_distinct(list(optimization) FILTER (optimization <> '-')),
       count(*) FILTER (result = 'contract_issue'), count(*) FILTER (result = 'divergence'),
       count(*) FILTER (result = 'execution'),
       max(max_abs_error) FILTER (isfinite(max_abs_error)),
       first(observation_id ORDER BY severity DESC, max_abs_error DESC NULLS LAST,
             observation_id),
       max(severity)
FROM {table} GROUP BY finding_id
"""

_REPRESENTATIVE_COLUMNS = ("observation_id", "case_id", "check", "dtype", "input_shapes",
                           "backend", "optimization", "reference", "result", "reason",
                           "max_abs_error", "max_ulp", "rtol", "atol", "artifact_path")


def _representatives(source: Queryable, ids: list[str]) -> dict[str, Representative]:
    if not ids:
        return {}
    columns = ", ".join(f'"{c}"' for c in _REPRESENTATIVE_COLUMNS)
    rows = source.query(f"SELECT {columns} FROM obs WHERE observation_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ids])
    return {str(r[0]): Representative(*r) for r in rows}


def _levels(values: list[str]) -> tuple[str, ...]:
    known = [v for v in OPT_LEVELS if v in values]
    return tuple(known + sorted(v for v in values if v not in OPT_LEVELS))


def read_findings(source: Queryable, table: str = MEMBERS_TABLE) -> list[Finding]:
    """The findings of a members table already built, worst first."""
    rows = source.query(_FINDINGS_SQL.format(table=table))
    reps = _representatives(source, [str(r[14]) for r in rows])
    severity_class = {v: k for k, v in SEVERITY.items()}
    findings = []
    for (fid, family, outlier, template, op_key, n, cases, ops, dtypes, levels, ci, dv, ex,
         max_err, rep_id, severity) in rows:
        counts = {CONTRACT_ISSUE: ci, DIVERGENCE: dv, EXECUTION: ex}
        result = severity_class.get(int(severity), EXECUTION)
        finding = Finding(
            finding_id=str(fid), title="", result=result, family=str(family),
            outlier=str(outlier), template=str(template), operator_key=str(op_key),
            observations=int(n), cases=int(cases), operators=tuple(ops), dtypes=tuple(dtypes),
            levels=_levels(list(levels or [])), class_counts={k: int(v) for k, v in counts.items()},
            max_abs_error=None if max_err is None else float(max_err),
            representative=reps[str(rep_id)])
        findings.append(_with_title(finding))
    findings.sort(key=lambda f: (-SEVERITY.get(f.result, 0), -f.observations, f.finding_id))
    return findings


_BUILDING = threading.Lock()
"""Two screens (or a screen and the table's sort) may ask at once: one writes the tables."""


def compute_findings(source: Queryable) -> list[Finding]:
    """Group the run's non-passed observations into findings (worst first)."""
    with _BUILDING:
        build_members(source)
        return read_findings(source)


def non_passed_count(source: Queryable) -> int:
    rows = source.query("SELECT count(*) FROM obs WHERE result <> 'passed'")
    return int(rows[0][0]) if rows else 0


# Titles ---------------------------------------------------------------------------------

_PATH_NAMES = {"onnxruntime": "ONNX Runtime", "onnx-reference": "the ReferenceEvaluator",
               "every path": "every path", "undecided": "an undecided side",
               "openvino": "OpenVINO"}


def path_name(outlier: str) -> str:
    """An outlier label in words: ``onnxruntime@extended,all`` -> ONNX Runtime at extended, all."""
    parts = []
    for part in outlier.split("+"):
        if part.startswith("onnxruntime@"):
            parts.append("ONNX Runtime at " + part[len("onnxruntime@"):].replace(",", ", "))
        else:
            parts.append(_PATH_NAMES.get(part, part))
    return " and ".join(parts)


def _list(values: tuple[str, ...], limit: int = 4) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _short(template: str, limit: int = 70) -> str:
    text = " ".join(template.replace("PATH failed: ", "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _hint(template: str, limit: int = 60) -> str:
    """A law's template as words: its name prefix and counts taken out."""
    text = template.split(": ", 1)[1] if ": " in template else template
    text = " ".join(text.replace("# of # ", "").replace("#", "n").split())
    return _short(text, limit)


def _title(f: Finding) -> str:
    ops = _list(f.operators)
    dtypes = "/".join(f.dtypes)
    who = path_name(f.outlier)
    sentence_who = who[0].upper() + who[1:]
    if "known upstream defect" in f.template:
        return f"Known upstream ReferenceEvaluator defect ({ops}, {dtypes}): {_short(f.template)}"
    if f.family == "execution":
        if "Could not find an implementation" in f.template:
            return (f"{sentence_who} has no {dtypes} kernel for {len(f.operators)} "
                    f"operator(s): {ops}")
        return f"{sentence_who} cannot run {ops} ({dtypes}): {_hint(f.template)}"
    if f.template.startswith("NaN on both sides"):
        return f"NaN inputs propagate on {who}: NaN == NaN cannot be assessed ({ops}, {dtypes})"
    if f.family == "runtime":
        dtype = f.operator_key[1:]
        return (f"{sentence_who} {'is' if ' and ' not in who else 'are'} off on {dtype} where "
                f"ONNX Runtime and the reference are not: {len(f.operators)} operator(s): {ops}")
    if f.family == "numeric":
        if f.outlier == "onnx-reference":
            return (f"The ReferenceEvaluator's {ops} ({dtypes}) is off; ONNX Runtime agrees "
                    "with float64")
        if f.outlier.startswith("onnxruntime"):
            return (f"{sentence_who}'s {ops} ({dtypes}) is off; the ReferenceEvaluator agrees "
                    "with float64")
        if "non-finite" in f.template:
            return f"{sentence_who} gives non-finite {ops} ({dtypes}) where float64 is finite"
        return f"{ops} ({dtypes}) on {who} differs from float64 beyond tolerance"
    kind, _, name = f.family.partition(":")
    if kind == "contract":
        return f"{ops} ({dtypes}) breaks the {name} law on {who}: {_hint(f.template)}"
    if kind == "variant":
        return f"{ops} ({dtypes}): the {name} variant disagrees on {who}"
    return f"{ops} ({dtypes}) {f.family} on {who}: {_hint(f.template)}"


def _with_title(f: Finding) -> Finding:
    return Finding(**{**asdict(f), "representative": f.representative, "title": _title(f)})


def findings_json(report: FindingsReport) -> str:
    return json.dumps(report.as_dict(), indent=2, default=str)
