"""Findings: the run's non-passed observations grouped by cause, computed in DuckDB.

A finding is what a person would name in one sentence ("ONNX Runtime has no float64
kernel", "the ReferenceEvaluator's float16 LayerNormalization is off", "OpenVINO computes
float64 in f32"). Its signature is

- the check family: ``numeric`` (agreement, analytic, expected and levels rows of a case
  read together), ``execution``, or the contract / variant check itself; a law or variant
  that a runtime breaks in a case where its outputs are already off joins ``numeric``;
- the outlier: the path each row blames (its own, or for an agreement or levels row the
  side float64 does not side with; a reference that failed), grouped per case by runtime:
  ``onnxruntime`` when every level it ran is off, ``onnxruntime@extended,all`` when some
  are; ``every path`` when every runtime that ran the case is blamed. So a case can hold
  two causes (the ReferenceEvaluator's Erf defect and OpenVINO's float32 arithmetic);
- the reason's template: for comparisons its kind (finite values out of tolerance; NaN or
  inf on the blamed side only; finite where the other side is not; a registered upstream
  defect), for laws their sentence without figures, for failures the message with numbers,
  names, shapes and element types taken out (a chained error by its root cause);
- the operator, except where the cause is shared across operators: a failure message, NaN
  fed to every path, a registered defect, a runtime whose settings compute the dtype in
  fewer bits (OpenVINO's ``inference_precision``), a runtime's non-finite outputs.

Every non-passed observation belongs to exactly one finding: the members table
``finding_members`` (observation id, finding id) is written into the run's DuckDB
database, so the explorer filters and groups by finding without loading rows into Python.
The finding id is a hash of the signature: the same cause has the same id in every run,
whichever other runtimes ran beside it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import duckdb

from gero.query.assessable import unassessable_sql
from gero_runner.backends import ort_levels, path_name_sql, title
from gero_runner.result_classes import (
    ARBITRATED_CHECKS,
    COMPARISON_CHECKS,
    SEVERITY,
    TRUTH_CHECKS,
    severity_sql,
)
from gero_runner.schema import CONTRACT_ISSUE, DIVERGENCE, EXECUTION, MODEL_VARIANTS
from gero_runner.storage.layout import FINDINGS_CACHE_DIR

MEMBERS_TABLE = "finding_members"
"""observation_id -> finding_id (and the signature parts), one row per non-passed observation."""
ORDER_TABLE = "finding_order"
"""observation_id -> finding_rank (1 = the worst finding): the table grouped by finding."""

NUMERIC_CHECKS = COMPARISON_CHECKS
"""Checks of one case that compare the same outputs and are read together."""

NAN_TEMPLATE = "NaN on both sides: NaN == NaN never passes, the baseline cannot be assessed"
"""One cause for every check that saw NaN on both sides (and nothing else): NaN fed to the
paths propagated; no path is the outlier."""

OUTSIDE = "finite values outside tolerance"
"""A comparison's finite elements out of tolerance, whatever its figures."""
NONFINITE = "NaN or inf where the compared output is finite"
"""The blamed path's output is non-finite where the other side (float64, another path, the
other form of a variant) is finite."""
SWALLOWED = "finite where the compared output is NaN or inf"
"""The blamed path's output is finite where the other side is NaN or ±inf."""
LOWER_PRECISION = "computes {dtype} in {precision}"
"""A path whose settings say it computes in fewer bits than the output's dtype (OpenVINO's
``inference_precision``): its finite deviations of that dtype are that one cause."""

BUILD_FAILED = "building the "
"""How a variant build failure's reason starts (``building the fp16 variant failed: …``)."""
VARIANT_TOOLING = "variant-tooling"
"""The outlier of a variant gero's own tools could not build (no runtime is to blame)."""

PAIR = " vs "
"""Joins the two runtimes of a disagreement no float64 can decide (``onnxruntime vs
openvino``): the outlier of a model case without a float64 shadow."""
WIDENS_FP16 = "computes the fp16 file in float32"
"""How the row that says a runtime runs an fp16 file in float32 words it."""

_LEVEL_ORDER = "CASE {x} WHEN 'disable_all' THEN '0' WHEN 'basic' THEN '1' " \
               "WHEN 'extended' THEN '2' WHEN 'all' THEN '3' ELSE '4' END"
