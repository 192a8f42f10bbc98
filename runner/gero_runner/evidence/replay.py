"""Replay an artifact directory: verify the manifest, re-run the case, compare with the record.

Each stored observation is matched with the one the re-run makes for the same check, path,
optimisation level, output and reference, and is reported as reproduced bit-exact (output
hashes equal), within the stored tolerance of the stored outputs, or not reproduced (with the
max abs difference). Paths that are data rather than executions (a float64 formula, shipped
expected outputs) are taken from the artifact as stored.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from gero_runner import backends
from gero_runner.case import MODEL_SUITES
from gero_runner.checks.releases import RELEASES
from gero_runner.classify import classify
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.evidence.rebuild import load_artifact_case
from gero_runner.evidence.rows import (
    OBSERVATIONS_JSON,
    find_data_root,
    read_rows_json,
    rows_for_artifact,
)
from gero_runner.metrics.compare import compare
from gero_runner.metrics.model_level import MODEL_REL_FLOOR
from gero_runner.request import DEFAULT_TIMEOUT_S
from gero_runner.result_classes import COMPARISON_CHECKS, MODEL_PREFIX
from gero_runner.schema import Observation
from gero_runner.storage.artifacts import has_member, load_array, summary_of, verify_manifest
from gero_runner.tolerances import FLOAT_DTYPES, Tolerances

BIT_EXACT = "bit_exact"
WITHIN_TOLERANCE = "within_tolerance"
SAME_OUTCOME = "same_outcome"
"""The observation has no output (a path failed): it reproduced if it failed the same way."""
NOT_REPRODUCED = "not_reproduced"
NOT_REPLAYED = "not_replayed"
"""The re-run made no matching observation (a model-level verdict, a runtime that is not
installed): neither reproduced nor failed, and said as such."""
STATUSES = (BIT_EXACT, WITHIN_TOLERANCE, SAME_OUTCOME, NOT_REPRODUCED, NOT_REPLAYED)
STATUS_LABELS = {
    BIT_EXACT: "reproduced bit-exact",
    WITHIN_TOLERANCE: "reproduced within the stored tolerance",
    SAME_OUTCOME: "reproduced (same outcome, no output)",
    NOT_REPRODUCED: "did not reproduce",
    NOT_REPLAYED: "not replayed",
}


@dataclass(frozen=True)
class ObservationReplay:
    """One stored observation against its re-run."""

    observation_id: str
    case_id: str
    check: str
    backend: str
    optimization: str
    output_name: str
    reference: str
    rtol: float
    atol: float
    status: str
    stored_result: str
    replayed_result: str | None
    max_abs_difference: float | None
    """Max |replayed − stored| over the actual and reference outputs (None: not measured)."""
    recorded_version: str
    installed_version: str | None
    message: str

    @property
    def replayed(self) -> bool:
        return self.status != NOT_REPLAYED

    @property
    def result_matches(self) -> bool:
        return self.replayed_result == self.stored_result

    @property
    def reproduced(self) -> bool:
        return self.status in (BIT_EXACT, WITHIN_TOLERANCE, SAME_OUTCOME) and self.result_matches

    @property
    def label(self) -> str:
        """Its status in words (``STATUS_LABELS``), as the CLI and the explorer say it."""
        return STATUS_LABELS.get(self.status, self.status)


@dataclass(frozen=True)
class ReplayReport:
    """Everything a replay found, for the CLI (text or JSON) and the explorer."""

    directory: str
    case_id: str
    rows_source: str
    """Where the stored rows came from: observations.json or the data root's Parquet files."""
    manifest_files: int
    observations: tuple[ObservationReplay, ...]
    version_changes: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())
    seconds: float = 0.0

    @property
    def reproduced(self) -> bool:
        """Something was re-run, and everything re-run reproduced (rows not re-run are
        neither: ``counts()['not_replayed']`` says how many)."""
        replayed = [o for o in self.observations if o.replayed]
        return bool(replayed) and all(o.reproduced for o in replayed)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for o in self.observations:
            counts[o.status] += 1
        counts["result_changed"] = sum(o.replayed and not o.result_matches
                                       for o in self.observations)
        return counts

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reproduced"] = self.reproduced
        data["counts"] = self.counts()
        for item, obs in zip(data["observations"], self.observations, strict=True):
            item["replayed"] = obs.replayed
            item["result_matches"] = obs.result_matches
            item["reproduced"] = obs.reproduced
        return data


