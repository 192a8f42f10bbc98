"""What a finding is: its signature's words, the tables it is kept in, the dataclasses a
caller reads (``Finding``, its ``Representative``, a run's ``FindingsReport``) and their
one order."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from gero_runner.result_classes import COMPARISON_CHECKS, SEVERITY

MEMBERS_TABLE = "finding_members"
"""observation_id -> finding_id (and the signature parts), one row per non-passed observation
(two for a row that hits two registered defects: it is a member of each defect's finding)."""
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
GERO_LIMIT = "gero"
"""The outlier of what gero itself does not do (compare a sequence or map output): the
runtime computed it, so no runtime is to blame."""

PAIR = " vs "
"""Joins the two runtimes of a disagreement no float64 can decide (``onnxruntime vs
openvino``): the outlier of a model case without a float64 shadow."""
WIDENS_FP16 = "computes the fp16 file in float32"
"""How the row that says a runtime runs an fp16 file in float32 words it."""


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
    cause: str = ""
    """The words its title quotes where the finding's template masked them (the ``cause``
    fact: ``TractError: Impossible to unify F16 with F32.``), '' where none is known."""
    figures: str = ""
    """Its comparison's recorded figures as JSON (the ``figures`` column: ``mismatches``,
    ``elements``, ``max_abs_error``), '' where none were recorded (a failure, a gero
    before schema 5): what a title of an output that is off quotes."""


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
    kind: str = ""
    """Its decisive rows' kind of failure (``gero_runner.facts``: ``cannot-run``,
    ``law:NAME``, ``outside``, ...)."""
    cause_key: str = ""
    """The key of its cause where one is known (``unsupported-op:DOMAIN::OP``,
    ``defect:KEY``, ``precision-rewrite``, ...), else ''."""
    scope: str = ""
    """What it is about: ``model`` when any of its rows is about the model itself, else the
    variant files its rows are about (``fp16,int8-static``), or ``graph``."""
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
    """Non-passed observations of the run (each in one finding; a row that hits two registered
    defects in each defect's: findings count causes, this counts rows)."""
    baseline_problem: str = ""
    """Why the previous run was not compared with (its observations cannot be read)."""

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "baseline_run_id": self.baseline_run_id,
                "baseline_problem": self.baseline_problem, "non_passed": self.non_passed,
                "findings": [f.as_dict() for f in self.findings],
                "gone": [f.as_dict() for f in self.gone],
                "unresolved": [f.as_dict() for f in self.unresolved]}


def finding_order(f: Finding) -> tuple[bool, int, int, str]:
    """The findings' one order: what can be assessed first (a runtime's wrong numbers
    before what no runtime could be judged on), then ``SEVERITY``, the most observations,
    the id. ``members.build_members`` ranks the table's rows the same way."""
    return (not f.assessable, -SEVERITY.get(f.result, 0), -f.observations, f.finding_id)


def findings_json(report: FindingsReport) -> str:
    return json.dumps(report.as_dict(), indent=2, default=str)