_WIDTH = ("CASE {x} WHEN 'float16' THEN 16 WHEN 'f16' THEN 16 WHEN 'bf16' THEN 16 "
          "WHEN 'bfloat16' THEN 16 WHEN 'float32' THEN 32 WHEN 'f32' THEN 32 "
          "WHEN 'float64' THEN 64 WHEN 'f64' THEN 64 END")


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
    median_abs_error: float | None = None
    """Its |a − r| distribution beside the maximum (None: recorded by a gero before error
    percentiles, or a listing cached by one)."""
    p99_abs_error: float | None = None


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
    """The operator of the signature, or ``*`` (``*DTYPE``) for a cause shared across
    operators."""
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
    seeded_inputs: bool = False
    """Every row of it is of a model case fed gero's seeded default inputs: the verdict
    rests on noise, not on the user's data (its title says so)."""
    cannot_assess: str = ""
    """Why no row of it can be assessed by construction (``assessable.REASONS``: NaN in,
    NaN out; an operator a runtime does not implement), ``''`` when some can. Such findings
    are counted apart and listed after every other."""

    @property
    def assessable(self) -> bool:
        return not self.cannot_assess

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FindingsReport:
    """A run's findings, with those of its baseline that are gone."""

    run_id: str
    findings: list[Finding]
    baseline_run_id: str | None = None
    gone: list[Finding] = field(default_factory=list)
    """Baseline findings whose cases all ran again here and passed."""
    unresolved: list[Finding] = field(default_factory=list)
    """Baseline findings absent here that are not gone: some of their cases did not run
    again, or ran and did not pass (another finding holds those rows now)."""
    non_passed: int = 0
    """Non-passed observations of the run (each in exactly one finding)."""
    baseline_problem: str = ""
    """Why the previous run was not compared with (its observations cannot be read)."""

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "baseline_run_id": self.baseline_run_id,
                "baseline_problem": self.baseline_problem, "non_passed": self.non_passed,
                "findings": [f.as_dict() for f in self.findings],
                "gone": [f.as_dict() for f in self.gone],
                "unresolved": [f.as_dict() for f in self.unresolved]}


