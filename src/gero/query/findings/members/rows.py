"""The per-row stages: each non-passed observation, the path it blames, and the paths each
case ran (what "every path" is measured against).

Each function returns one stage's SELECT; a stage reads the stages above it by name (and
``relation``, the observations, where it says so), so a test can run one on tables of
hand-made rows named like the stages it reads.
"""

from __future__ import annotations

from gero.query.assessable import unassessable_sql
from gero.query.findings.model import GERO_LIMIT, NUMERIC_CHECKS, PAIR, VARIANT_TOOLING
from gero_runner.backends import path_name_sql
from gero_runner.facts import (
    DEFECT,
    MALFORMED_KEY,
    OUT_OF_BUDGET,
    OUTPUTS_CHECK,
    STRUCTURE_CHECK,
    TENSOR_OUTPUTS,
    TIME_BUDGET,
    TOOLING,
    VARIANT_BUILD,
    VARIANT_FILES,
)
from gero_runner.result_classes import ARBITRATED_CHECKS, TRUTH_CHECKS, severity_sql
from gero_runner.schema import EXECUTION
from gero_runner.storage.derivation import (
    FAILED_PATH_SQL,
    derived_key_sql,
    derived_kind_sql,
    scope_sql,
)


def sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


_FILE_PREFIX = "^(?:fp32|" + "|".join(VARIANT_FILES) + "):"
"""A reference on a model file names the file first (``int8-static:onnxruntime:all``)."""
_REFERENCE_PATH = "regexp_replace(replace(r.reference, ':', '@'), '-corrected$', '')"
"""The path a row's reference names (``onnxruntime:all`` -> ``onnxruntime@all``)."""


def raw_sql(relation: str) -> str:
    """``raw`` (reads ``relation``): the non-passed rows with their path (``backend`` or
    ``backend@setting``), check family (``execution``, ``numeric`` for the checks that
    compare outputs, else the check), severity, whether float64 judged them (``truth``),
    whether they are of a model case fed gero's seeded defaults (``models.inputs`` marks
    them), their recorded facts (``failed_path``, ``failure_kind``, ``cause_key``,
    ``scope``), whether a gero before schema 5 wrote them (``old``: their facts are derived
    once, ``facts``) and why they cannot be assessed by construction (``''`` when they
    can)."""
    return f"""
    SELECT observation_id, case_id, op_type, dtype, "check" AS chk, optimization, result,
           coalesce(suite = 'model' AND contains(details, '(default)'), false) AS seeded,
           suite IN ('model', 'models') AS model_case,
           backend, CASE WHEN optimization = '-' THEN backend
                         ELSE backend || '@' || optimization END AS path,
           reference, arbiter, max_abs_error, reason, coalesce(cause, '') AS cause,
           -- a row of a gero before the facts (schema 3): the path its reason names
           coalesce(failed_path, regexp_extract(reason, '{FAILED_PATH_SQL}', 1)) AS failed_path,
           -- a row without its scope (NULL before schema 5; '' where a row was made
           -- outside a case's row builder) has its facts derived once
           failure_kind, cause_key AS recorded_key, coalesce(scope, '') = '' AS old,
           coalesce(nullif(scope, ''), {scope_sql('suite', '"check"')}) AS scope,
           json_extract_string(session_settings, '$.inference_precision') AS precision,
           -- a malformed model's rows (its paths' failures on it too) are its check's
           CASE WHEN starts_with(coalesce(cause_key, ''), '{MALFORMED_KEY}')
                    THEN '{STRUCTURE_CHECK}'
                WHEN result = '{EXECUTION}' THEN 'execution'
                WHEN "check" IN ({sql_list(NUMERIC_CHECKS)}) THEN 'numeric'
                ELSE "check" END AS family,
           "check" IN ({sql_list(TRUTH_CHECKS)}) AS truth,
           {severity_sql()} AS severity,
           {unassessable_sql()} AS why
    FROM {relation} WHERE result <> 'passed'"""


def facts_sql() -> str:
    """``facts`` (reads ``raw``, ``templates``): each row's kind and cause key, as recorded
    (schema 5), or derived once from the kind a gero before recorded (schema 4) or its
    reason (``gero_runner.storage.derivation``). A row that hits several registered defects
    (``defect:A,B``) is one row per defect (``defect:A``, ``defect:B``): each defect is one
    cause on every file it shows on, whichever other defects a file hits beside it (SLANet's
    OneHot defect on its opset-13 files, where BatchNormalization's applies too, and on its
    opset-19 file, where it does not, issue 40 D9)."""
    old_kind = "coalesce(r.failure_kind, t.kind)"
    kind = derived_kind_sql(old_kind, "r.result", "r.chk", "r.reason")
    key = derived_key_sql("kind", "old_kind", "chk", "reason", "template")
    return f"""
    SELECT * REPLACE (unnest(CASE WHEN kind = '{DEFECT}' AND starts_with(cause_key, 'defect:')
                                  THEN list_transform(list_sort(list_distinct(string_split(
                                      substr(cause_key, 8), ','))), lambda k: 'defect:' || k)
                                  ELSE [cause_key] END) AS cause_key)
    FROM (
    SELECT * EXCLUDE (reason, failure_kind, recorded_key, old_kind, template, kind),
           -- the float64 shadow is gero's own yardstick whichever gero recorded it (one
           -- before its tooling kind said 'cannot-run'): never a path's failure
           CASE WHEN {_SHADOW_FAILED} THEN '{TOOLING}' ELSE kind END AS kind,
           CASE WHEN {_SHADOW_FAILED} AND NOT starts_with(coalesce(recorded_key, ''), 'tooling:')
                    THEN CASE WHEN starts_with(cause, 'the fp16 yardstick')
                              THEN 'tooling:fp16-yardstick' ELSE 'tooling:shadow' END
                -- a time budget spent is gero's limit, whichever gero recorded it
                WHEN kind = '{OUT_OF_BUDGET}' THEN '{TIME_BUDGET}'
                WHEN old THEN {key} ELSE recorded_key END AS cause_key
    FROM (SELECT r.*, t.template, {old_kind} AS old_kind,
                 CASE WHEN r.old THEN {kind} ELSE r.failure_kind END AS kind
          FROM raw r LEFT JOIN templates t ON r.old AND r.reason IS NOT DISTINCT FROM t.reason))"""