def stored_rows(directory: Path, warn: Callable[[str], None] | None = None
                ) -> tuple[list[Observation], str]:
    """The rows of an artifact: its observations.json, else its data root's Parquet files."""
    own = directory / OBSERVATIONS_JSON
    if own.is_file():
        return read_rows_json(own), OBSERVATIONS_JSON
    root = find_data_root(directory)
    if root is None:
        raise ArtifactError(
            f"{directory}: no {OBSERVATIONS_JSON} and not inside a data root (no runs/ folder "
            "above it), so there are no stored observations to compare with; "
            "make a bundle with `gero bundle OBSERVATION_ID -o FILE.tar.gz`"
        )
    return rows_for_artifact(root, directory, warn), f"data root {root.path}"


class ReplayFailed(GeroError):
    """The re-run itself did not finish (it hung past the timeout, crashed or was cancelled)."""

    exit_code = 1


def _rerun_rows(case: Any, settings: Any) -> list[Observation]:
    from gero_runner.checks.task import evaluate_case

    return evaluate_case(case, settings).rows


def replay_artifact(directory: Path | str, observation_ids: Iterable[str] | None = None,
                    rows: list[Observation] | None = None,
                    warn: Callable[[str], None] | None = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S,
                    cancelled: Callable[[], bool] | None = None,
                    reuse: bool = True) -> ReplayReport:
    """Verify, re-run and compare one artifact directory (raises ArtifactError if tampered).

    The re-run happens in a child process bounded by ``timeout_s`` (a case may loop for
    ever); ``cancelled``, polled while it runs, stops it early (the explorer's replay).
    With ``reuse``, a path of a model case whose outputs the directory's data root kept
    (same model, inputs, settings and runtime version) is not run again; a runtime whose
    version changed since is.
    """
    from gero_runner.execution.context import RunSettings
    from gero_runner.process.isolate import IsolatedFailure, call_isolated

    start = time.perf_counter()
    directory = Path(directory)
    if not directory.is_dir():
        raise ArtifactError(f"{directory}: no such artifact directory")
    files = verify_manifest(directory)
    problems: list[str] = []

    def note(message: str) -> None:
        problems.append(message)
        if warn is not None:
            warn(message)

    source = "given rows"
    if rows is None:
        rows, source = stored_rows(directory, note)
    if observation_ids is not None:
        rows = select_rows(rows, observation_ids, directory)
    if not rows:
        raise ArtifactError(f"{directory}: no stored observations point to this directory")

    art = load_artifact_case(directory)
    for name, x in art.case.inputs.items():
        if x.dtype.kind == "c":  # no case gero makes has one; ONNX Runtime runs none
            raise ArtifactError(f"{directory}: input {name!r} is {x.dtype}; gero replays "
                                "real-valued cases only")
    named = _with_releases(art.backends, rows)
    runtimes = tuple(name for name in named if backends.get(name).installed())
    for name in named:
        if name not in runtimes:
            note(f"{name} is not installed here ({backends.get(name).install_hint()}): its "
                 "observations are not replayed")
    checks = tuple(family for family, prefix in (("contracts", "contract:"),
                                                 ("variants", "variant:"))
                   if any(str(r.check).startswith(prefix) for r in rows))
    if any(backends.release_of(name) for name in runtimes):
        checks = (*checks, RELEASES)  # as ``run.RunRequest`` adds it
    with tempfile.TemporaryDirectory(prefix="gero-replay-") as tmp:
        kept = find_data_root(directory) if reuse else None
        settings = RunSettings(data_root=tmp, levels=art.levels, threads=art.threads,
                               backends=runtimes,
                               repeats=_repeats(rows), tolerances=_tolerances(rows),
                               checks=checks,
                               reuse_root="" if kept is None else str(kept.path))
        try:
            fresh = call_isolated(_rerun_rows, art.case, settings, timeout_s=timeout_s,
                                  cancelled=cancelled)
        except IsolatedFailure as e:
            raise ReplayFailed(f"{directory}: the re-run of {art.case.case_id} {e}") from None
        fresh_dir = Path(tmp) / fresh[0].artifact_path if fresh else Path(tmp)
        index: dict[tuple[str, ...], list[Observation]] = {}
        for row in fresh:
            index.setdefault(_key(row), []).append(row)
        results = tuple(_replay_row(directory, fresh_dir, row, index.get(_key(row), []))
                        for row in sorted(rows, key=_order))
    changes = sorted({f"{o.backend}: recorded {o.recorded_version}, installed "
                      f"{o.installed_version}" for o in results
                      if o.installed_version and o.installed_version != o.recorded_version})
    return ReplayReport(str(directory), art.case.case_id, source, len(files), results,
                        tuple(changes), tuple(problems), time.perf_counter() - start)


