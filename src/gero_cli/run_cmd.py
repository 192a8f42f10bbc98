"""``gero run``: execute a suite into the data root (through ``gero.run``).

Exit status 1 when the run has non-passed observations (findings), 0 when it has none."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

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
    split_list,
    warn,
)
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_runner.request import DEFAULT_PATH_BUDGET_S, DEFAULT_TIMEOUT_S, EXECUTORS, suite_names
from gero_runner.result_classes import RESULT_CLASSES, RESULT_LABELS
from gero_runner.tolerances import FLOAT_DTYPES, parse_items

if TYPE_CHECKING:
    from gero_runner.execution.plan import Activity


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run", help="run a suite of seeded cases into the data root",
        description="Run seeded ONNX cases through every path (ONNX Runtime at each "
        "optimisation level, the onnx ReferenceEvaluator, a float64 formula or shadow), "
        "check the numerical contracts, classify each evaluation (passed, divergence, "
        "contract_issue, execution) and write the observations and their evidence under "
        "DATA_DIR/runs/RUN_ID. Look at the result with `gero` (the explorer) or "
        "`gero summary`.")
    p.add_argument("--suite", default="synthetic", choices=suite_names(),
                   help="which cases: synthetic (gero's operator suite, the default), "
                   "onnx-backend (onnx's node tests), models (onnx's light models), all")
    p.add_argument("--model", action="append", default=[], metavar="PATH",
                   help="an ONNX model to test (repeatable)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a dynamic dimension of --model inputs, by dim_param or "
                   "INPUT[AXIS] (repeatable)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE",
                   help="whole shape of a --model input, e.g. x=1,3,48,192; 'sr=' feeds a "
                   "scalar (repeatable)")
    p.add_argument("--input-range", action="append", default=[], metavar="NAME=LO,HI",
                   help="draw a --model input uniformly in [LO, HI] (repeatable)")
    p.add_argument("--input-value", action="append", default=[], metavar="NAME=V",
                   help="fill a --model input with the constant V (repeatable)")
    p.add_argument("--inputs", default=None, metavar="FILE.npz",
                   help="real arrays for --model inputs, by input name")
    p.add_argument("--task", default=None, help="model task, e.g. classifier (decision metric)")
    p.add_argument("--variants", default="", help="model variants: int8-dynamic,int8-static,fp16")
    p.add_argument("--calibration", default=None, metavar="FILE.npz",
                   help="calibration arrays for the int8-static variant, by input name: each "
                        "the input's shape (one sample) or with a leading sample axis "
                        "(default: the --inputs arrays; without either the variant is "
                        "calibrated on seeded noise and its verdict says so)")
    p.add_argument("--decision-axis", action="append", default=[], metavar="NAME=AXIS",
                   help="class axis of a --model output for its cosine and decisions, e.g. "
                        "output0=1 for a detector's [N, C, anchors] (default: the last axis; "
                        "repeatable)")
    p.add_argument("--output-kind", action="append", default=[], metavar="NAME=KIND",
                   help="kind of a model output: dense|confidence|rotation|translation|keypoints")
    p.add_argument("--ops", default="", help="comma-separated operators or entry names")
    p.add_argument("--dtypes", default="", help=f"comma-separated, from {','.join(FLOAT_DTYPES)}")
    p.add_argument("--backends", default="", metavar="A,B",
                   help="runtimes under test, from onnxruntime,openvino,tract (default: the "
                        "installed ones); the onnx ReferenceEvaluator always runs")
    add_data_dir(p)
    p.add_argument("--run-id", default=None,
                   help="id of the new run (default: date, time and a random suffix)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="parallel worker processes at most (default: CPU count); one is "
                        "started only for a case or path that waits, so a small run starts "
                        "fewer")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="where cases run: local (--jobs worker processes here, the default) "
                   "or dask (a Dask distributed cluster; pip install 'gero[dask]')")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="the Dask scheduler of --executor dask (default: "
                   "$GERO_DASK_SCHEDULER)")
    p.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per path")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the input generators (default: 0; recorded per observation)")
    p.add_argument("--rtol", action="append", default=[], metavar="DTYPE=V",
                   help="relative tolerance for a dtype, e.g. float16=1e-2 (repeatable; "
                   "defaults: float16 5e-3, float32 1e-5, float64 1e-12)")
    p.add_argument("--atol", action="append", default=[], metavar="DTYPE=V",
                   help="absolute tolerance for a dtype, e.g. float16=1e-3 (repeatable; "
                   "defaults: float16 5e-4, float32 1e-6, float64 1e-13)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="seconds per operator case, and for judging a --model case once its "
                        "paths ran (default %(default)g)")
    p.add_argument("--path-budget", type=float, default=DEFAULT_PATH_BUDGET_S,
                   metavar="SECONDS",
                   help="seconds each path of a --model case may take (default %(default)g): "
                        "each runtime setting, the ReferenceEvaluator, the float64 shadow, "
                        "each variant's build and each variant on each path, the contract "
                        "graphs, the noise-floor runs; a path that runs out is one execution "
                        "row naming it, and the case's other rows are kept")
    p.add_argument("--skip-path", action="append", default=[], metavar="RUNTIME:SETTING",
                   help="a runtime setting not to run, e.g. tract:unoptimized (repeatable or "
                        "comma-separated; the runtime's other settings still run)")
    p.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    p.add_argument("--max-tensor-mb", type=float, default=1024.0, metavar="MB",
                   help="largest tensor a case may make (MiB, default 1024): a model whose "
                        "inputs, intermediates or outputs would be larger is refused before "
                        "running, an output that comes out larger is not compared; either is "
                        "an execution observation")
    p.add_argument("--max-evidence-mb", type=float, default=64.0, metavar="MB",
                   help="tensors one case keeps on disk (MiB, default 64); past it a tensor is "
                        "kept as a summary (shape, dtype, hash, statistics, worst elements) "
                        "and the rows say so; the inputs are always kept")
    p.add_argument("--resume", default=None, metavar="RUN_ID",
                   help="finish an interrupted run (its own settings; finished cases are kept)")
    p.add_argument("--no-contracts", action="store_true", help="skip contracts and variants")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import gero
    from gero_runner.run import DiskFull  # deferred: the runner loads NumPy and pyarrow

    if args.resume is not None and args.run_id is not None:
        raise GeroError("give --resume RUN_ID or --run-id, not both")
    # The library checks every value (a GeroError names the bad one), for the CLI and for
    # a script alike.
    stop = _Terminated()
    try:
        with stop, _progress(args) as progress:
            run = gero.run(
                suite=args.suite, models=args.model, ops=split_list(args.ops),
                dtypes=split_list(args.dtypes), data_dir=data_dir(args), run_id=args.run_id,
                jobs=args.jobs, threads=args.threads, repeats=args.repeats, seed=args.seed,
                # Only those given: `--resume` refuses any option it would ignore.
                rtol=parse_items("rtol", args.rtol) if args.rtol else None,
                atol=parse_items("atol", args.atol) if args.atol else None,
                dims=args.dim, input_shapes=args.input, input_ranges=args.input_range,
                input_values=args.input_value, inputs_file=args.inputs, task=args.task,
                variants=split_list(args.variants), backends=split_list(args.backends) or None,
                output_kinds=args.output_kind, calibration_file=args.calibration,
                decision_axes=args.decision_axis, timeout=args.timeout, limit=args.limit,
                contracts=not args.no_contracts, resume=args.resume,
                executor=args.executor, scheduler=args.scheduler,
                max_tensor_mb=args.max_tensor_mb, max_evidence_mb=args.max_evidence_mb,
                path_budget=args.path_budget,
                skip_paths=[s for item in args.skip_path for s in split_list(item)],
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
        # rich reads a task's description as markup: what a path's label says stays text.
        text = markup_escape(for_terminal(f"paths ({left} left)"
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
