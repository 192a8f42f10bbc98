"""The grouping stages: per case and check family, which rows are one cause.

When every runtime that ran a case is blamed, and off the same way, the case is one group
(``every path``); otherwise each blamed runtime's rows are a group, its outlier the runtime
(or ``runtime@settings`` when only some of its settings are off). A law or variant broken
by a runtime already off in that case joins its numeric group. Each function returns one
stage's SELECT and reads the stages above it by name.
"""

from __future__ import annotations

from gero.query.findings.members.keys import WIDTH
from gero_runner.facts import (
    DEFECT,
    MALFORMED,
    MODEL_QUANTIZATION,
    MODEL_SCOPE,
    OUT_OF_BUDGET,
    PRECISION_REWRITE,
    TOOLING,
    YARDSTICKS,
)
from gero_runner.schema import MODEL_VARIANTS

VARIANT_CHECK = "^model:(" + "|".join(MODEL_VARIANTS) + ")(:|$)"
"""A model row about a variant file (``model:fp16:scaled``), not the model itself."""

LEVEL_ORDER = ("CASE {x} WHEN 'disable_all' THEN '0' WHEN 'basic' THEN '1' "
               "WHEN 'extended' THEN '2' WHEN 'all' THEN '3' ELSE '4' END")
"""A setting's place in an outlier label (ONNX Runtime's levels in their order)."""


def kind_sets_sql() -> str:
    """``kind_sets`` (reads ``runtime_rows``): per case and family, how many different sets
    of kinds its runtimes are off in."""
    return """
    SELECT case_id, fam0, count(DISTINCT kinds) AS sets FROM (
        SELECT case_id, fam0, runtime, list_sort(list_distinct(list(kind))) AS kinds
        FROM runtime_rows WHERE fam0 NOT IN ('nan', 'execution') AND kind <> 'defect'
        GROUP BY ALL)
    GROUP BY ALL"""


def everyone_sql() -> str:
    """``everyone`` (reads ``runtime_rows``, ``runtimes``, ``kind_sets``): cases (per family)
    where every path that ran them is blamed (every setting of every runtime: ORT's
    disable_all passing on an fp16 file where its other levels fail is no 'every path') and
    off the same way (each runtime off in the same kinds of failure, silero-vad's int8
    file: a scaled error on one output, a cosine on the other, on both runtimes): two
    causes stay two findings. A runtime whose rows there are all registered defects' is
    explained apart (its defect's finding) and left out: the paths no known defect explains
    all off is still every path (magika's int8-static file off on ONNX Runtime and OpenVINO,
    tract's rows its per-axis DequantizeLinear defect's: one finding, not one per runtime)."""
    return """
    SELECT b.case_id, b.fam0, count(DISTINCT b.runtime) >= 2
               AND count(DISTINCT b.runtime) >= any_value(n.runtimes)
               AND count(DISTINCT b.blamed) >= any_value(n.paths)
               AND any_value(k.sets) = 1 AS every_path
    FROM runtime_rows b JOIN (
        SELECT rt.case_id, rt.fam, count(*) AS runtimes, sum(len(rt.settings)) AS paths
        FROM runtimes rt ANTI JOIN (
            SELECT case_id, fam0, runtime FROM runtime_rows
            GROUP BY ALL HAVING bool_and(kind = 'defect')) x
            ON x.case_id = rt.case_id AND x.fam0 = rt.fam AND x.runtime = rt.runtime
        GROUP BY ALL) n
        ON n.case_id = b.case_id AND n.fam = b.fam0
    JOIN kind_sets k ON k.case_id = b.case_id AND k.fam0 = b.fam0
    WHERE b.fam0 NOT IN ('nan', 'execution') AND b.kind <> 'defect'
    GROUP BY b.case_id, b.fam0"""


def lower_sql(b: str) -> str:
    """A row of a setting that computes its dtype in fewer bits, blamed on that setting."""
    return (f"{b}.blamed = {b}.path AND {b}.precision IS NOT NULL "
            f"AND {b}.kind NOT LIKE 'nonfinite:%' AND {b}.kind <> 'defect' "
            f"AND {WIDTH.format(x=b + '.precision')} < {WIDTH.format(x=b + '.dtype')}")


