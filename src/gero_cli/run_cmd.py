"""``gero run``: execute a suite into the data root (through ``gero.run``).

Exit status 1 when the run has non-passed observations (findings), 0 when it has none."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from gero_cli.args.budgets import BUDGETS
from gero_cli.args.cases import CASES, CHECKS, SELECTION
from gero_cli.args.executor import EXECUTOR, REPEATS, RUN_ID
from gero_cli.args.inputs import INPUTS
from gero_cli.args.model import MODEL
from gero_cli.args.tolerances import TOLERANCES
from gero_cli.common import (
    EXIT_CLEAN,
    EXIT_FOUND,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    add_data_dir,
    color_allowed,
    data_dir,
    echo,
    quiet,
    warn,
)
from gero_runner.escape import for_terminal
from gero_runner.result_classes import RESULT_CLASSES, RESULT_LABELS

if TYPE_CHECKING:
    from gero_runner.execution.plan import Activity

# `gero run`'s argument groups, in the order its help lists them.
_BEFORE_DATA_DIR = (CASES, INPUTS, MODEL, SELECTION)
_AFTER_DATA_DIR = (RUN_ID, EXECUTOR, REPEATS, TOLERANCES, BUDGETS)
GROUPS = (*_BEFORE_DATA_DIR, *_AFTER_DATA_DIR, CHECKS)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run", help="run a suite of seeded cases into the data root",
        description="Run seeded ONNX cases through every path (ONNX Runtime at each "
        "optimisation level, the onnx ReferenceEvaluator, a float64 formula or shadow), "
        "check the numerical contracts, classify each evaluation (passed, divergence, "
        "contract_issue, execution) and write the observations and their evidence under "
        "DATA_DIR/runs/RUN_ID. Look at the result with `gero` (the explorer) or "
        "`gero summary`.")
    for group in _BEFORE_DATA_DIR:
        group.add_to(p)
    add_data_dir(p)
    for group in _AFTER_DATA_DIR:
        group.add_to(p)
    p.add_argument("--resume", default=None, metavar="RUN_ID",
                   help="finish an interrupted run (its own settings; finished cases are kept)")
    CHECKS.add_to(p)
    p.add_argument("--env", action="append", default=[], metavar="RUNTIME==VERSION=PYTHON",
                   help="the interpreter a release named in --backends runs in, for this run "
                   "(an interpreter that has it; else its environment from `gero env add`)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import gero
    from gero_runner.run import DiskFull  # deferred: the runner loads NumPy and pyarrow

    # The library checks every value (a GeroError names the bad one), for the CLI and for
    # a script alike; only the options typed are passed (`--resume` refuses those).
    options = {k: v for group in GROUPS for k, v in group.read(args).items()}
    if args.env:  # this process's workers and the releases' workers inherit it
        from gero_runner.backends.release_env import use_pythons

        use_pythons(args.env)
    stop = _Terminated()
    try:
        # A runtime's overflow is evidence its row records (NaN and inf counts); NumPy's
        # RuntimeWarnings about it on stderr are noise, even more so under -q.
        with stop, _progress(args) as progress, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run = gero.run(
                **options, data_dir=data_dir(args), resume=args.resume,
                command_line=shlex.join(["gero", *sys.argv[1:]]),
                progress=progress.cases if progress else None,
                activity=progress.paths if progress else None,
                warn=lambda message: warn(args, message))
    except DiskFull as e:
        # Not a usage error: the run kept what it saved and says how to resume it.
        echo(f"gero: error: {e}", file=sys.stderr)
        return DiskFull.exit_code
    record = run.record
    if run.status == "interrupted":
        what = "terminated" if stop.received else "interrupted"
        echo(f"gero: {what}; run {run.id} keeps its {record['case_count']} finished "
             f"cases ({record['observation_count']} observations) in {run.data_dir}: "
             f"gero summary --run {run.id}; finish it with gero run --resume {run.id}",
             file=sys.stderr)
        return EXIT_TERMINATED if stop.received else EXIT_INTERRUPTED
    echo(f"run {run.id}: {_count(record['case_count'], 'case')}, "
         f"{_count(record['observation_count'], 'observation')} "
         f"({record['new_observation_count']} new) in {record['wall_seconds']:.1f} s "
         f"into {run.data_dir}")
    for result in RESULT_CLASSES:
        echo(f"  {RESULT_LABELS[result]:<24} {run.counts[result]:>7}")
    if run.non_passed:
        echo(f"{_count(run.non_passed, 'observation')} not passed: gero findings --run "
             f"{run.id} groups them by cause")
    return EXIT_FOUND if run.non_passed else EXIT_CLEAN


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Terminated:
    """SIGTERM stops a run the way Ctrl-C does: what finished is saved, then it exits."""

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.received = True
        raise KeyboardInterrupt

    def __enter__(self) -> _Terminated:
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGTERM, self._previous)


class _Bars:
    """The run's progress: cases done, and for model cases the paths running (each with
    the time it has had of its budget) and how many remain."""

    def __init__(self, bar: Any, plain: bool) -> None:
        self.bar, self.plain = bar, plain
        self.case_task = bar.add_task("cases", total=None)
        self.path_task: Any = None

    def cases(self, done: int, total: int) -> None:
        self.bar.update(self.case_task, completed=done, total=total)

    def paths(self, activity: Activity) -> None:
        from rich.markup import escape as markup_escape  # loaded with the bar already

        if not activity.parts_planned:
            return  # no model case: the case bar says it all
        running = "; ".join(f"{r.label} {r.elapsed_s:.0f}/{r.budget_s:g} s"
                            for r in activity.running)
        left = activity.parts_planned - activity.parts_done
        # The newest first verdict (the deployed ONNX Runtime setting against float64) as
        # soon as it exists, before the case is judged.
        first = f"; {activity.early[-1]}" if activity.early else ""
        # rich reads a task's description as markup: what a path's label says stays text.
        text = markup_escape(for_terminal(f"paths ({left} left{first})"
                                          + (f": {running}" if running else "")))
        if self.path_task is None:
            self.path_task = self.bar.add_task(text, total=activity.parts_planned)
        self.bar.update(self.path_task, completed=activity.parts_done,
                        total=activity.parts_planned, description=text)


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[_Bars | None]:
    """A progress bar when a person watches the terminal (not with -q), colourless under
    NO_COLOR; a second line for model cases names the paths running."""
    if quiet(args) or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    plain = not color_allowed(sys.stderr)
    console = Console(stderr=True, no_color=plain)
    label = TextColumn("gero run" if plain else "[bold]gero run[/]")
    with Progress(label, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), TextColumn("{task.description}"), transient=True,
                  console=console) as bar:
        yield _Bars(bar, plain)