def _with_releases(runtimes: Iterable[str], rows: list[Observation]) -> tuple[str, ...]:
    """The runtimes to run again, with the releases the rows name (issue 42): a releases
    row's reference release first (the releases check compares every other release of its
    runtime with the first named), then the artifact's runtimes and the rows' releases."""
    references = [str(r.reference).split(":")[0] for r in rows if r.check == RELEASES]
    releases = [str(r.backend) for r in rows if backends.release_of(str(r.backend))]
    return tuple(dict.fromkeys([*references, *runtimes, *releases]))


def select_rows(rows: list[Observation], given: Iterable[str], directory: Path
                ) -> list[Observation]:
    """The rows ``given`` names: each a full observation id or a unique prefix of one (the
    short ids gero prints); one that names none, or several, is an ArtifactError."""
    chosen: set[str] = set()
    for text in dict.fromkeys(g.strip() for g in given if g.strip()):
        matches = [r for r in rows if str(r.observation_id).startswith(text)]
        exact = [r for r in matches if r.observation_id == text]
        if not matches:
            raise ArtifactError(f"observation {text} does not belong to {directory}: none of "
                                f"its {len(rows)} observations has an id starting so")
        if len(matches) > 1 and not exact:
            shown = ", ".join(str(r.observation_id)[:16] for r in matches[:3])
            raise ArtifactError(f"observation {text} is ambiguous in {directory}: "
                                f"{len(matches)} ids start so ({shown}"
                                f"{', …' if len(matches) > 3 else ''}); give more of it")
        chosen.update(str(r.observation_id) for r in exact or matches)
    return [r for r in rows if str(r.observation_id) in chosen]


def _key(row: Observation) -> tuple[str, ...]:
    return tuple(str(v) for v in (row.check, row.backend, row.optimization, row.output_name,
                                  row.reference))


def _order(row: Observation) -> tuple[str, ...]:
    return (*_key(row), str(row.observation_id))


def _repeats(rows: list[Observation]) -> int:
    """The recorded repeat count: determinism contracts compare that many runs."""
    counts = [int(r.repeats) for r in rows if isinstance(r.repeats, int)]
    return max([1, *counts])


def _tolerances(rows: list[Observation]) -> Tolerances:
    """Per float dtype, the tolerance the stored comparison rows used (for the re-run's
    classes); the defaults for a dtype no such row has."""
    rtols: dict[str, object] = {}
    atols: dict[str, object] = {}
    for row in rows:
        rtol, atol, dtype = row.rtol, row.atol, str(row.dtype)
        if (row.check in COMPARISON_CHECKS and dtype in FLOAT_DTYPES
                and dtype not in rtols and isinstance(rtol, float) and isinstance(atol, float)
                and math.isfinite(rtol) and math.isfinite(atol) and rtol >= 0 and atol >= 0):
            rtols[dtype], atols[dtype] = rtol, atol
    return Tolerances.with_overrides(rtols, atols)


def _pick(stored: Observation, candidates: list[Observation]) -> Observation | None:
    for row in candidates:
        if row.rtol == stored.rtol and row.atol == stored.atol:
            return row
    return candidates[0] if candidates else None