def off_sql() -> str:
    """``off`` (reads ``runtime_rows``): (case, runtime) pairs off in the case's own outputs
    (against float64 or the others), and whether by a setting that computes in fewer bits
    (``lower``): a law its f32 setting breaks is that setting's own cause, not the bf16
    setting's, while the bf16 setting's own gate row joins the bf16 setting's group."""
    return f"""
    SELECT DISTINCT case_id, runtime, coalesce({lower_sql('r')}, false) AS lower
    FROM runtime_rows r WHERE fam0 = 'numeric'"""


def off_on_file_sql() -> str:
    """``off_on_file`` (reads ``runtime_rows``): (case, runtime, variant file) where the
    runtime disagrees with a yardstick on the file (the run's baseline there, a correct
    computation of it): its family, one per file."""
    return """
    SELECT case_id, runtime, regexp_extract(chk, '^model:([^:]+):', 1) AS file,
           min(fam0) AS fam0
    FROM runtime_rows WHERE regexp_matches(chk, '^model:[^:]+:(cosine|decision|scaled)$')
    GROUP BY ALL"""


def blamed_sql() -> str:
    """``blamed`` (reads ``runtime_rows``, ``everyone``, ``off``, ``off_on_file``): each
    row's family (``fam``). A law or variant that a runtime already off in that case breaks
    (and not every runtime does) is the same cause as its outputs (``numeric``); not a row
    on a variant file: a disagreement there is a cause of its own. A runtime's own verdict
    on a variant file (vs-model) where it also disagrees on that file is that
    disagreement's consequence: one cause (OpenVINO's int8-static fault), one finding, even
    where the file is off on every path (the file's finding keeps the rows no cause of
    their own explains, and its headline figure is theirs)."""
    return f"""
    SELECT r.*, CASE WHEN {_FILE_REWRITE.format(b='r')}
                     THEN regexp_extract(r.chk, '^(model:[^:]+):', 1) || ':precision'
                     WHEN r.fam0 NOT IN ('nan', 'execution', 'numeric') AND r.kind <> '{MALFORMED}'
                          AND NOT coalesce(e.every_path, false) AND o.runtime IS NOT NULL
                          AND NOT regexp_matches(r.chk, '{VARIANT_CHECK}')
                     THEN 'numeric'
                     WHEN r.chk LIKE 'model:%:vs-model' AND f.fam0 IS NOT NULL
                     THEN f.fam0 ELSE r.fam0 END AS fam
    FROM runtime_rows r
    LEFT JOIN everyone e ON e.case_id = r.case_id AND e.fam0 = r.fam0
    LEFT JOIN off o ON o.case_id = r.case_id AND o.runtime = r.runtime
        AND o.lower = coalesce({lower_sql('r')}, false)
    LEFT JOIN off_on_file f ON f.case_id = r.case_id AND f.runtime = r.runtime
        AND r.chk = 'model:' || f.file || ':vs-model'"""


_FILE_REWRITE = ("{b}.cause_key = '" + PRECISION_REWRITE + "' AND regexp_matches({b}.chk, '"
                 + VARIANT_CHECK + "')")
"""A row on a variant file a runtime's precision rewrite explains (smart_turn's fp16 file one
QuantizeLinear step off on ONNX Runtime and OpenVINO, each gate): one cause per file, every
runtime and gate of it one finding (family ``model:FILE:precision``), its outlier the
runtimes joined by '+'."""

LOWER = "lower precision"
"""A numeric group's key for the rows of a setting that computes the dtype in fewer bits:
the precision family takes those rows only (OpenVINO at f32 off on its own is another cause
than its bf16 setting)."""

OWN_SUB = """CASE WHEN {b}.cause_key LIKE 'unsupported-op:%' AND NOT {b}.model_case
                     THEN 'unsupported-op'
                 WHEN {b}.cause_key LIKE 'error:%' THEN 'PATH failed: ' || substr({b}.cause_key, 7)
                 WHEN {b}.cause_key <> '' THEN {b}.cause_key ELSE {b}.kind END"""
"""A failure's own group key: its cause key (a graph case's operators a runtime lacks are
one group, its kernels listed; a failure no known cause names, its masked error)."""