SHADOW = "float64-shadow"
"""The backend label of gero's float64 shadow (``cases.user_models.SHADOW_LABEL``)."""
_SHADOW_FAILED = f"result = '{EXECUTION}' AND backend = '{SHADOW}'"
"""A row of gero's float64 shadow (or the fp16 yardstick computed from it) that failed."""


def rows_sql() -> str:
    """``rows`` (reads ``facts``): each row with the side it blames: its own path; gero's
    variant tooling for a variant it could not build, gero for an output it does not
    compare; the reference for a failure that
    names another path (the reference side failed) or a disagreement float64 sides the
    actual side with; ``undecided`` for a disagreement no float64 decides (``decided``
    settles it)."""
    arbitrated = sql_list(ARBITRATED_CHECKS)
    return f"""
    SELECT r.*,
           CASE WHEN r.family = 'execution' AND r.cause_key = '{VARIANT_BUILD}'
                    THEN '{VARIANT_TOOLING}'
                -- an output gero does not compare: gero's limit, not the runtime's
                WHEN r.family = 'execution'
                     AND (r.cause_key = '{TENSOR_OUTPUTS}' OR r.chk = '{OUTPUTS_CHECK}')
                    THEN '{GERO_LIMIT}'
                WHEN r.family = 'execution'
                     AND r.failed_path NOT IN ('', replace(r.path, '@', '-'),
                                               r.backend || '-' || r.optimization,
                                               {path_name_sql('r.backend', 'r.optimization')})
                    THEN {_REFERENCE_PATH}
                -- a registered defect is the evaluator's own (its path), whatever arbitrates
                WHEN r.kind = 'defect' THEN r.path
                WHEN r.chk IN ({arbitrated}) AND r.arbiter = 'actual' THEN {_REFERENCE_PATH}
                WHEN r.chk IN ({arbitrated}) AND r.arbiter IN ('tie', '-')
                     AND r.family <> 'execution' AND r.kind <> 'nan' THEN 'undecided'
                ELSE r.path END AS blamed
    FROM facts r"""


def present_sql(relation: str) -> str:
    """``present`` (reads ``relation``, ``raw``): every path each case with a non-passed row
    ran, per check family (passed rows included), the agreement rows' references too."""
    return f"""
    SELECT DISTINCT case_id, fam, path FROM (
        SELECT case_id, CASE WHEN "check" IN ({sql_list(NUMERIC_CHECKS)}) THEN 'numeric'
                             ELSE "check" END AS fam,
               CASE WHEN optimization = '-' THEN backend
                    ELSE backend || '@' || optimization END AS path
        FROM {relation} WHERE case_id IN (SELECT case_id FROM raw)
        UNION ALL
        SELECT case_id, 'numeric', regexp_replace(reference, '-corrected$', '') FROM {relation}
        WHERE "check" = 'agreement' AND case_id IN (SELECT case_id FROM raw))"""


def runtimes_sql() -> str:
    """``runtimes`` (reads ``present``): per case and family, each runtime and the paths
    (settings) it ran."""
    return """
    SELECT case_id, fam, split_part(path, '@', 1) AS runtime, list(path) AS settings
    FROM present GROUP BY ALL"""


def decided_sql(relation: str) -> str:
    """``decided`` (reads ``rows``, ``relation``): an undecided agreement row (no float64 to
    side with) blames the reference when the case's rows against float64 blame it, else its
    own path; in a model case with no float64 at all, neither side alone: the pair
    disagrees (``onnxruntime vs openvino``)."""
    return f"""
    SELECT r.* EXCLUDE (blamed),
           CASE WHEN r.blamed <> 'undecided' THEN r.blamed
                WHEN c.reference_off THEN regexp_replace(r.reference, '-corrected$', '')
                WHEN r.model_case AND t.case_id IS NULL THEN list_aggregate(list_sort(
                    -- the reference's runtime, without the file it ran (int8-static:…)
                    [r.backend, split_part(regexp_replace(regexp_replace(
                        r.reference, '-corrected$', ''), '{_FILE_PREFIX}', ''), ':', 1)]),
                    'string_agg', '{PAIR}')
                ELSE r.path END AS blamed
    FROM rows r LEFT JOIN (
        SELECT case_id, bool_or(truth AND path = 'onnx-reference') AS reference_off
        FROM rows GROUP BY case_id) c USING (case_id)
    LEFT JOIN (SELECT DISTINCT case_id FROM {relation}
               WHERE "check" IN ({sql_list(TRUTH_CHECKS)})) t
        USING (case_id)"""


def runtime_rows_sql() -> str:
    """``runtime_rows`` (reads ``decided``): the blamed runtime (the path without its
    setting) and the family the row is grouped in first (``nan`` for NaN fed on both sides
    and nothing else, whatever the check)."""
    return """
    SELECT *, split_part(blamed, '@', 1) AS runtime,
           CASE WHEN kind = 'nan' THEN 'nan' ELSE family END AS fam0
    FROM decided"""
