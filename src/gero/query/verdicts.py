"""The verdict card of each model: is it safe on each runtime setting, in each file?

One verdict per model case, runtime setting and file (the fp32 model and each variant the
run built: fp16, int8-dynamic, int8-static), made from the model family's gated rows
(``gero_runner.checks.model``), never from their sentences:

- ``safe``: every gate of that setting on that file passed;
- ``off``: a gate did not pass; the verdict names the one a user acts on (what they ship
  first: the file against the fp32 model, then the fp32 model against float64, then the
  setting against the run's baseline on the file, then a correct fp16 computation), its
  worst output, the figure, the gate and the arbiter it was measured against (a safe
  verdict names the gate it passes with the least margin);
- ``cannot-run``: no gate could be made: the setting failed on the file, the file could not
  be built, or the run's baseline could not run it; the row that says why is named (a cell
  shows its own file's rows only: a setting's failure on a variant file says nothing of the
  fp32 model; only a setting that failed on the model, with no row on a file, did not run
  there);
- ``not-run``: the needed-paths plan did not run the setting on the file (``plan.json``
  says why: another setting of its runtime is within its gates); no cause, in no count;
- ``not-built``: gero's variant tooling could not build the file (a note: no runtime's
  failure, whichever gero recorded it); no cause, in no count.

A setting on an int8 file other than its runtime's baseline is compared with the run's
baseline on the file, not with the fp32 model: it inherits its runtime's judgement of the
file (the baseline's ``vs-model`` rows), so that a file quantisation ruins is off on every
setting, not safe on those that agree with the ruined baseline.

Everything is aggregated by DuckDB over the run's ``obs`` view: one row a verdict comes
back, whatever the size of the run.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any, Final

from gero_runner.backends import RUNTIMES
from gero_runner.backends.names import ORT_LEVELS
from gero_runner.errors import GeroError
from gero_runner.storage.reader import OpenRun

SAFE: Final = "safe"
OFF: Final = "off"
CANNOT_RUN: Final = "cannot-run"
NOT_RUN: Final = "not-run"
"""The plan did not run the setting on the file (``plan.json``): neither safe nor a cause."""
NOT_BUILT: Final = "not-built"
"""gero could not build the variant file (its build row's note says why): nothing ran on it."""
VERDICTS: Final = (SAFE, OFF, CANNOT_RUN, NOT_RUN, NOT_BUILT)
NEUTRAL: Final = (NOT_RUN, NOT_BUILT)
"""Verdicts that are no judgement of the runtime: no cause, no exit status."""

FP32: Final = "fp32"
FILES: Final = (FP32, "fp16", "int8-dynamic", "int8-static")
"""The model file and its variants (``schema.MODEL_VARIANTS``), in the card's order."""
MODEL_SUITES: Final = ("models", "model")
"""Suites whose cases are models (``gero_runner.case.MODEL_SUITES``)."""

DECISION_SHARE: Final = 0.95
"""The share of argmax decisions a decision gate asks for (``metrics.model_level``)."""

# A gated row's kind: the check's last part on a variant file, the check itself on the
# model's own file. Priority: what a user ships is judged first.
_GATES: Final = ("vs-model", "vs-fp32", "model:fp32", "parity", "cosine", "decision", "scaled")
_NOTES: Final = ("model:fp16:precision", "model:outputs")
"""Execution rows that say something about a path without it failing (a runtime widens
the fp16 file to float32; an output that is not a tensor is not compared)."""


@dataclass(frozen=True)
class Verdict:
    """One model case on one runtime setting, in one file."""

    model: str
    """The model (the rows' ``op_type``)."""
    case_id: str
    runtime: str
    setting: str
    """The runtime's setting (the rows' ``optimization``)."""
    file: str
    """``fp32`` (the model as given), ``fp16``, ``int8-dynamic`` or ``int8-static``."""
    verdict: str
    """``safe``, ``off``, ``cannot-run``, ``not-run`` (the plan left it out) or
    ``not-built`` (the file could not be built)."""
    measure: str
    """What ``figure`` is: scaled error, row cosine, mean-pooled cosine, argmax agreement,
    non-finite output, parity; empty for ``cannot-run``."""
    figure: float | None
    """The deciding row's figure (the worst output's); None where it has none."""
    gate: float | None
    """What ``figure`` is held against; None where the gate has no single figure."""
    direction: str
    """``<=`` (the figure may be at most the gate) or ``>=``; empty without a gate."""
    check: str
    """The deciding row's check (``model:fp16:vs-fp32``, ...)."""
    output: str
    """The deciding row's output."""
    arbiter: str
    """What the deciding row was measured against: ``float64-shadow``, the shipped expected
    outputs, ``fp32:onnxruntime:all`` (the fp32 model on a runtime's baseline),
    ``int8-dynamic:onnxruntime:all`` (the run's baseline on the file), ``fp16-rounded-shadow``;
    ``+int8-exact-shadow`` where the file computed exactly arbitrated a disagreement."""
    arbiters: tuple[str, ...]
    """Every arbiter the verdict's rows were measured against."""
    reason: str
    """The deciding row's sentence (why it is off, or why it cannot run)."""
    observation_id: str
    """The deciding row (``gero replay``, the explorer's detail)."""
    observations: int
    """Gated rows behind the verdict."""
    not_passed: int
    inherited: bool
    """Whether the deciding row is not this setting's own on this file: its runtime
    baseline's judgement of the file (a setting compared only with the run's baseline on an
    int8 file), or the row that stopped the whole file (its build, the run's baseline on it)
    or the setting on another file."""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["arbiters"] = list(self.arbiters)
        for key in ("figure", "gate"):  # JSON has no NaN
            if isinstance(d[key], float) and not math.isfinite(d[key]):
                d[key] = None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """A verdict from :meth:`as_dict` (``gero summary --format json``'s entries)."""
        return cls(**{**d, "arbiters": tuple(d["arbiters"])})

    def figure_text(self) -> str:
        """``scaled error 0.0027 > 0.0001``, or the measure alone without figures."""
        if self.figure is None or not math.isfinite(self.figure):
            return self.measure
        shown = f"{self.measure} {_number(self.figure, self.measure)}"
        if self.gate is None or not self.direction:
            return shown
        holds = (self.figure <= self.gate) if self.direction == "<=" else (
            self.figure >= self.gate)
        sign = self.direction.replace("<=", "≤").replace(">=", "≥") if holds else (
            ">" if self.direction == "<=" else "<")
        return f"{shown} {sign} {_number(self.gate, self.measure)}"


def _number(value: float, measure: str) -> str:
    if "cosine" in measure:
        return f"{value:.6f}"
    if measure == "argmax agreement":
        return f"{value:.1%}"
    return f"{value:.3g}"


_VARIANT_LIST = ", ".join(f"'{f}'" for f in FILES[1:])
_RUNTIME_LIST = ", ".join(f"'{r}'" for r in RUNTIMES)
_GATE_LIST = ", ".join(f"'{g}'" for g in _GATES)
_NOTE_LIST = ", ".join(f"'{n}'" for n in _NOTES)


def _num(path: str) -> str:
    return f"TRY_CAST(json_extract(details, '{path}') AS DOUBLE)"


# The figure of each gated row: which of its gates decided (the first that failed, else
# its main one), that gate's figure and threshold. Keys as the gates write them
# (metrics.model_level): fp32_gate, variant_gate, int8_cosine_gate, decision_gate,
# fp16_vs_fp32_gate, fp16_reference_gate.
_FIGURES = f"""
    SELECT *,
        {_num('$.scaled_error')} AS scaled,
        coalesce({_num('$.scaled_limit')}, {_num('$.limit')}) AS scaled_gate,
        {_num('$.row_cosine')} AS cos, {_num('$.need_row_cosine')} AS cos_gate,
        {_num('$.pooled_cosine')} AS pooled, {_num('$.need_pooled_cosine')} AS pooled_gate,
        coalesce({_num('$.share')}, {_num('$.decision_share')},
                 {_num('$.decisions_agree')} / nullif({_num('$.decisions')}, 0)) AS share,
        least({DECISION_SHARE}, coalesce({_num('$.floor_agree')}, {_num('$.floor.decisions_agree')})
              / nullif({_num('$.decisions')}, 0)) AS share_gate,
        json_extract_string(details, '$.yardstick') AS yardstick
    FROM judged
"""

_MEASURED = """
    SELECT *,
        CASE
            WHEN result = 'contract_issue' THEN 'non-finite output'
            WHEN kind = 'parity' THEN 'parity'
            WHEN kind = 'decision' THEN 'argmax agreement'
            WHEN kind IN ('vs-model', 'cosine') THEN CASE
                WHEN cos < cos_gate OR (result = 'passed' AND cos IS NOT NULL)
                    THEN 'row cosine'
                WHEN pooled < pooled_gate THEN 'mean-pooled cosine'
                WHEN scaled > scaled_gate THEN 'scaled error'
                WHEN share IS NOT NULL AND share < share_gate THEN 'argmax agreement'
                ELSE 'row cosine' END
            WHEN kind = 'model:fp32' AND result <> 'passed' AND NOT (scaled > scaled_gate)
                AND share IS NOT NULL THEN 'argmax agreement'
            ELSE 'scaled error' END AS measure
    FROM figured
"""

_SCORED = """
    SELECT *,
        CASE measure WHEN 'row cosine' THEN cos WHEN 'mean-pooled cosine' THEN pooled
                     WHEN 'argmax agreement' THEN share WHEN 'scaled error' THEN scaled
                     END AS figure,
        CASE measure WHEN 'row cosine' THEN cos_gate WHEN 'mean-pooled cosine' THEN pooled_gate
                     WHEN 'argmax agreement' THEN share_gate
                     WHEN 'scaled error' THEN scaled_gate END AS gate,
        CASE WHEN measure IN ('row cosine', 'mean-pooled cosine', 'argmax agreement')
             THEN '>=' WHEN measure = 'scaled error' THEN '<=' ELSE '' END AS direction
    FROM measured
"""

# How far past (or how close to) its gate a row is: larger is worse. A row without
# figures (non-finite, parity) is worst of its check.
_SHORTFALL = """
    CASE WHEN figure IS NULL OR isnan(figure) THEN 'inf'::DOUBLE
         WHEN direction = '<=' THEN figure / nullif(gate, 0)
         WHEN direction = '>=' THEN (1 - figure) / nullif(1 - gate, 0)
         ELSE 0 END
"""

_SQL = f"""
WITH rows AS (
    SELECT observation_id, op_type AS model, case_id, backend, optimization,
           "check" AS chk, output_name, reference, result, reason, details,
           coalesce(note, '') AS note,
           CASE WHEN split_part("check", ':', 1) = 'model'
                     AND split_part("check", ':', 2) IN ({_VARIANT_LIST})
                THEN split_part("check", ':', 2) ELSE '{FP32}' END AS file,
           CASE WHEN split_part("check", ':', 1) = 'model'
                     AND split_part("check", ':', 2) IN ({_VARIANT_LIST})
                THEN split_part("check", ':', 3)
                WHEN "check" LIKE 'parity:%' THEN 'parity' ELSE "check" END AS kind
    FROM obs
    WHERE suite IN ('models', 'model') AND backend IN ({_RUNTIME_LIST})
      AND (? IS NULL OR op_type = ?)
), gated AS (
    SELECT * FROM rows WHERE kind IN ({_GATE_LIST}) AND result <> 'execution'
), settings AS (
    SELECT DISTINCT model, case_id, backend, optimization FROM rows
), files AS (
    SELECT DISTINCT case_id, file FROM rows
), cells AS (
    SELECT s.*, f.file FROM settings s JOIN files f USING (case_id)
), direct AS (
    SELECT DISTINCT case_id, backend, optimization, file FROM gated
    WHERE kind IN ('vs-model', 'vs-fp32')
), judged AS (
    SELECT c.model AS cell_model, c.case_id AS cell_case, c.backend AS cell_backend,
           c.optimization AS cell_setting, c.file AS cell_file, g.*, false AS inherited
    FROM cells c JOIN gated g ON g.case_id = c.case_id AND g.backend = c.backend
         AND g.optimization = c.optimization AND g.file = c.file
    UNION ALL
    -- a setting with no comparison against the fp32 model on a variant file: its runtime's
    -- baseline's judgement of the file (not where the setting failed on it: that failure is
    -- its cell's, minilm's tract unoptimized was 'safe' on a file it cannot run)
    SELECT c.model, c.case_id, c.backend, c.optimization, c.file, g.*, true
    FROM cells c JOIN gated g ON g.case_id = c.case_id AND g.backend = c.backend
         AND g.file = c.file AND g.kind = 'vs-model' AND g.optimization <> c.optimization
    WHERE c.file <> '{FP32}' AND NOT EXISTS (
        SELECT 1 FROM direct d WHERE d.case_id = c.case_id AND d.backend = c.backend
            AND d.optimization = c.optimization AND d.file = c.file)
      AND NOT EXISTS (
        SELECT 1 FROM rows e WHERE e.case_id = c.case_id AND e.backend = c.backend
            AND e.optimization = c.optimization AND e.file = c.file
            AND e.result = 'execution' AND e.chk NOT IN ({_NOTE_LIST}))
), figured AS ({_FIGURES}
), measured AS ({_MEASURED}
), scored AS ({_SCORED}
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY cell_case, cell_backend, cell_setting, cell_file
        ORDER BY result = 'passed',
                 CASE WHEN result <> 'passed' THEN list_position([{_GATE_LIST}], kind) END,
                 {_SHORTFALL} DESC, output_name, observation_id) AS rank,
        count(*) OVER w AS observations,
        count(*) FILTER (WHERE result <> 'passed') OVER w AS not_passed,
        list(DISTINCT CASE WHEN yardstick IS NULL THEN reference
                           ELSE reference || '+' || yardstick END) OVER w AS arbiters
    FROM scored
    WINDOW w AS (PARTITION BY cell_case, cell_backend, cell_setting, cell_file)
), decided AS (
    SELECT * FROM ranked WHERE rank = 1
), failures AS (
    -- why a cell has no gate: its own execution row, else one that stopped the whole file
    -- (its build, the run's baseline on it), else the setting's on the fp32 model (never
    -- its failure on a variant file: that says nothing of the model or another file)
    SELECT c.case_id, c.backend, c.optimization, c.file,
           arg_min(r.observation_id || chr(31) || r.reason,
                   CASE WHEN r.backend = c.backend AND r.optimization = c.optimization
                             AND r.file = c.file THEN 0
                        WHEN r.file = c.file AND r.kind IN ('build', '') THEN 1
                        WHEN r.backend = c.backend AND r.optimization = c.optimization
                             AND r.file = '{FP32}' THEN 2 END) AS why,
           min(CASE WHEN r.backend = c.backend AND r.optimization = c.optimization
                         AND r.file = c.file THEN 0
                    WHEN r.file = c.file AND r.kind IN ('build', '') THEN 1
                    WHEN r.backend = c.backend AND r.optimization = c.optimization
                         AND r.file = '{FP32}' THEN 2 END) AS why_rank,
           count(*) FILTER (WHERE r.backend = c.backend AND r.optimization = c.optimization
                                AND r.file = c.file) AS own_rows
    FROM cells c JOIN rows r ON r.case_id = c.case_id
    WHERE r.result = 'execution' AND r.chk NOT IN ({_NOTE_LIST})
      AND ((r.backend = c.backend AND r.optimization = c.optimization
            AND r.file IN (c.file, '{FP32}'))
           OR (r.file = c.file AND r.kind IN ('build', '')))
    GROUP BY ALL
), present AS (
    SELECT case_id, backend, optimization, file, count(*) AS n FROM rows GROUP BY ALL
), unbuilt AS (
    -- a variant file gero's tooling could not build: its build row's note (a failure row
    -- where a gero before the notes wrote one)
    SELECT case_id, file, min(observation_id || chr(31) || CASE WHEN note <> '' THEN note
                                                                ELSE reason END) AS why
    FROM rows WHERE kind = 'build' AND (note <> '' OR result = 'execution') GROUP BY ALL
)
SELECT c.model, c.case_id, c.backend, c.optimization, c.file,
       d.measure, d.figure, d.gate, d.direction, d.chk, d.output_name, d.reference,
       d.yardstick, d.arbiters, d.reason, d.observation_id, d.observations, d.not_passed,
       d.inherited, f.why, f.why_rank, coalesce(p.n, 0), u.why
FROM cells c
LEFT JOIN decided d ON d.cell_case = c.case_id AND d.cell_backend = c.backend
     AND d.cell_setting = c.optimization AND d.cell_file = c.file
LEFT JOIN failures f ON f.case_id = c.case_id AND f.backend = c.backend
     AND f.optimization = c.optimization AND f.file = c.file
LEFT JOIN present p ON p.case_id = c.case_id AND p.backend = c.backend
     AND p.optimization = c.optimization AND p.file = c.file
LEFT JOIN unbuilt u ON u.case_id = c.case_id AND u.file = c.file
"""


def verdicts(view: OpenRun, model: str | None = None) -> list[Verdict]:
    """Every verdict of the run's model cases (of ``model`` only: a model's name or its
    file), by model, runtime, setting and file. A model the run did not test raises
    GeroError naming those it did."""
    if model is not None:
        model = model_name(view, model)
    rows = view.query(_SQL, [model, model])
    card = [_verdict(r) for r in rows]
    if any(v.verdict == CANNOT_RUN and not v.observation_id and v.observations == 0
           for v in card):
        card = _plan_left_out(view, card)
    return sorted(card, key=_order)


def _plan_left_out(view: OpenRun, card: list[Verdict]) -> list[Verdict]:
    """A cell with no row of its own whose setting the needed-paths plan did not run on that
    file (``plan.json``): ``not-run``, with the plan's why, not ``cannot-run``."""
    from gero.query.plan_notes import not_run
    from gero_runner.backends import short_name

    left = {(e["model"], e["setting"]): e for e in not_run(view)}
    out = []
    for v in card:
        entry = (left.get((v.model, f"{short_name(v.runtime)}-{v.setting}"))
                 or left.get((v.model, f"{v.runtime}-{v.setting}")))
        if (v.verdict == CANNOT_RUN and not v.observation_id and entry is not None
                and v.file not in entry["ran_on"]):
            v = dataclasses.replace(v, verdict=NOT_RUN, reason="not run (plan): " + str(
                entry["why"]).removeprefix("not needed: "))
        out.append(v)
    return out


def models(view: OpenRun) -> list[str]:
    """The names of the run's model cases (the rows' ``op_type``), sorted."""
    rows = view.query("SELECT DISTINCT op_type FROM obs WHERE suite IN ('models', 'model') "
                      "ORDER BY op_type")
    return [str(name) for (name,) in rows]


def model_name(view: OpenRun, given: str) -> str:
    """The model a user names, by its name (``m``) or its file (``m.onnx``, a path)."""
    names = models(view)
    stem = PurePath(given).stem if given.endswith(".onnx") else given
    for name in (given, stem):
        if name in names:
            return name
    known = ", ".join(names) if names else "none (it was not a `gero run --model` run)"
    raise GeroError(f"run {view.run_id} has no model {given!r}; its models: {known}")


def arbiter_words(arbiter: str) -> str:
    """An arbiter label in words: ``fp32:onnxruntime:all`` -> the fp32 model on
    onnxruntime all."""
    label, _, yardstick = arbiter.partition("+")
    words = _ARBITERS.get(label)
    if words is None:
        file, _, path = label.partition(":")
        runtime, _, setting = path.partition(":")
        if file == FP32 and runtime:
            words = f"the fp32 model on {runtime} {setting}".rstrip()
        elif file in FILES and runtime:
            words = f"the {file} file on {runtime} {setting}".rstrip()
        else:
            words = label
    if yardstick:
        words += f", then {_ARBITERS.get(yardstick, yardstick)}"
    return words


_ARBITERS: Final = {
    "float64-shadow": "the float64 shadow",
    "fp16-rounded-shadow": "the fp16 file in float64 rounded to float16 at each node",
    "fp16-exact-shadow": "the fp16 file computed exactly",
    "int8-exact-shadow": "the file computed exactly",
}
"""Yardsticks the model family names (``checks.model``), in words."""


def _verdict(row: tuple[Any, ...]) -> Verdict:
    (model, case_id, backend, setting, file, measure, figure, gate, direction, check, output,
     reference, yardstick, arbiters, reason, observation_id, observations, not_passed,
     inherited, why, why_rank, present, unbuilt) = row
    common = {"model": str(model), "case_id": str(case_id), "runtime": str(backend),
              "setting": str(setting), "file": str(file)}
    if observation_id is not None:
        arbiter = str(reference) + (f"+{yardstick}" if yardstick else "")
        return Verdict(**common, verdict=OFF if not_passed else SAFE, measure=str(measure),
                       figure=_float(figure), gate=_float(gate), direction=str(direction),
                       check=str(check), output=str(output), arbiter=arbiter,
                       arbiters=tuple(sorted(str(a) for a in arbiters or ())),
                       reason=str(reason), observation_id=str(observation_id),
                       observations=int(observations), not_passed=int(not_passed),
                       inherited=bool(inherited))
    failed_id, reason = "", ""
    if unbuilt is not None:  # nothing ran on a file gero could not build
        failed_id, _, reason = str(unbuilt).partition(chr(31))
        return Verdict(**common, verdict=NOT_BUILT, measure="", figure=None, gate=None,
                       direction="", check="", output="", arbiter="", arbiters=(),
                       reason=f"not built: {reason}", observation_id=failed_id,
                       observations=0, not_passed=0, inherited=True)
    if why is not None:
        failed_id, _, reason = str(why).partition(chr(31))
        if why_rank == 1:
            reason = f"not judged on this file: {reason}"
        elif why_rank == 2:
            reason = f"did not run: {reason}"
    elif present:
        # it ran, and no gate judged it: the arbiter of the fp32 comparisons itself
        reason = ("not judged: it is the arbiter the other paths were measured against "
                  "(the model has no float64 shadow nor expected outputs)")
    else:
        reason = "not judged on this file: no observation of it"
    return Verdict(**common, verdict=CANNOT_RUN, measure="", figure=None, gate=None,
                   direction="", check="", output="", arbiter="", arbiters=(), reason=reason,
                   observation_id=failed_id, observations=0, not_passed=0,
                   inherited=why_rank in (1, 2))


def shortfall(v: Verdict) -> float:
    """How far past its gate a verdict's figure is (larger is worse; inf without one)."""
    if v.figure is None or v.gate is None or not math.isfinite(v.figure):
        return math.inf
    if v.direction == "<=":
        return v.figure / v.gate if v.gate else math.inf
    return (1 - v.figure) / (1 - v.gate) if v.gate < 1 else math.inf


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _order(v: Verdict) -> tuple[Any, ...]:
    runtimes = list(RUNTIMES)
    runtime = runtimes.index(v.runtime) if v.runtime in runtimes else len(runtimes)
    setting = (ORT_LEVELS.index(v.setting) if v.setting in ORT_LEVELS else len(ORT_LEVELS))
    return (v.model, v.case_id, runtime, v.runtime, setting, v.setting, FILES.index(v.file))


def causes(card: Sequence[Verdict]) -> list[list[Verdict]]:
    """The verdicts that are not safe, grouped so that one line says each cause: the
    settings one row decides (a file that could not be built, a file its runtime's
    baseline judges off), then a runtime's settings on one file under one check; worst
    first within a group."""
    bad = [v for v in card if v.verdict != SAFE and v.verdict not in NEUTRAL]
    groups: dict[tuple[str, ...], list[Verdict]] = {}
    seen = Counter(v.observation_id for v in bad if v.observation_id)
    shared = {oid for oid, n in seen.items() if n > 1}
    for v in bad:
        key = ((v.observation_id,) if v.observation_id in shared
               else (v.runtime, v.file, v.verdict, v.check))
        groups.setdefault(key, []).append(v)
    return [sorted(g, key=lambda v: (v.inherited, -shortfall(v))) for g in groups.values()]


def all_safe(card: list[Verdict]) -> bool:
    """Whether every verdict is safe (what ``gero verdict``'s exit status says); a setting
    the plan did not run, a file gero could not build, is no verdict against it."""
    return all(v.verdict == SAFE or v.verdict in NEUTRAL for v in card)
