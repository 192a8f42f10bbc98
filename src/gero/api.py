"""The library behind the ``gero`` command: run a suite or a model, open a stored run,
and work on its evidence and its data root.

The CLI is a thin layer over these functions (the way sqlite-utils' CLI sits over
``Database``): every ``gero run`` option is a keyword argument of :func:`run`, what
``gero summary``, ``gero findings`` and ``gero diff`` print comes from a :class:`Run`, and
``gero blame``, ``bundle``, ``replay``, ``localize``, ``export``, ``parity``, ``compact``
and ``gc`` are the functions of those names; the commands only parse and print. The
explorer's actions (its run picker, replay, blame, bundle, localize) call the same
functions; those on one observation take its stored row as well as its id.

Importing this module loads neither NumPy nor pyarrow (the explorer's first frame imports
it): what needs them is imported inside the function that does.
"""

from __future__ import annotations

import errno
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

from gero_runner.errors import GeroError
from gero_runner.request import (
    DEFAULT_TIMEOUT_S,
    RunKeywords,
    RunRequest,
    default_data_root,
    request_from_keywords,
    run_options,
)
from gero_runner.request import PathLike as PathLike  # re-exported: gero.testing uses it
from gero_runner.result_classes import PASSED, RESULT_CLASSES
from gero_runner.storage.reader import OpenRun
from gero_runner.storage.reader import RunGone as RunGone  # re-exported: the explorer
from gero_runner.storage.reader import open_run as _open_reader
from gero_runner.storage.runs import RunInfo as RunInfo  # re-exported: the explorer
from gero_runner.storage.runs import list_runs as _list_runs
from gero_runner.storage.runs import read_info
from gero_runner.storage.runs import resolve_run as _resolve_run

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from gero.query.diff import DiffReport
    from gero.query.export import ExportResult
    from gero.query.findings import Finding, FindingsReport
    from gero.query.stored_localization import StoredLocalization
    from gero.query.verdicts import Verdict
    from gero_runner.evidence.blame import Blame
    from gero_runner.evidence.bundle import BundleResult
    from gero_runner.evidence.replay import ReplayReport as ReplayReport
    from gero_runner.execution.plan import Activity
    from gero_runner.parity.run import ParityResult
    from gero_runner.storage.compact import Compaction
    from gero_runner.storage.gc import GcPlan


Observation = str | Mapping[str, Any]
"""An observation: its id or a unique prefix of it, or its stored row (a mapping of the
``gero_runner.schema`` columns, as :func:`find_observation` returns it); a caller that
holds the row (the explorer) saves the look-up through every run's files."""

NO_EVIDENCE = "no evidence kept: nothing to replay"
"""What replay_command says for an observation that kept no tensors (a timeout): naming the
data root as the evidence folder would replay nothing."""


def default_data_dir() -> Path:
    """``$GERO_DATA_DIR``, else ``./data``: the data root every command uses by default."""
    return default_data_root()


def request(**keywords: Unpack[RunKeywords]) -> RunRequest:
    """The checked :class:`~gero_runner.request.RunRequest` for :func:`run`'s options.

    Bad values raise :class:`GeroError` with the same sentence ``gero run`` prints.
    """
    return request_from_keywords(keywords)