def grouped_sql() -> str:
    """``grouped`` (reads ``blamed``, ``everyone``): each row's group in its case and family
    (``grp``: ``every path``, the blamed runtime, or the model's own quantisation for a
    batch law it breaks: no runtime's doing) and, for a failure, its cause
    (``sub``: each different cause is a group of its own); a runtime's rows of a setting
    that computes in fewer bits are a group apart from its other settings' (``LOWER``). A
    runtime that lacks an operator of the model itself lacks it in the variant files too
    (whose message may name another missing operator first): those failures are members of
    the model's (one finding about the model, not one per file). A setting that cannot run
    the model at all: its failures on the variant files, whatever their words, are that
    one finding's rows (a runtime that cannot run the model is one finding about the model;
    issue 40); where it runs the model, a failure on a file stays its own."""
    own = OWN_SUB.format(b="b")
    yardsticks = ", ".join(f"'{k}'" for k in YARDSTICKS)
    return f"""
    SELECT b.*, CASE WHEN b.kind = '{MALFORMED}' THEN 'model'  -- the model's own, no path's
                     WHEN b.cause_key = '{MODEL_QUANTIZATION}' THEN '{MODEL_QUANTIZATION}'
                     WHEN {_FILE_REWRITE.format(b='b')} THEN array_to_string(list_sort(
                         list_distinct(list(b.runtime) OVER (PARTITION BY b.case_id, b.fam))),
                         '+')
                     WHEN b.fam = 'nan' THEN 'every path'
                     -- a registered defect's row stays its runtime's (everyone left it out)
                     WHEN coalesce(e.every_path, false) AND b.kind <> 'defect'
                         THEN 'every path'
                     WHEN y.sub IS NOT NULL THEN y.runtime
                     ELSE b.runtime END AS grp,
           -- not on a variant file: a runtime's fault there (OpenVINO's int8-static
           -- rounding) is one cause on all its settings
           CASE WHEN b.kind = '{MALFORMED}' THEN b.cause_key
                WHEN b.fam NOT IN ('execution', 'nan') AND NOT coalesce(e.every_path, false)
                     AND NOT regexp_matches(b.chk, '{VARIANT_CHECK}')
                     AND coalesce({lower_sql('b')}, false)
                    THEN '{LOWER}'
                -- each registered defect a group of its own, in every family (facts: one
                -- row per defect a row hits)
                WHEN b.kind = 'defect' THEN b.cause_key
                WHEN b.fam <> 'execution' THEN ''
                WHEN y.sub IS NOT NULL THEN y.sub
                WHEN b.cause_key LIKE 'unsupported-op:%' AND m.sub IS NOT NULL THEN m.sub
                WHEN f.sub IS NOT NULL AND b.kind NOT IN ('{TOOLING}', '{OUT_OF_BUDGET}')
                     AND regexp_matches(b.chk, '{VARIANT_CHECK}') THEN f.sub
                ELSE {own} END AS sub
    FROM blamed b LEFT JOIN everyone e ON e.case_id = b.case_id AND e.fam0 = b.fam
    -- gero's yardstick (the float64 shadow, the fp16 yardstick) that could not run for the
    -- error the ReferenceEvaluator's own path failed with: one cause, that path's finding
    -- (its recorded words may be cut short: the path's error begins with them)
    LEFT JOIN (SELECT t.observation_id, min(y.runtime) AS runtime, min(y.sub) AS sub
               FROM (SELECT observation_id, case_id,
                            regexp_extract(cause, 'could not run[^:]*: (.*)$', 1) AS words
                     FROM blamed WHERE cause_key IN ({yardsticks})) t
               JOIN (SELECT b.case_id, b.cause, min(b.runtime) AS runtime, min({own}) AS sub
                     FROM blamed b WHERE b.fam = 'execution' AND b.kind <> 'tooling'
                          AND b.runtime LIKE 'onnx-reference%' AND b.cause <> ''
                     GROUP BY ALL) y
                   ON y.case_id = t.case_id AND length(t.words) >= 16
                      AND starts_with(y.cause, t.words)
               GROUP BY t.observation_id) y ON y.observation_id = b.observation_id
    LEFT JOIN (SELECT b.case_id, b.runtime, min({own}) AS sub FROM blamed b
               WHERE b.fam = 'execution' AND b.cause_key LIKE 'unsupported-op:%'
                     AND b.scope = 'model' AND b.model_case
               GROUP BY ALL) m ON m.case_id = b.case_id AND m.runtime = b.runtime
    -- a setting that cannot run the model itself: its failures on the variant files are
    -- that one finding's rows, whatever their words (silero: OpenVINO refuses the If
    -- branch's Conv on the model and its renamed ConvInteger on the int8-dynamic file)
    LEFT JOIN (SELECT b.case_id, b.blamed, min({own}) AS sub FROM blamed b
               WHERE b.fam = 'execution' AND b.scope = '{MODEL_SCOPE}' AND b.model_case
                     AND b.kind NOT IN ('{TOOLING}', '{OUT_OF_BUDGET}', '{DEFECT}')
               GROUP BY ALL) f ON f.case_id = b.case_id AND f.blamed = b.blamed"""