def _max_diff(new: np.ndarray, old: np.ndarray, rtol: float, atol: float) -> tuple[float, bool]:
    """Max |new − old| and whether every element is within atol + rtol·|old| (NaN ≡ NaN)."""
    if new.shape != old.shape or new.dtype != old.dtype:
        return math.inf, False
    if new.size == 0:
        return 0.0, True
    a = new.astype(np.float64)
    b = old.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(both_nan | same_inf, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), math.inf, diff)
    bound = atol + rtol * np.abs(np.where(np.isfinite(b), b, 0.0))
    return float(diff.max()), bool(np.all(diff <= bound))


def _load(directory: Path, relative: str) -> np.ndarray | None:
    if not relative or not has_member(directory, relative):
        return None
    return load_array(directory, relative)


def _replay_row(directory: Path, fresh_dir: Path, stored: Observation,
                candidates: list[Observation]) -> ObservationReplay:
    rtol, atol = float(stored.rtol), float(stored.atol)
    replay = partial(ObservationReplay, observation_id=stored.observation_id,
                     case_id=stored.case_id, check=stored.check, backend=stored.backend,
                     optimization=stored.optimization, output_name=stored.output_name,
                     reference=stored.reference, rtol=rtol, atol=atol,
                     stored_result=stored.result, recorded_version=stored.backend_version)
    new = _pick(stored, candidates)
    if new is None:
        why = ("a model-level verdict over the whole case's paths, which replay does not "
               "judge again (the paths and comparisons it rests on are re-run)"
               if str(stored.check).startswith(MODEL_PREFIX) else
               "the re-run made no observation for this check/path")
        return replay(status=NOT_REPLAYED, replayed_result=None, max_abs_difference=None,
                      installed_version=None, message=why)
    installed = new.backend_version
    result, reason = new.result, new.reason
    new_a, new_r = _load(fresh_dir, new.actual_file), _load(fresh_dir, new.reference_file)
    if stored.check in COMPARISON_CHECKS and new_a is not None and new_r is not None:
        # The class under the stored row's own tolerance (rows of other runs may differ),
        # on the scale the run compared at: a model's outputs at their largest magnitude
        # (without it a localize repro's bit-exact rows read as changed results).
        floor = MODEL_REL_FLOOR if stored.suite in MODEL_SUITES else 0.0
        result, reason = classify(compare(new_a, new_r, rtol, atol, rel_floor=floor),
                                  rtol, atol)
    if not stored.actual_hash:
        same = result == stored.result and not new.actual_hash
        return replay(status=SAME_OUTCOME if same else NOT_REPRODUCED, replayed_result=result,
                      max_abs_difference=None, installed_version=installed, message=reason)
    if new.actual_hash == stored.actual_hash and new.reference_hash == stored.reference_hash:
        return replay(status=BIT_EXACT, replayed_result=result, max_abs_difference=0.0,
                      installed_version=installed, message=reason)
    measured: list[tuple[float, bool]] = []
    for side, fresh_array, fresh_hash, stored_hash, stored_file in (
            ("actual", new_a, new.actual_hash, stored.actual_hash, stored.actual_file),
            ("reference", new_r, new.reference_hash, stored.reference_hash,
             stored.reference_file)):
        if fresh_hash == stored_hash:
            continue  # this side is bit-identical
        old_array = _load(directory, stored_file)
        if old_array is None and summary_of(directory, stored_file) is not None:
            return replay(
                status=NOT_REPRODUCED, replayed_result=result, max_abs_difference=None,
                installed_version=installed,
                message=f"the {side} output hash differs, and the stored one was kept as a "
                        "summary only (over its case's evidence budget), so by how much is "
                        f"not known; now: {reason}")
        if fresh_array is None or old_array is None:
            return replay(
                status=NOT_REPRODUCED, replayed_result=result, max_abs_difference=None,
                installed_version=installed,
                message=f"the {side} output hash differs and the output is not stored as a "
                        f"file to measure by how much; now: {reason}")
        measured.append(_max_diff(fresh_array, old_array, rtol, atol))
    diff = max(d for d, _ in measured)
    within = all(ok for _, ok in measured)
    return replay(status=WITHIN_TOLERANCE if within else NOT_REPRODUCED, replayed_result=result,
                  max_abs_difference=diff, installed_version=installed, message=reason)