def _template_sql(column: str) -> str:
    """The reason with the path prefix, operator and node names, quoted names, shapes,
    element types and numbers taken out."""
    out = f"regexp_replace({column}, '^(variant \\S+: )?\\S+ failed: ', '\\1PATH failed: ')"
    out = f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]*\\(\\d+\\)', 'OP(#)', 'g')"
    out = f"regexp_replace({out}, '\\([A-Z][A-Za-z0-9]*\\)', '(OP)', 'g')"
    out = f"regexp_replace({out}, '''[^'']*''', '''…''', 'g')"
    out = f"regexp_replace({out}, '\"[^\"]*\"( [A-Z][A-Za-z0-9]*)?', '\"…\" OP', 'g')"
    out = (f"regexp_replace({out}, '\\b[A-Z][A-Za-z0-9]* does not support', "
           "'OP does not support', 'g')")
    out = f"regexp_replace({out}, '\\b[FIU](8|16|32|64)\\b', 'T', 'g')"
    out = f"regexp_replace({out}, '#?\\b\\d+(\\.\\d+)?([eE][-+]?\\d+)?\\b', '#', 'g')"
    out = f"regexp_replace({out}, '(#, )+#|(#,)+#', '…', 'g')"
    out = f"regexp_replace({out}, '(#,)+', '…,', 'g')"
    # a chained error (tract's "Caused by:" list) is named by its root cause, its last line
    out = (f"regexp_replace({out}, '^(PATH failed: [A-Za-z]+: )[\\s\\S]*\\n\\s*(?:#: )?"
           "([^\\n]*[^\\s])\\s*$', '\\1\\2')")
    return out


def _kind_sql(template: str) -> str:
    """What a failed comparison or law says, its figures aside: NaN fed on both sides and
    nothing else, a registered upstream defect, a non-finite mismatch (naming the side that
    is non-finite: ``actual`` or ``reference``), finite values out of tolerance, or the
    law's own sentence with its details cut."""
    body = f"regexp_replace({template}, '^(variant )?[A-Za-z0-9_.-]+: ', '')"
    nan_only = (f"{template} LIKE '%NaN on both sides%' AND NOT regexp_matches({template}, "
                "' is (NaN|\\+inf|-inf) at|elements outside|non-finite value')")
    side = (f"regexp_extract({body}, '(?:^|; )(actual|reference) is (NaN|\\+inf|-inf) at', "
            "1)")
    law = (f"trim(split_part(regexp_replace(regexp_replace({body}, "
           "' ?\\([^()]*\\)', '', 'g'), ' ?\\([^()]*\\)', '', 'g'), ';', 1))")
    return f"""CASE WHEN {nan_only} THEN 'nan'
                WHEN {template} LIKE '%known upstream defect%' THEN
                    -- the registry keys alone: the entry's description holds an apostrophe
                    -- ("the batch's"), which the template masks up to the next one, so a
                    -- split at ' — ' kept each row's own figures (one defect, 3 findings)
                    'defect:known upstream defect ' || array_to_string(list_sort(list_distinct(
                        regexp_extract_all({template},
                                           'known upstream defect ([A-Za-z0-9_-]+)', 1))),
                        ', ')
                WHEN {side} <> '' THEN 'nonfinite:' || {side}
                WHEN regexp_matches({body}, '^# of # elements outside') THEN 'outside'
                ELSE 'law:' || {law} END"""


def _list_sql(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


_FAILED_PATH = ("^(?:variant \\S+: )?(?:(?:" + "|".join(MODEL_VARIANTS) + "):)?(\\S+) failed: ")
"""The path a failure names, without the variant file it ran (``fp16:tract-optimized``)."""


_VARIANT_CHECK = "^model:(" + "|".join(MODEL_VARIANTS) + ")(:|$)"
"""A model row about a variant file (``model:fp16:scaled``), not the model itself."""


def members_sql(relation: str = "obs") -> str:
    """SQL that selects one row per non-passed observation of ``relation`` with its finding.

    Per row: the path it blames (its own, or the side its float64 arbiter does not side
    with). Per case and check family: when every runtime that ran the case is blamed, the
    case is one group (``every path``); otherwise each blamed runtime's rows are a group,
    its outlier the runtime (or ``runtime@settings`` when only some of its settings are
    off). A group's template is its decisive row's (rows against float64 first)."""
    numeric = _list_sql(NUMERIC_CHECKS)
    truth = _list_sql(TRUTH_CHECKS)
    return f"""
WITH raw AS MATERIALIZED (
    SELECT observation_id, case_id, op_type, dtype, "check" AS chk, optimization, result,
           -- a model case fed gero's seeded defaults (models.inputs marks them)
           coalesce(suite = 'model' AND contains(details, '(default)'), false) AS seeded,
           suite IN ('model', 'models') AS model_case,
           backend, CASE WHEN optimization = '-' THEN backend
                         ELSE backend || '@' || optimization END AS path,
           reference, arbiter, max_abs_error, reason,
           json_extract_string(session_settings, '$.inference_precision') AS precision,
           CASE WHEN result = '{EXECUTION}' THEN 'execution'
                WHEN "check" IN ({numeric}) THEN 'numeric' ELSE "check" END AS family,
           "check" IN ({truth}) AS truth,
           {severity_sql()} AS severity,
           -- why the row cannot be assessed by construction ('' when it can)
           {unassessable_sql()} AS why
    FROM {relation} WHERE result <> 'passed'
), reasons AS (
    -- the regular expressions run once per distinct reason, not once per row
    SELECT reason, {_template_sql('reason')} AS template,
           -- a path on a variant file fails as VARIANT:PATH (fp16:tract-optimized)
           regexp_extract(reason, '{_FAILED_PATH}', 1) AS failed_path
    FROM (SELECT DISTINCT reason FROM raw)
), templates AS (
    SELECT *, {_kind_sql('template')} AS kind FROM reasons
), rows AS (
    SELECT r.* EXCLUDE (reason), t.template, t.failed_path, t.kind,
           -- the side a row blames: its own path, or (a disagreement that float64 sides
           -- with the actual side, a failure of the reference side) its reference
           CASE WHEN r.family = 'execution' AND t.template LIKE '{BUILD_FAILED}%'
                    THEN '{VARIANT_TOOLING}'
                WHEN r.family = 'execution'
                     AND t.failed_path NOT IN ('', replace(r.path, '@', '-'),
                                               r.backend || '-' || r.optimization,
                                               {path_name_sql('r.backend', 'r.optimization')})
                    THEN regexp_replace(replace(r.reference, ':', '@'), '-corrected$', '')
                WHEN r.chk IN ({_list_sql(ARBITRATED_CHECKS)}) AND r.arbiter = 'actual'
                    THEN regexp_replace(replace(r.reference, ':', '@'), '-corrected$', '')
                WHEN r.chk IN ({_list_sql(ARBITRATED_CHECKS)}) AND r.arbiter IN ('tie', '-')
                     AND r.family <> 'execution' AND t.kind <> 'nan' THEN 'undecided'
                ELSE r.path END AS blamed
    FROM raw r JOIN templates t ON r.reason IS NOT DISTINCT FROM t.reason
), present AS MATERIALIZED (
    -- every path each case ran per check family (passed rows included), the agreement
    -- rows' references too
    SELECT DISTINCT case_id, fam, path FROM (
        SELECT case_id, CASE WHEN "check" IN ({numeric}) THEN 'numeric' ELSE "check" END AS fam,
               CASE WHEN optimization = '-' THEN backend
                    ELSE backend || '@' || optimization END AS path
        FROM {relation} WHERE case_id IN (SELECT case_id FROM raw)
        UNION ALL
        SELECT case_id, 'numeric', regexp_replace(reference, '-corrected$', '') FROM {relation}
        WHERE "check" = 'agreement' AND case_id IN (SELECT case_id FROM raw))
), runtimes AS (
    SELECT case_id, fam, split_part(path, '@', 1) AS runtime, list(path) AS settings
    FROM present GROUP BY ALL
), decided AS (
    -- an undecided agreement row (no float64 to side with) blames the reference when the
    -- case's rows against float64 blame it, else its own path
    -- case's rows against float64 blame it, else its own path; in a model case with no
    -- float64 at all, neither side alone: the pair disagrees
    SELECT r.* EXCLUDE (blamed),
           CASE WHEN r.blamed <> 'undecided' THEN r.blamed
                WHEN c.reference_off THEN regexp_replace(r.reference, '-corrected$', '')
                WHEN r.model_case AND t.case_id IS NULL THEN list_aggregate(list_sort(
                    [r.backend, split_part(regexp_replace(r.reference, '-corrected$', ''),
                                           ':', 1)]), 'string_agg', '{PAIR}')
                ELSE r.path END AS blamed
    FROM rows r LEFT JOIN (
        SELECT case_id, bool_or(truth AND path = 'onnx-reference') AS reference_off
        FROM rows GROUP BY case_id) c USING (case_id)
    LEFT JOIN (SELECT DISTINCT case_id FROM {relation} WHERE "check" IN ({truth})) t
        USING (case_id)
), runtime_rows AS (
    SELECT *, split_part(blamed, '@', 1) AS runtime,
           CASE WHEN kind = 'nan' THEN 'nan' ELSE family END AS fam0
    FROM decided
), kind_sets AS (
    -- per case and family: how many different sets of kinds its runtimes are off in
    SELECT case_id, fam0, count(DISTINCT kinds) AS sets FROM (
        SELECT case_id, fam0, runtime, list_sort(list_distinct(list(kind))) AS kinds
        FROM runtime_rows WHERE fam0 NOT IN ('nan', 'execution') GROUP BY ALL)
    GROUP BY ALL
), everyone AS (
    -- cases (per family) where every path that ran them is blamed (every setting of
    -- every runtime: ORT's disable_all passing on an fp16 file where its other levels
    -- fail is no 'every path') and off the same way (each runtime off in the same kinds
    -- of failure, silero-vad's int8 file: a scaled error on one output, a cosine on the
    -- other, on both runtimes): two causes stay two findings
    SELECT b.case_id, b.fam0, count(DISTINCT b.runtime) >= 2
               AND count(DISTINCT b.runtime) >= any_value(n.runtimes)
               AND count(DISTINCT b.blamed) >= any_value(n.paths)
               AND any_value(k.sets) = 1 AS every_path
    FROM runtime_rows b JOIN (SELECT case_id, fam, count(*) AS runtimes,
                                     sum(len(settings)) AS paths FROM runtimes
                              GROUP BY ALL) n
        ON n.case_id = b.case_id AND n.fam = b.fam0
    JOIN kind_sets k ON k.case_id = b.case_id AND k.fam0 = b.fam0
    WHERE b.fam0 NOT IN ('nan', 'execution') GROUP BY b.case_id, b.fam0
), off AS (
    -- (case, runtime) pairs off in the case's own outputs (against float64 or the others)
    SELECT DISTINCT case_id, runtime FROM runtime_rows WHERE fam0 = 'numeric'
), off_on_file AS (
    -- (case, runtime, variant file) where the runtime disagrees with a yardstick on the
    -- file (the run's baseline there, a correct computation of it): its family, one per file
    SELECT case_id, runtime, regexp_extract(chk, '^model:([^:]+):', 1) AS file,
           min(fam0) AS fam0
    FROM runtime_rows WHERE regexp_matches(chk, '^model:[^:]+:(cosine|decision|scaled)$')
    GROUP BY ALL
), blamed AS (
    -- a law or variant that a runtime already off in that case breaks (and not every
    -- runtime does) is the same cause as its outputs; not a row on a variant file: a
    -- disagreement there is a cause of its own. A runtime's own verdict on a variant file
    -- (vs-model) where it also disagrees on that file is that disagreement's consequence:
    -- one cause (OpenVINO's int8-static fault), one finding
    SELECT r.*, CASE WHEN r.fam0 NOT IN ('nan', 'execution', 'numeric')
                          AND NOT coalesce(e.every_path, false) AND o.runtime IS NOT NULL
                          AND NOT regexp_matches(r.chk, '{_VARIANT_CHECK}')
                     THEN 'numeric'
                     WHEN r.chk LIKE 'model:%:vs-model' AND f.fam0 IS NOT NULL
                          AND NOT coalesce(e.every_path, false)
                     THEN f.fam0 ELSE r.fam0 END AS fam
    FROM runtime_rows r
    LEFT JOIN everyone e ON e.case_id = r.case_id AND e.fam0 = r.fam0
    LEFT JOIN off o ON o.case_id = r.case_id AND o.runtime = r.runtime
    LEFT JOIN off_on_file f ON f.case_id = r.case_id AND f.runtime = r.runtime
        AND r.chk = 'model:' || f.file || ':vs-model'
), grouped AS (
    SELECT b.*, CASE WHEN b.fam = 'nan' THEN 'every path'
                     WHEN coalesce(e.every_path, false) THEN 'every path'
                     ELSE b.runtime END AS grp,
           CASE WHEN b.fam = 'execution' THEN b.template ELSE '' END AS sub
    FROM blamed b LEFT JOIN everyone e ON e.case_id = b.case_id AND e.fam0 = b.fam
), kinds AS (
    -- per group and kind: enough to pick the group's decisive kind (rows against float64
    -- first, then the most severe, then the most frequent)
    SELECT case_id, fam, grp, sub, kind, bool_or(truth) AS truth, max(severity) AS severity,
           count(*) AS n, list_distinct(list(blamed)) AS bad_settings,
           bool_and(blamed = path) AS own_path, first(op_type) AS op_type,
           first(dtype) AS dtype, first(precision) FILTER (blamed = path) AS precision
    FROM grouped GROUP BY case_id, fam, grp, sub, kind
), groups AS (
    SELECT case_id, fam, grp, sub,
           first(kind ORDER BY truth DESC, severity DESC, n DESC, kind) AS kind,
           list_distinct(flatten(list(bad_settings))) AS bad_settings,
           bool_and(own_path) AS own_path, first(op_type) AS op_type, first(dtype) AS dtype,
           first(precision) FILTER (precision IS NOT NULL) AS precision
    FROM kinds GROUP BY case_id, fam, grp, sub
), labelled AS (
    SELECT g.*,
           CASE WHEN g.grp = 'every path' THEN 'every path'
                WHEN g.fam = 'execution' THEN g.grp
                WHEN len(g.bad_settings) >= len(coalesce(rt.settings, [])) THEN g.grp
                ELSE g.grp || '@' || array_to_string(list_transform(list_sort(
                    list_transform(g.bad_settings, lambda p: {_LEVEL_ORDER.format(
                        x="split_part(p, '@', 2)")} || split_part(p, '@', 2))),
                    lambda s: substr(s, 2)), ',') END AS outlier
    FROM groups g LEFT JOIN runtimes rt ON rt.case_id = g.case_id AND rt.runtime = g.grp
        AND rt.fam = CASE WHEN g.fam IN ('numeric', 'execution') THEN 'numeric' ELSE g.fam END
), keyed AS (
    SELECT case_id, fam AS group_fam, grp, sub, outlier,
           CASE WHEN fam = 'nan' THEN 'nan'
                WHEN fam NOT IN ('execution') AND outlier <> 'every path' AND own_path
                     AND precision IS NOT NULL AND kind NOT LIKE 'nonfinite:%'
                     AND kind NOT LIKE 'defect:%'
                     AND {_WIDTH.format(x='precision')} < {_WIDTH.format(x='dtype')}
                    THEN 'precision'
                WHEN kind LIKE 'nonfinite:%' AND outlier <> 'every path' THEN 'non-finite'
                -- a registered defect is one cause on the model and every variant file,
                -- in every check, whether it made a wrong output or a failure (magika's
                -- GlobalMaxPool)
                WHEN kind LIKE 'defect:%' THEN 'numeric'
                ELSE fam END AS family,
           kind, sub AS template, dtype, op_type, precision
    FROM labelled
), signed AS (
    SELECT case_id, group_fam, grp, sub, outlier, family,
           CASE WHEN family = 'nan' THEN '{NAN_TEMPLATE}'
                WHEN family = 'execution' THEN template
                WHEN family = 'precision' THEN replace(replace('{LOWER_PRECISION}',
                    '{{dtype}}', dtype), '{{precision}}', precision)
                WHEN family = 'non-finite' THEN CASE
                    WHEN kind = 'nonfinite:actual' THEN '{NONFINITE}' ELSE '{SWALLOWED}' END
                WHEN kind = 'outside' THEN '{OUTSIDE}'
                WHEN kind LIKE 'defect:%' THEN substr(kind, 8)
                WHEN kind LIKE 'nonfinite:%' THEN '{NONFINITE}'
                ELSE substr(kind, 5) END AS template,
           CASE WHEN family IN ('nan', 'execution') OR kind LIKE 'defect:%' THEN '*'
                WHEN family = 'precision' THEN '*' || dtype
                WHEN family = 'non-finite' AND kind = 'nonfinite:actual' THEN '*' || dtype
                WHEN family = 'non-finite' THEN '*'
                ELSE op_type END AS operator_key
    FROM keyed
), hashed AS (
    -- hashed per case group, not per row
    SELECT *, left(sha256(family || '|' || outlier || '|' || template || '|' || operator_key),
                   12) AS finding_id
    FROM signed
)
SELECT b.observation_id, s.finding_id, s.family, s.outlier, s.template, s.operator_key,
       b.case_id, b.op_type, b.dtype, b.optimization, b.result, b.severity, b.max_abs_error,
       b.seeded, b.why
FROM grouped b JOIN hashed s ON s.case_id = b.case_id AND s.group_fam = b.fam
    AND s.grp = b.grp AND s.sub = b.sub
"""


def build_members(source: Queryable, relation: str = "obs", table: str = MEMBERS_TABLE,
                  cached: Path | None = None) -> None:
    """Write the members table into the source's database (kept for filters and grouping),
    and, for the default table, each member's finding rank (worst first, as listed).
    ``cached``: a members file of this run written earlier, read instead of grouping."""
    if cached is not None:
        source.query(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM read_parquet(?)",
                     [str(cached)])
    else:
        source.query(f"CREATE OR REPLACE TABLE {table} AS {members_sql(relation)}")
    if table == MEMBERS_TABLE:
        source.query(f"""CREATE OR REPLACE TABLE {ORDER_TABLE} AS
            SELECT m.observation_id, r.finding_rank FROM {table} m JOIN (
                -- finding_order's keys: the assessable first, then severity, size, id
                SELECT finding_id, row_number() OVER (
                    ORDER BY bool_and(why <> ''), max(severity) DESC, count(*) DESC,
                             finding_id) AS finding_rank
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
       max(severity), bool_and(seeded),
       CASE WHEN bool_and(why <> '') THEN min(why) ELSE '' END
FROM {table} GROUP BY finding_id
"""


class _FindingRow(NamedTuple):
    """A row of ``_FINDINGS_SQL``, read by name (its fields in the SELECT's order)."""

    finding_id: str
    family: str
    outlier: str
    template: str
    operator_key: str
    observations: int
    cases: int
    operators: list[str]
    dtypes: list[str]
    levels: list[str] | None
    contract_issues: int
    divergences: int
    executions: int
    max_abs_error: float | None
    representative_id: str
    severity: int
    seeded: bool
    cannot_assess: str

_REPRESENTATIVE_COLUMNS = ("observation_id", "case_id", "check", "dtype", "input_shapes",
                           "backend", "optimization", "reference", "result", "reason",
                           "max_abs_error", "max_ulp", "rtol", "atol", "artifact_path",
                           "median_abs_error", "p99_abs_error")


def _representatives(source: Queryable, ids: list[str]) -> dict[str, Representative]:
    if not ids:
        return {}
    columns = ", ".join(f'"{c}"' for c in _REPRESENTATIVE_COLUMNS)
    rows = source.query(f"SELECT {columns} FROM obs WHERE observation_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ids])
    return {str(r[0]): Representative(*r) for r in rows}


def _levels(values: list[str]) -> tuple[str, ...]:
    known = [v for v in ort_levels() if v in values]
    return tuple(known + sorted(v for v in values if v not in known))


def read_findings(source: Queryable, table: str = MEMBERS_TABLE) -> list[Finding]:
    """The findings of a members table already built, in ``finding_order``: what can be
    assessed first, worst first, then what cannot be assessed by construction."""
    rows = [_FindingRow(*r) for r in source.query(_FINDINGS_SQL.format(table=table))]
    reps = _representatives(source, [str(r.representative_id) for r in rows])
    severity_class = {v: k for k, v in SEVERITY.items()}
    findings = []
    for r in rows:
        counts = {CONTRACT_ISSUE: r.contract_issues, DIVERGENCE: r.divergences,
                  EXECUTION: r.executions}
        result = severity_class.get(int(r.severity), EXECUTION)
        finding = Finding(
            finding_id=str(r.finding_id), title="", result=result, family=str(r.family),
            outlier=str(r.outlier), template=str(r.template), operator_key=str(r.operator_key),
            observations=int(r.observations), cases=int(r.cases), operators=tuple(r.operators),
            dtypes=tuple(r.dtypes), levels=_levels(list(r.levels or [])),
            class_counts={k: int(v) for k, v in counts.items()},
            max_abs_error=None if r.max_abs_error is None else float(r.max_abs_error),
            representative=reps[str(r.representative_id)], seeded_inputs=bool(r.seeded),
            cannot_assess=str(r.cannot_assess or ""))
        findings.append(_with_title(finding))
    findings.sort(key=finding_order)
    return findings


def finding_order(f: Finding) -> tuple[bool, int, int, str]:
    """The findings' one order: what can be assessed first (a runtime's wrong numbers
    before what no runtime could be judged on), then ``SEVERITY``, the most observations,
    the id. ``build_members`` ranks the table's rows the same way."""
    return (not f.assessable, -SEVERITY.get(f.result, 0), -f.observations, f.finding_id)


_BUILDING = threading.Lock()
"""Two screens (or a screen and the table's sort) may ask at once: one writes the tables."""

CACHE_DIR = FINDINGS_CACHE_DIR
"""Under the data root: each run's findings, computed once (a run's files do not change once
it is complete; a run still writing has new file sizes, so a new key). ``gero gc`` removes
the folders of runs that are gone."""
ALGORITHM = hashlib.sha256(members_sql().encode()
                           + Path(__file__).read_bytes()).hexdigest()[:12]
"""The grouping and titling rules' version (the SQL and this module's text, whose Python
words the titles): a cache written by other rules is not read."""


def cache_files(source: Queryable) -> tuple[Path, Path] | None:
    """(members Parquet, findings JSON) of this run under these rules, or None when the
    source is not a stored run (a test's relation, a file gone)."""
    root, run_id = getattr(source, "data_root", None), getattr(source, "run_id", None)
    files = [*getattr(source, "files", ()), getattr(source, "sightings", None)]
    if root is None or not run_id or not files[0]:
        return None
    digest = hashlib.sha256(ALGORITHM.encode())
    try:
        for f in files:
            if f is not None:
                st = Path(f).stat()
                digest.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
    except OSError:
        return None
    base = Path(root).joinpath(*CACHE_DIR, str(run_id), digest.hexdigest()[:16])
    return base.with_suffix(".parquet"), base.with_suffix(".json")


def _from_json(data: dict[str, Any]) -> Finding:
    rep = Representative(**data.pop("representative"))
    for key in ("operators", "dtypes", "levels"):
        data[key] = tuple(data[key])
    return Finding(**data, representative=rep)


def _read_listing(files: tuple[Path, Path]) -> list[Finding] | None:
    members, listing = files
    if not members.is_file():
        return None
    try:
        return [_from_json(f) for f in json.loads(listing.read_text())]
    except (OSError, ValueError, TypeError, KeyError):
        return None  # absent, or unreadable: compute again


def _read_members(source: Queryable, files: tuple[Path, Path]) -> bool:
    try:
        build_members(source, cached=files[0])
    except (OSError, duckdb.Error):
        return False
    return True


def _write_cache(source: Queryable, files: tuple[Path, Path], findings: list[Finding]) -> None:
    """Best effort: a read-only data root, a full disk or a race leave no cache, no error."""
    members, listing = files
    try:
        members.parent.mkdir(parents=True, exist_ok=True)
        for old in members.parent.iterdir():  # earlier keys of this run: stale
            if old.stem != members.stem:
                old.unlink(missing_ok=True)
        staged = members.with_name(f".{members.name}.{threading.get_ident()}.tmp")
        source.query(f"COPY {MEMBERS_TABLE} TO '{str(staged).replace(chr(39), chr(39) * 2)}' "
                     "(FORMAT parquet)")
        staged.replace(members)
        text = json.dumps([f.as_dict() for f in findings], default=str)
        staged_json = listing.with_name(f".{listing.name}.{threading.get_ident()}.tmp")
        staged_json.write_text(text)
        staged_json.replace(listing)
    except (OSError, duckdb.Error):
        return


def compute_findings(source: Queryable) -> list[Finding]:
    """Group the run's non-passed observations into findings (worst first), once per run:
    the result is kept under the data root and read back by the next caller. A list read
    back leaves the members table to ``ensure_members`` (a filter or sort that needs it)."""
    with _BUILDING:
        files = cache_files(source)
        if files is not None:
            cached = _read_listing(files)
            if cached is not None:
                return cached
        build_members(source)
        findings = read_findings(source)
        if files is not None:
            _write_cache(source, files, findings)
        return findings


def ensure_members(source: Queryable) -> None:
    """The members and order tables in the source's database: read back when kept,
    computed (and kept) otherwise."""
    if has_members(source):
        return
    with _BUILDING:
        files = cache_files(source)
        if files is not None and files[0].is_file() and _read_members(source, files):
            return
    compute_findings_fresh(source)


def compute_findings_fresh(source: Queryable) -> list[Finding]:
    """Group again, whatever was kept (and keep the result)."""
    with _BUILDING:
        build_members(source)
        findings = read_findings(source)
        files = cache_files(source)
        if files is not None:
            _write_cache(source, files, findings)
        return findings


def non_passed_count(source: Queryable) -> int:
    rows = source.query("SELECT count(*) FROM obs WHERE result <> 'passed'")
    return int(rows[0][0]) if rows else 0


# Titles ---------------------------------------------------------------------------------

_OTHER_NAMES = {"numpy-float64": "the float64 formula",
                VARIANT_TOOLING: "gero's variant tooling"}
"""Outliers that are no backend (a case's expected values); a backend is named by its title."""


def _name(outlier: str) -> str:
    return _OTHER_NAMES.get(outlier) or title(outlier)


def path_name(outlier: str) -> str:
    """An outlier label in words: ``onnxruntime@extended,all`` -> ONNX Runtime at extended, all."""
    parts = []
    for part in outlier.split("+"):
        runtime, _, settings = part.partition("@")
        name = _name(runtime)
        parts.append(f"{name} at {settings.replace(',', ', ')}" if settings else name)
    return " and ".join(parts)


def _list(values: tuple[str, ...], limit: int = 4) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _short(template: str, limit: int = 70) -> str:
    text = " ".join(template.replace("PATH failed: ", "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _hint(template: str, limit: int = 60, example: str = "") -> str:
    """A law's template as words: its name prefix and counts taken out. A time budget is a
    setting, not a count: it keeps its figure from ``example`` (a member's reason), so the
    title says "ran out of its 60 s budget", not "its n s budget"."""
    text = template.split(": ", 1)[1] if ": " in template else template
    text = " ".join(text.replace("# of # ", "").replace("#", "n").split())
    budget = _BUDGET.search(example)
    if budget and "n s budget" in text:
        text = text.replace("n s budget", f"{budget.group(1)} s budget", 1)
    return _short(text, limit)


_BUDGET = re.compile(r"(\d+(?:\.\d+)?) s budget")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _variant_of(check: str) -> str:
    """The variant file a model row is about (``model:fp16:scaled`` -> fp16), or ''."""
    parts = check.split(":")
    return parts[1] if len(parts) > 1 and parts[0] == "model" and parts[1] in MODEL_VARIANTS \
        else ""


def _title(f: Finding) -> str:
    ops = _list(f.operators)
    dtypes = "/".join(f.dtypes)
    who = path_name(f.outlier)
    sentence_who = who[0].upper() + who[1:]
    many = " and " in who or who == "every path"
    runtime, _, settings = f.outlier.partition("@")
    owner = _name(runtime)
    owner = owner[0].upper() + owner[1:] + ("'" if owner.endswith("s") else "'s")
    at = bool(settings)
    if f.family == "nan":
        return f"NaN inputs propagate: NaN == NaN cannot be assessed ({ops}, {dtypes})"
    if "known upstream defect" in f.template:
        return f"Known upstream ReferenceEvaluator defect ({ops}, {dtypes}): {_short(f.template)}"
    if f.family == "execution":
        variant = _variant_of(f.representative.check)
        if f.outlier == VARIANT_TOOLING:
            cause = _hint(f.template.split(" failed: ", 1)[-1], example=f.representative.reason)
            return (f"gero's variant tooling could not build the {variant or 'variant'} file "
                    f"of {ops}: {cause}")
        on = f" on the {variant} file" if variant else ""
        if WIDENS_FP16 in f.template:  # a fact about the runtime, named like a precision
            detail = f.template.split(WIDENS_FP16, 1)[1].strip()
            return f"{sentence_who} computes the fp16 file of {ops} in float32 {_short(detail)}"
        if "Could not find an implementation" in f.template:
            return (f"{sentence_who} has no {dtypes} kernel for {len(f.operators)} "
                    f"operator(s): {ops}")
        return (f"{sentence_who} cannot run {ops} ({dtypes}){on}: "
                f"{_hint(f.template, example=f.representative.reason)}")
    if f.family == "precision":
        return (f"{sentence_who} {f.template} (its inference precision): {len(f.operators)} "
                f"operator(s) off, {ops}")
    if f.family == "non-finite":
        if f.template == NONFINITE:
            return (f"{sentence_who} {'give' if many else 'gives'} NaN or inf where the compared "
                    f"output is finite ({dtypes}): {ops}")
        return (f"{sentence_who} {'give' if many else 'gives'} finite values where the compared "
                f"output is NaN or inf: {ops} ({dtypes})")
    if f.family == "numeric":
        if PAIR in f.outlier:
            a, _, b = f.outlier.partition(PAIR)
            if a == b:  # two settings of one runtime ("OpenVINO and OpenVINO" said nothing)
                r = f.representative
                other = r.reference.partition(":")[2] or r.reference
                return (f"{_cap(_name(a))} at {r.optimization} and at {other} disagree on "
                        f"{ops} ({dtypes}) with no float64 arbiter to side with: neither is "
                        "blamed")
            return (f"{_cap(_name(a))} and {_name(b)} disagree on {ops} ({dtypes}) with no "
                    f"float64 arbiter to side with: neither is blamed")
        if f.outlier == "every path":
            return f"{ops} ({dtypes}) differs from float64 beyond tolerance on every path"
        what = ("beyond tolerance" if f.template == OUTSIDE
                else f"({_short(f.template, 50)})")
        if at:
            return f"{sentence_who}: {ops} ({dtypes}) is off from float64 {what}"
        return f"{owner} {ops} ({dtypes}) is off from float64 {what}"
    variant = _variant_of(f.family)
    if variant:
        return _variant_title(f, variant, ops, sentence_who, many)
    kind, _, name = f.family.partition(":")
    if kind == "contract":
        return f"{ops} ({dtypes}) breaks the {name} law on {who}: {_hint(f.template)}"
    if kind == "variant":
        return f"{ops} ({dtypes}): the {name} variant disagrees on {who}: {_hint(f.template)}"
    return f"{ops} ({dtypes}) {f.family} on {who}: {_hint(f.template)}"


def _variant_title(f: Finding, variant: str, ops: str, who: str, many: bool) -> str:
    """A verdict on a variant file names the path and what it was measured against: the
    fp32 model (vs-model, vs-fp32), the run's baseline on the same file (cosine,
    decision), a correct computation of the fp16 file (scaled)."""
    gate = f.family.rsplit(":", 1)[-1]
    template = f.template
    if template.startswith("calibrated on "):  # where the ranges came from, not the cause
        # the kind is the verdict's first clause: the figures are the representative's
        rest = f.representative.reason.partition("; ")[2]
        template = re.sub(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "n", rest) or template
    hint = _hint(template, example=f.representative.reason)
    if gate in ("vs-model", "vs-fp32"):
        if f.outlier == "every path":
            return (f"The {variant} file of {ops} is off the fp32 model on every path: "
                    f"{hint}")
        if gate == "vs-model":  # the file is judged (a runtime's baseline on it): its subject
            return f"The {variant} file of {ops} is off the fp32 model on {who}: {hint}"
        return (f"{who} on the {variant} file of {ops} "
                f"{'are' if many else 'is'} off the fp32 model: {hint}")
    if gate == "scaled":
        return (f"{who} on the {variant} file of {ops} {'are' if many else 'is'} off a "
                f"correct fp16 computation of it: {hint}")
    reference = f.representative.reference
    # the representative may be the runtime's own vs-model row (reference fp32:…), which
    # its disagreement's finding holds too
    baseline = (path_name(reference.split(":", 1)[-1].replace(":", "@"))
                if reference.startswith(f"{variant}:") else "the run's baseline")
    return (f"{who} on the {variant} file of {ops} {'disagree' if many else 'disagrees'} "
            f"with {baseline} there ({gate}): {hint}")


SEEDED = " [on gero's seeded default inputs, not your data: give --inputs FILE.npz]"


def _with_title(f: Finding) -> Finding:
    title = _title(f) + (SEEDED if f.seeded_inputs else "")
    return Finding(**{**asdict(f), "representative": f.representative, "title": title})


def findings_json(report: FindingsReport) -> str:
    return json.dumps(report.as_dict(), indent=2, default=str)