_ONE_PRECISION = """CASE WHEN count(DISTINCT {p}) {filter} = 1
                         AND count(*) FILTER ({cond} AND {p} IS NULL) = 0
                    THEN min({p}) {filter} END"""
"""The one precision setting of a group's own rows ({cond}), NULL when they differ (or some
have none): a group of a variant file holds every setting of its runtime (OpenVINO's bf16
and f32 rows), and the first row's would say 'computes float32 in bf16' of both."""


def kinds_sql() -> str:
    """``kinds`` (reads ``grouped``): per group and kind, enough to pick the group's
    decisive kind (rows against float64 first, then the most severe, then the most
    frequent), and the precision of its own rows where they share one."""
    precision = _ONE_PRECISION.format(p="precision", filter="FILTER (blamed = path)",
                                      cond="blamed = path")
    return f"""
    SELECT case_id, fam, grp, sub, kind, bool_or(truth) AS truth, max(severity) AS severity,
           count(*) AS n, list_distinct(list(blamed)) AS bad_settings,
           min(cause_key) AS cause_key, bool_or(model_case) AS model_case,
           bool_and(blamed = path) AS own_path, first(op_type) AS op_type,
           first(dtype) AS dtype, {precision} AS precision,
           bool_or(blamed = path) AS any_own
    FROM grouped GROUP BY case_id, fam, grp, sub, kind"""


def groups_sql() -> str:
    """``groups`` (reads ``kinds``): one row per group, its decisive kind, the settings
    of it that are off and the one precision of its own rows (NULL when its kinds' differ)."""
    precision = _ONE_PRECISION.format(p="precision", filter="FILTER (any_own)",
                                      cond="any_own")
    return f"""
    SELECT case_id, fam, grp, sub,
           first(kind ORDER BY truth DESC, severity DESC, n DESC, kind) AS kind,
           first(cause_key ORDER BY truth DESC, severity DESC, n DESC, kind) AS cause_key,
           bool_or(model_case) AS model_case,
           list_distinct(flatten(list(bad_settings))) AS bad_settings,
           bool_and(own_path) AS own_path, first(op_type) AS op_type, first(dtype) AS dtype,
           {precision} AS precision
    FROM kinds GROUP BY case_id, fam, grp, sub"""


def labelled_sql() -> str:
    """``labelled`` (reads ``groups``, ``runtimes``): each group's outlier: ``every path``,
    the runtime when all its settings that ran are off (and for a failure), else
    ``runtime@settings`` in the levels' order (``onnxruntime@extended,all``)."""
    setting = LEVEL_ORDER.format(x="split_part(p, '@', 2)")
    return f"""
    SELECT g.*,
           CASE WHEN g.grp = 'every path' THEN 'every path'
                WHEN g.fam = 'execution' THEN g.grp
                -- a runtime's defect a probe found (defect:RUNTIME:KEY) is the runtime's,
                -- whichever of its settings a file's gate ran
                WHEN g.sub LIKE 'defect:%:%' THEN g.grp
                WHEN len(g.bad_settings) >= len(coalesce(rt.settings, [])) THEN g.grp
                ELSE g.grp || '@' || array_to_string(list_transform(list_sort(
                    list_transform(g.bad_settings, lambda p: {setting}
                                   || split_part(p, '@', 2))),
                    lambda s: substr(s, 2)), ',') END AS outlier
    FROM groups g LEFT JOIN runtimes rt ON rt.case_id = g.case_id AND rt.runtime = g.grp
        AND rt.fam = CASE WHEN g.fam IN ('numeric', 'execution') THEN 'numeric' ELSE g.fam END"""
