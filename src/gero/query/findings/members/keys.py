"""The signature stages: each group's family, template and operator key, hashed into the
finding id, and the members table's rows.

Each function returns one stage's SELECT and reads the stages above it by name.
"""

from __future__ import annotations

from gero.query.findings.model import (
    LOWER_PRECISION,
    NAN_TEMPLATE,
    NONFINITE,
    OUTSIDE,
    SWALLOWED,
)
from gero_runner.schema import MODEL_VARIANTS

_FILE_CHECK = "^model:(" + "|".join(MODEL_VARIANTS) + ")(:|$)"
"""The variant file a model row's check names (``model:fp16:scaled``), '' for the model's."""

WIDTH = ("CASE {x} WHEN 'float16' THEN 16 WHEN 'f16' THEN 16 WHEN 'bf16' THEN 16 "
         "WHEN 'bfloat16' THEN 16 WHEN 'float32' THEN 32 WHEN 'f32' THEN 32 "
         "WHEN 'float64' THEN 64 WHEN 'f64' THEN 64 END")
"""An element type's bits (a runtime's precision setting spells them its own way)."""


def keyed_sql() -> str:
    """``keyed`` (reads ``labelled``): each group's family. ``precision``: a runtime whose
    settings compute the dtype in fewer bits (OpenVINO's ``inference_precision``), its own
    finite deviations; ``non-finite``: a runtime's NaN or inf where the other side is
    finite (or the reverse); a registered defect is one cause on the model and every
    variant file, in every check, whether it made a wrong output or a failure (magika's
    GlobalMaxPool): ``numeric``."""
    return f"""
    SELECT case_id, fam AS group_fam, grp, sub, outlier,
           CASE WHEN fam = 'nan' THEN 'nan'
                WHEN fam NOT IN ('execution') AND outlier <> 'every path' AND own_path
                     AND precision IS NOT NULL AND kind NOT LIKE 'nonfinite:%'
                     AND kind <> 'defect'
                     AND {WIDTH.format(x='precision')} < {WIDTH.format(x='dtype')}
                    THEN 'precision'
                WHEN kind LIKE 'nonfinite:%' AND outlier <> 'every path' THEN 'non-finite'
                WHEN kind = 'defect' THEN 'numeric'
                ELSE fam END AS family,
           kind, cause_key, model_case, sub AS template, dtype, op_type, precision
    FROM labelled"""


def signed_sql() -> str:
    """``signed`` (reads ``keyed``): each group's template (the kind in words; a failure's
    own template) and operator key (``*`` for a cause shared across operators: NaN fed to
    every path, a failure of a graph case or a time budget, a registered defect, a lower
    precision or a runtime's non-finite outputs of one dtype, ``*DTYPE``; a model's failure
    is its model's: one id never spans two models' causes)."""
    precision = ("replace(replace('" + LOWER_PRECISION + "', '{dtype}', dtype), "
                 "'{precision}', precision)")
    return f"""
    SELECT case_id, group_fam, grp, sub, {_own_nonfinite_outlier()} AS outlier, family,
           CASE WHEN family = 'nan' THEN '{NAN_TEMPLATE}'
                WHEN family = 'execution' THEN template
                WHEN family = 'precision' THEN {precision}
                WHEN family = 'non-finite' THEN CASE
                    WHEN kind = 'nonfinite:actual' THEN '{NONFINITE}' ELSE '{SWALLOWED}' END
                WHEN kind = 'outside' THEN '{OUTSIDE}'
                WHEN kind = 'defect' THEN 'known upstream defect '
                    || replace(substr(cause_key, 8), ',', ', ')
                WHEN kind LIKE 'nonfinite:%' THEN '{NONFINITE}'
                WHEN kind = 'malformed' THEN cause_key
                ELSE substr(kind, 5) END AS template,
           CASE WHEN family = 'execution' AND model_case AND kind <> 'out-of-budget'
                    THEN op_type
                WHEN family IN ('nan', 'execution') OR kind = 'defect' THEN '*'
                WHEN family = 'precision' THEN '*' || dtype
                -- a model's own: its model and file (one cause per path and scope)
                WHEN family = 'non-finite' AND kind = 'nonfinite:actual' AND model_case
                    THEN op_type || '@' || regexp_extract(group_fam, '{_FILE_CHECK}', 1)
                WHEN family = 'non-finite' AND kind = 'nonfinite:actual' THEN '*' || dtype
                WHEN family = 'non-finite' THEN '*'
                ELSE op_type END AS operator_key
    FROM keyed
    WINDOW path_file AS (PARTITION BY case_id, {_OWN_NONFINITE}, split_part(outlier, '@', 1),
                         regexp_extract(group_fam, '{_FILE_CHECK}', 1))"""


_OWN_NONFINITE = "(family = 'non-finite' AND kind = 'nonfinite:actual' AND model_case)"
"""A group of a path's NaN or inf on a model or one of its files, one per gate it fails."""


def _own_nonfinite_outlier() -> str:
    """The outlier of a path's NaN or inf on a model file, the same on every gate it fails
    (each gate's group names the settings off there: OpenVINO's f32 and bf16 on vs-fp32,
    f32 alone on scaled): the runtime where one gate has all its settings off, else the
    settings off on any gate, in the levels' order. One cause, one finding id."""
    from gero.query.findings.members.groups import LEVEL_ORDER  # it imports this module

    settings = ("list_distinct(flatten(list(string_split(split_part(outlier, '@', 2), ','))"
                " OVER path_file))")
    ordered = (f"list_transform(list_sort(list_transform({settings}, lambda s: "
               f"{LEVEL_ORDER.format(x='s')} || s)), lambda s: substr(s, 2))")
    return f"""CASE WHEN NOT {_OWN_NONFINITE} THEN outlier
                WHEN bool_or(NOT contains(outlier, '@')) OVER path_file
                    THEN split_part(outlier, '@', 1)
                ELSE split_part(outlier, '@', 1) || '@' || array_to_string({ordered}, ',')
                END"""


def hashed_sql() -> str:
    """``hashed`` (reads ``signed``): the finding id, a hash of the signature (per case
    group, not per row): the same cause has the same id in every run."""
    return """
    SELECT *, left(sha256(family || '|' || outlier || '|' || template || '|' || operator_key),
                   12) AS finding_id
    FROM signed"""


def members_select() -> str:
    """The members table's rows (reads ``grouped``, ``hashed``): one per non-passed
    observation, its finding and the figures the listing aggregates."""
    return """
SELECT b.observation_id, s.finding_id, s.family, s.outlier, s.template, s.operator_key,
       b.case_id, b.op_type, b.dtype, b.optimization, b.result, b.severity, b.max_abs_error,
       b.seeded, b.why, b.kind, b.cause_key, b.scope, b.chk
FROM grouped b JOIN hashed s ON s.case_id = b.case_id AND s.group_fam = b.fam
    AND s.grp = b.grp AND s.sub = b.sub"""