def run(*, resume: str | None = None, progress: Callable[[int, int], None] | None = None,
        activity: Callable[[Activity], None] | None = None,
        warn: Callable[[str], None] | None = None, **keywords: Unpack[RunKeywords]) -> Run:
    """Run a suite or models into the data root, like ``gero run``, and return the run.

    Every option is the ``gero run`` flag of the same name
    (:class:`~gero_runner.request.RunKeywords` lists them, each with its flag): ``models``
    is ``--model``, ``contracts=False`` is ``--no-contracts``, ``input_shapes`` ``--input``,
    ``max_tensor_mb`` and ``max_evidence_mb`` ``--max-tensor-mb`` and ``--max-evidence-mb``,
    ``inputs_file`` ``--inputs``, ``calibration_file`` ``--calibration``, ``decision_axes``
    ``--decision-axis``; ``rtol``/``atol`` map a dtype to a value; ``dims``,
    ``input_shapes`` (``"1,3,48,192"``), ``input_ranges`` (``"-1,1"``), ``input_values`` and
    ``output_kinds`` map an input or output name to a value, or are the CLI's ``NAME=VALUE``
    strings; ``backends=None``, like no ``--backends``, tests every installed runtime).
    With ``models`` and the default
    suite, only the models run. ``path_budget`` (``--path-budget``) bounds each path of a
    model case, ``skip_paths`` (``--skip-path``) drops runtime settings (``"tract:unoptimized"``).
    ``progress(done, total)`` is called as cases finish; ``activity(Activity)`` about once a
    second with the paths running now (``gero_runner.execution.plan.Activity``);
    ``warn(message)`` gets each warning (they are kept in :attr:`Run.warnings` too).
    ``executor="dask"`` (``--executor dask``) runs the cases on the Dask distributed
    cluster whose scheduler is ``scheduler`` (``tcp://HOST:PORT``; default:
    ``$GERO_DASK_SCHEDULER``); it needs ``pip install 'gero[dask]'``.
    A Ctrl-C keeps the finished cases: the run's :attr:`Run.status` is then
    ``interrupted``, and ``resume=RUN_ID`` (``--resume``) finishes it without redoing them
    (the other options are then those stored with the run: only ``data_dir``, ``jobs``,
    ``executor``, ``scheduler`` and ``command_line`` may be given with it). A full disk
    raises ``gero_runner.run.DiskFull`` (a :class:`GeroError`) after keeping what was saved;
    a case the executor ended without an outcome for raises ``gero_runner.run.LostCases``,
    the run kept as ``interrupted`` (``resume`` runs the lost cases).
    """
    from gero_runner.run import execute

    if resume is not None:
        _refuse_options_of_resume(resume, keywords)
    if not keywords.get("command_line"):
        keywords["command_line"] = _call_line(keywords)
    req = request(**keywords)
    warnings: list[str] = []

    def collect(message: str) -> None:
        warnings.append(message)
        if warn is not None:
            warn(message)

    record = execute(req, progress, collect, resume, activity)
    return Run(req.data_root, record.run_id, warnings=warnings)


def _call_line(keywords: RunKeywords) -> str:
    """What the run record says started a run from Python: ``gero.run(suite=..., ...)``."""
    shown: dict[str, object] = {"suite": keywords.get("suite", "synthetic")}
    for name in ("models", "ops", "dtypes", "variants"):
        value = keywords.get(name)
        if isinstance(value, str | os.PathLike):
            value = [value]
        if isinstance(value, Iterable):
            value = [str(v) for v in value]
        if value:
            shown[name] = value
    return "gero.run(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def _refuse_options_of_resume(resume: str, keywords: RunKeywords) -> None:
    """``resume`` finishes a run with the options it was started with: any other option
    given would be silently ignored, so it is refused (each keyword's ``Option`` says
    whether a resumed run takes it)."""
    changed = [f"{name} ({option.flag})" for name, option in run_options().items()
               if name in keywords and not option.on_resume]
    if changed:
        raise GeroError(f"resume finishes run {resume} with the options it was started "
                        f"with; {', '.join(changed)} would be ignored: drop "
                        f"{'it' if len(changed) == 1 else 'them'}, or start a new run")


def localize(observation: Observation, data_dir: PathLike | None = None,
             output: PathLike | None = None, problems: list[str] | None = None,
             cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """What ``gero localize`` does: the node where the observation's error enters (its
    ``origins``), the nodes that carry or magnify it (``amplifiers``), the figures of every
    tensor compared, and a ``summary`` sentence, stored with the evidence
    (``localize/OBSERVATION_ID.json``, whose path is ``stored``). ``observation`` is an id
    or a prefix; ``output`` writes the first origin as a repro directory that ``gero replay``
    runs again. Files that could not be read are appended to ``problems``. It runs in a
    child process, stopped early once ``cancelled()`` is true (the explorer's screen left).
    """
    from gero_runner.evidence.localize import localize_observation

    root = _root(data_dir)
    if output is not None:
        refuse_inside_root(output, root)
    row = _row(observation, data_dir, problems)
    loc, stored = localize_observation(root, row, Path(output) if output is not None else None,
                                       cancelled=cancelled)
    return {**loc.as_dict(), "stored": str(stored)}


def finding_localization(reader: OpenRun, finding: Finding) -> StoredLocalization | None:
    """The stored localization a finding shows (the explorer's Findings screen, ``gero
    findings --format md``): its representative's, else another of its own members' in the
    same evidence directory, one with an origin; never one of a row that is not the
    finding's (a passed row of another path of the same case)."""
    from gero.query.finding_report import finding_members, stored_localization

    members = finding_members(reader).get(finding.finding_id, set())
    return stored_localization(Path(reader.data_root), finding, members)


def localization_file(observation: Mapping[str, Any], data_dir: PathLike | None = None) -> Path:
    """Where :func:`localize` stores an observation's result (its stored row): the JSON
    whose path :func:`localize` returns as ``stored``, the tensors it kept beside it
    (``.npz``); it need not exist yet. A :class:`GeroError` as :func:`evidence_directory`
    says."""
    from gero_runner.evidence.localize import localize_path

    return localize_path(evidence_directory(observation, data_dir),
                         str(observation["observation_id"]))


def verdicts_of(reader: OpenRun, model: str | None = None) -> list[Verdict]:
    """The verdict card of an open run (:meth:`Run.verdicts`; the explorer holds its run
    open as a reader)."""
    from gero.query.verdicts import verdicts

    return verdicts(reader, model)


def plan_notes_of(reader: OpenRun) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The settings the needed-paths plan did not run on a model (with why) and the rows'
    notes: what ``gero summary`` shows as ``not_run`` and ``notes``, counted in no class."""
    from gero.query.plan_notes import not_run, notes

    return not_run(reader), notes(reader)


def find_observation(observation: str, data_dir: PathLike | None = None,
                     problems: list[str] | None = None) -> dict[str, Any]:
    """The stored row of an observation, by id or unique prefix (what ``blame``, ``bundle``
    and ``localize`` take). Files that could not be read are appended to ``problems``."""
    from gero_runner.storage.reader import resolve_observation

    return resolve_observation(_root(data_dir), observation, problems)


def _row(observation: Observation, data_dir: PathLike | None,
         problems: list[str] | None) -> dict[str, Any]:
    if isinstance(observation, str):
        return find_observation(observation, data_dir, problems)
    return dict(observation)


def evidence_directory(observation: Mapping[str, Any], data_dir: PathLike | None = None
                       ) -> Path:
    """The evidence directory of an observation (its stored row), what :func:`replay`
    re-runs and :func:`blame` and :func:`localize` start from; a :class:`GeroError` when
    it kept none, it is gone, or it lies outside the data root."""
    from gero_runner.storage.artifacts import evidence_directory as directory_of

    return directory_of(_root(data_dir), observation)


@dataclass(frozen=True)
class Blamed:
    """``gero blame``'s answer: the observation, which level and rewrite changed its output,
    and where that is stored with the evidence (``blame/OBSERVATION_ID.json``)."""

    observation: dict[str, Any]
    blame: Blame
    stored: Path


def blame(observation: Observation, data_dir: PathLike | None = None,
          problems: list[str] | None = None) -> Blamed:
    """What ``gero blame`` does: run the observation's graph at every ONNX Runtime level,
    name the first level that changes the output and the rewrite behind it."""
    from gero_runner.evidence.blame import blame_observation  # imports ONNX Runtime

    row = _row(observation, data_dir, problems)
    found, stored = blame_observation(_root(data_dir), row)
    return Blamed(row, found, stored)


def stored_blame(observation: Mapping[str, Any], data_dir: PathLike | None = None
                 ) -> dict[str, Any] | None:
    """The blame :func:`blame` stored with an observation's evidence (its stored row), as
    ``Blame.as_dict`` wrote it; None when there is none or it cannot be read."""
    from gero_runner.evidence.blame import read_blame

    try:
        return read_blame(evidence_directory(observation, data_dir),
                          str(observation["observation_id"]))
    except GeroError:
        return None


@dataclass(frozen=True)
class Bundled:
    """``gero bundle``'s answer: the observation and the archive written for it."""

    observation: dict[str, Any]
    bundle: BundleResult


def bundle(observation: Observation, output: PathLike, data_dir: PathLike | None = None,
           problems: list[str] | None = None) -> Bundled:
    """What ``gero bundle`` does: the observation's case as a ``.tar.gz`` (graph, inputs,
    outputs, manifest, rows, the replay command) that :func:`replay` verifies and re-runs."""
    from gero_runner.evidence.bundle import create_bundle
    from gero_runner.storage.store import DataRoot

    out = Path(output)
    if not out.name.endswith((".tar.gz", ".tgz")):
        # The bundle is a gzipped tar whatever the name says: a .zip would not open as one.
        stem = out.name.split(".")[0] or "bundle"
        raise GeroError(f"-o {out}: a bundle is a .tar.gz; name it {stem}.tar.gz")
    refuse_inside_root(out, _root(data_dir))
    row = _row(observation, data_dir, problems)
    return Bundled(row, create_bundle(DataRoot(_root(data_dir)), row, out))


def replay(path: PathLike, data_dir: PathLike | None = None,
           observations: Sequence[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
           warn: Callable[[str], None] | None = None,
           cancelled: Callable[[], bool] | None = None) -> ReplayReport:
    """What ``gero replay`` does: verify an evidence directory or bundle against its
    manifest, re-run its paths and say per observation whether it reproduced. A relative
    ``artifact_path`` as exported (``runs/…/artifacts/…``) is found under ``data_dir``;
    ``observations`` restricts it to those ids (or unique prefixes of them). The re-run
    is a child process, stopped early once ``cancelled()`` is true (the explorer's screen
    left). :func:`replay_command` is the command line that does the same."""
    from gero_runner.evidence.bundle import opened
    from gero_runner.evidence.replay import replay_artifact
    from gero_runner.request import check_timeout

    check_timeout(timeout)
    where = Path(path)
    if not where.exists() and not where.is_absolute() and (_root(data_dir) / where).exists():
        where = _root(data_dir) / where
    with opened(where) as directory:
        return replay_artifact(directory, observation_ids=list(observations or []) or None,
                               warn=warn, timeout_s=timeout, cancelled=cancelled)


@dataclass(frozen=True)
class Exported:
    """``gero export``'s answer: the run exported and what was written."""

    run_id: str
    result: ExportResult


def export(output: PathLike, run: str | None = None, where: str | None = None,
           format: str | None = None, data_dir: PathLike | None = None,
           problems: list[str] | None = None) -> Exported:
    """What ``gero export`` does: a run's observations (``where`` the filter ``--where``
    takes) to ``output`` as csv, parquet, json or an md report (``format``: default from
    the suffix)."""
    from gero.query.export import FORMATS, export_rows
    from gero.query.filters import parse_filter

    out = Path(output)
    fmt = format or out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise GeroError(f"cannot tell the format from {out.name!r}; give --format "
                        f"{'|'.join(FORMATS)}")
    flt = parse_filter(where)  # checked before the data root is touched
    refuse_inside_root(out, _root(data_dir))
    view = _open_reader(_root(data_dir), run)
    if problems is not None:
        problems += view.problems
    return Exported(view.run_id, export_rows(view, flt, fmt, out))


def compact(data_dir: PathLike | None = None, dry_run: bool = False) -> Compaction:
    """What ``gero compact`` does: merge finished runs' observation files into the store."""
    from gero_runner.storage.compact import compact as merge
    from gero_runner.storage.store import DataRoot

    root = DataRoot(_root(data_dir))
    if not root.runs_dir.is_dir():
        raise GeroError(f"no data root at {root.path} (no runs/ folder)")
    try:
        return merge(root, dry_run=dry_run)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise GeroError(f"the disk is full ({e.filename or root.path}): the compaction was "
                        "abandoned and the store and every run are as they were; free some "
                        "space and run `gero compact` again") from None


def gc(data_dir: PathLike | None = None, keep_runs: int | None = None,
       older_than: float | None = None, apply: bool = False) -> GcPlan:
    """What ``gero gc`` does: what the retention rule (the newest ``keep_runs`` runs, or
    those younger than ``older_than`` days; neither: every run) leaves unreferenced, removed
    when ``apply``; ``GcPlan.blockers`` says why nothing may be removed now."""
    from gero_runner.storage import gc as collect
    from gero_runner.storage.store import DataRoot

    root = DataRoot(_root(data_dir))
    if not root.path.is_dir():
        raise GeroError(f"no data root at {root.path}")
    retention = collect.Retention(keep_runs=keep_runs, older_than_days=older_than)
    return collect.apply(root, retention) if apply else collect.plan(root, retention)


def parity(module: str, inputs: Sequence[str] = (), *, checkpoint: PathLike | None = None,
           onnx: PathLike | None = None, output_kinds: Sequence[str] = (),
           rtol: float = 1e-3, atol: float = 1e-4, coord_tol: float = 1e-2,
           conf_tol: float = 1e-2, max_pairs: int = 1, opset: int = 17, seed: int = 0,
           threads: int = 1, repeats: int = 3, timeout: float = DEFAULT_TIMEOUT_S,
           run_id: str | None = None, data_dir: PathLike | None = None,
           command_line: str = "", search_path: PathLike | None = None,
           warn: Callable[[str], None] | None = None) -> ParityResult:
    """What ``gero parity`` does: a PyTorch module (``PKG.MODULE:FACTORY``) against its
    ONNX export (or ``onnx``) under ONNX Runtime on seeded inputs (``inputs``: the CLI's
    ``NAME=SHAPE[:DTYPE]`` items, in argument order); every option is the flag of that
    name. ``search_path`` goes first on sys.path to import the module."""
    from gero_runner.metrics.parity import ParityTolerances, parse_output_kinds
    from gero_runner.parity.module import parse_inputs
    from gero_runner.parity.run import ParityRequest, run_parity
    from gero_runner.parity.torch_support import require_torch

    require_torch()  # first, so a missing extra is the first thing said
    if checkpoint is not None and not Path(checkpoint).is_file():
        raise GeroError(f"--checkpoint {checkpoint}: no such file")
    request = ParityRequest(
        module=module, inputs=parse_inputs(list(inputs)), data_root=_root(data_dir),
        checkpoint=None if checkpoint is None else Path(checkpoint),
        onnx=None if onnx is None else Path(onnx),
        output_kinds=parse_output_kinds(list(output_kinds)),
        tolerances=ParityTolerances(rtol=rtol, atol=atol, coord_tol=coord_tol,
                                    conf_tol=conf_tol),
        samples=max_pairs, seed=seed, threads=threads, repeats=repeats, opset=opset,
        run_id=run_id, command_line=command_line,
        search_path=None if search_path is None else Path(search_path), timeout_s=timeout)
    return run_parity(request, warn)


def replay_command(observation_id: str, artifact_path: str,
                   data_dir: PathLike | None = None) -> str:
    """The ``gero replay`` command that re-runs one observation from its evidence directory
    (``artifact_path``, relative to the data root) and says whether it reproduced: the one
    spelling the findings, the report and the explorer print. :data:`NO_EVIDENCE` for an
    observation that kept no tensors (a timeout, a failure before any was written)."""
    if not artifact_path:
        return NO_EVIDENCE
    # absolute: the command works from any folder (a report opened elsewhere)
    return shlex.join(["gero", "replay", str(_root(data_dir).absolute() / artifact_path),
                       "--observation", observation_id])


def refuse_inside_root(output: PathLike, data_dir: PathLike | None = None,
                       flag: str = "-o") -> None:
    """Refuse an output path that is the data root or lies inside it (only gero's store
    writes there), links resolved: what every command that writes a file checks first;
    ``flag`` names the path in the sentence (the explorer's "the path")."""
    from gero_runner.storage.outputs import refuse_inside_root as refuse

    refuse(output, _root(data_dir), flag)


def write_output(path: PathLike, data: bytes | str, flag: str = "-o") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: a failure is one
    sentence saying the file there is as it was."""
    from gero_runner.storage.outputs import write_output as write

    return write(path, data, flag)


def _root(data_dir: PathLike | None) -> Path:
    return Path(data_dir) if data_dir is not None else default_data_dir()


# The data root's runs ----------------------------------------------------------------
def run_ids(data_dir: PathLike | None = None) -> list[str]:
    """The ids of the data root's runs, oldest first (by the time each started)."""
    from gero_runner.storage.layout import run_ids as stored

    return stored(_root(data_dir))


def find_run(run: str | None = None, data_dir: PathLike | None = None,
             runs: list[str] | None = None) -> str:
    """The full id of the newest run, or of the one run whose id starts with ``run`` (like
    git), among ``runs`` when the caller listed them (:func:`run_ids`); a
    :class:`GeroError` saying how to make one when the root has none, or which ids a prefix
    matches."""
    return _resolve_run(_root(data_dir), run, runs)


def list_runs(data_dir: PathLike | None = None) -> list[RunInfo]:
    """Every run of the data root as a listing shows it (the explorer's run picker), newest
    first; an unreadable record is a :class:`RunInfo` whose ``problem`` says why."""
    return _list_runs(_root(data_dir))


def run_info(run_id: str, data_dir: PathLike | None = None) -> RunInfo:
    """One run as a listing shows it (status, suite, versions, counts); never raises: an
    unreadable record comes back with ``problem`` set."""
    return read_info(_root(data_dir), run_id)


def open_run(run: str | None = None, data_dir: PathLike | None = None) -> Run:
    """A stored run: the newest in the data root, or the one whose id starts with ``run``."""
    root = _root(data_dir)
    return Run(root, find_run(run, root))


class Run:
    """A run stored in a data root: its record, observations, findings and replay commands.

    Opened lazily: the DuckDB view over the run's Parquet files is made on the first query
    and released by :meth:`close` (or the ``with`` block).
    """

    def __init__(self, data_dir: PathLike, run_id: str, warnings: Sequence[str] = ()) -> None:
        self.data_dir = Path(data_dir)
        """The data root the run is stored in."""
        self.id = run_id
        """The full run id."""
        self.warnings: list[str] = list(warnings)
        """Files that could not be read and other problems met while running or reading."""
        self._reader: OpenRun | None = None

    def __repr__(self) -> str:
        return f"Run({self.id!r}, data_dir={str(self.data_dir)!r})"

    # Reading ----------------------------------------------------------------------------
    @property
    def reader(self) -> OpenRun:
        """The run opened for DuckDB queries: an ``obs`` view (see ``storage.reader``)."""
        if self._reader is None:
            self._reader = _open_reader(self.data_dir, self.id)
            self.warnings += [p for p in self._reader.problems if p not in self.warnings]
        return self._reader

    @property
    def record(self) -> dict[str, Any]:
        """The run's ``run.json``: versions, settings, status, counts, timings."""
        from gero_runner.storage.runs import read_record

        return read_record(self.data_dir, self.id)

    @property
    def status(self) -> str:
        """``complete`` or ``interrupted`` (Ctrl-C kept the finished cases)."""
        return str(self.record.get("status", "?"))

    @property
    def counts(self) -> dict[str, int]:
        """Observations per result class: passed, divergence, contract_issue, execution."""
        counts = self.record.get("counts") or {}
        return {c: int(counts.get(c, 0)) for c in RESULT_CLASSES}

    @property
    def non_passed(self) -> int:
        """Observations that are not ``passed`` (each belongs to exactly one finding)."""
        return sum(n for c, n in self.counts.items() if c != PASSED)

    @property
    def passed(self) -> bool:
        """Whether every observation of a complete run passed: nothing to triage."""
        return self.non_passed == 0 and self.status == "complete"

    def observations(self, where: str | None = None) -> pa.Table:
        """The run's observations as an Arrow table (the schema of ``gero_runner.schema``).

        ``where`` is the filter ``gero export --where`` takes, e.g.
        ``"result <> 'passed' AND op_type = 'Softmax'"``.
        """
        from gero.query.export import select_rows

        return select_rows(self.reader, where)

    def relation(self, where: str | None = None) -> duckdb.DuckDBPyRelation:
        """The observations as a lazy DuckDB relation (filter, aggregate, then fetch).

        It reads through this run's connection: use it before :meth:`close`.
        """
        from gero.query.filters import parse_filter

        flt = parse_filter(where)
        return self.reader.connection.sql(f"SELECT * FROM obs WHERE {flt.sql}",
                                          params=list(flt.params) or None)

    def findings(self) -> list[Finding]:
        """The causes behind the run's non-passed observations, worst first (each
        non-passed observation belongs to exactly one; the same cause has the same
        ``finding_id`` in every run)."""
        from gero.query.findings import compute_findings

        return compute_findings(self.reader)

    def findings_report(self, baseline: str | Run | None = None) -> FindingsReport:
        """The findings marked ``new`` or ``still`` against ``baseline`` (default: the
        previous run of the same suite), with the baseline's findings that are ``gone``:
        what ``gero findings`` prints."""
        from gero.query.finding_status import findings_report

        base = baseline.id if isinstance(baseline, Run) else baseline
        problems: list[str] = []
        report = findings_report(self.data_dir, self.id, base, problems)
        self.warnings += [p for p in problems if p not in self.warnings]
        return report

    def summary(self) -> dict[str, Any]:
        """What ``gero summary --format json`` prints: counts per class and per operation."""
        from gero.query.summary import summary_dict

        return summary_dict(self.reader)

    def verdicts(self, model: str | None = None) -> list[Verdict]:
        """What ``gero verdict`` prints: for each model case, runtime setting and file
        (fp32 and each variant built) whether it is ``safe``, ``off`` (the figure, the gate
        and the arbiter), ``cannot-run`` (why) or ``not-run`` (the plan left the setting
        out on that file); ``model`` (a name or a file) keeps one model's. Empty for a run
        that tested no model."""
        return verdicts_of(self.reader, model)

    def diff(self, baseline: str | Run, factor: float | None = None) -> DiffReport:
        """Regressions and fixes against ``baseline`` (a run or an id prefix), like
        ``gero diff BASELINE THIS``."""
        from gero.query.diff import DEFAULT_FACTOR, diff_runs

        base = baseline.id if isinstance(baseline, Run) else baseline
        return diff_runs(self.data_dir, base, self.id,
                         DEFAULT_FACTOR if factor is None else factor)

    def report(self, path: PathLike, baseline: str | Run | None = None) -> Path:
        """Write the run's report, one self-contained HTML page a browser opens offline (what
        ``gero report -o FILE.html`` writes), and return its path; each finding's
        evidence (graph, inputs, manifest) goes to the folder ``FILE-evidence`` beside it.
        ``baseline`` is the run the findings are marked new, still or gone against (default:
        the previous run of the same suite)."""
        from importlib import metadata

        from gero.html_report import render
        from gero.query.evidence_files import plan_evidence, with_downloads
        from gero.query.report import gather

        refuse_inside_root(path, self.data_dir)
        findings = self.findings_report(baseline)

        def commands(f: Finding) -> tuple[str, str]:
            rep = f.representative
            return (self.replay_command(rep.observation_id, rep.artifact_path),
                    self.bundle_command(rep.observation_id, f"finding-{f.finding_id}.tar.gz"))

        data = gather(self.reader, findings, commands, problems=self.warnings)
        # the representatives' graph, inputs and manifest, in a folder beside the page
        evidence = plan_evidence(self.data_dir, findings.findings, Path(path))
        data = with_downloads(data, evidence.downloads, evidence.folder.name)
        try:
            version = metadata.version("gero")
        except metadata.PackageNotFoundError:
            version = "?"
        text = render(replace(data, generated_with={"gero": version}))
        written = write_output(path, text)
        evidence.write()  # after the page: a page that cannot be written leaves no folder
        return written

    # Evidence ---------------------------------------------------------------------------
    def artifact_paths(self, observation_ids: Iterable[str]) -> dict[str, str]:
        """Evidence directory (relative to the data root) of each observation id."""
        ids = list(dict.fromkeys(observation_ids))
        if not ids:
            return {}
        rows = self.reader.query(
            "SELECT observation_id, artifact_path FROM obs "
            "WHERE observation_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
        return {str(oid): str(path) for oid, path in rows if path}

    def replay_command(self, observation_id: str, artifact_path: str | None = None) -> str:
        """The command that re-runs one observation from its evidence and says whether it
        reproduced."""
        if artifact_path is None:
            artifact_path = self.artifact_paths([observation_id]).get(observation_id)
            if artifact_path is None:
                raise GeroError(f"observation {observation_id!r} is not in run {self.id}")
        return replay_command(observation_id, artifact_path, self.data_dir)

    def bundle_command(self, observation_id: str, output: str | None = None) -> str:
        """The command that packs one observation's evidence into a .tar.gz to share."""
        return shlex.join(["gero", "bundle", observation_id[:16], "--data-dir",
                           str(self.data_dir.absolute()), "-o",
                           output or f"{observation_id[:12]}.tar.gz"])

    # Lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release the DuckDB connection (reopened on the next query)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
