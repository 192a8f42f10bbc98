"""``gero run``: execute a suite into the data root."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Callable
from typing import Any

from gero_runner.errors import GeroError
from gero_runner.run import DiskFull, ModelOptions, RunRequest, execute, suite_names
from gero_runner.schema import FLOAT_DTYPES, RESULT_CLASSES, RESULT_LABELS, RunRecord
from gero_runner.tolerances import parse_overrides
from gero_tui.cli.common import add_data_dir, data_dir, split_list


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
                   help="parallel worker processes (default: CPU count)")
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
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    p.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    p.add_argument("--resume", default=None, metavar="RUN_ID",
                   help="finish an interrupted run (its own settings; finished cases are kept)")
    p.add_argument("--no-contracts", action="store_true", help="skip contracts and variants")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    # The request checks every value (a GeroError names the bad one), for the CLI and for
    # a script alike.
    request = RunRequest(
        suite=args.suite, data_root=data_dir(args), ops=split_list(args.ops),
        dtypes=split_list(args.dtypes), models=list(args.model),
        model_options=ModelOptions(dims=tuple(args.dim), task=args.task,
                                   variants=tuple(split_list(args.variants)),
                                   output_kinds=tuple(args.output_kind),
                                   input_shapes=tuple(args.input),
                                   input_ranges=tuple(args.input_range),
                                   input_values=tuple(args.input_value),
                                   inputs_file=args.inputs),
        run_id=args.run_id, jobs=args.jobs, threads=args.threads, repeats=args.repeats,
        seed=args.seed, tolerances=parse_overrides(args.rtol, args.atol),
        timeout_s=args.timeout, checks=() if args.no_contracts else ("contracts", "variants"),
        backends=tuple(split_list(args.backends)) or None,
        command_line=shlex.join(["gero", *sys.argv[1:]]), limit=args.limit,
    )
    if args.resume is not None and args.run_id is not None:
        raise GeroError("give --resume RUN_ID or --run-id, not both")
    warn = lambda message: print(f"gero: warning: {message}", file=sys.stderr)  # noqa: E731
    stop = _Terminated()
    try:
        with stop:
            record = _execute(request, warn, args.resume)
    except DiskFull as e:
        print(f"gero: error: {e}", file=sys.stderr)
        return DiskFull.exit_code
    if record.status == "interrupted":
        what = "terminated" if stop.received else "interrupted"
        print(f"gero: {what}; run {record.run_id} keeps its {record.case_count} finished "
              f"cases ({record.observation_count} observations) in {request.data_root}: "
              f"gero summary --run {record.run_id}; finish it with "
              f"gero run --resume {record.run_id}", file=sys.stderr)
        return 143 if stop.received else 130
    print(f"run {record.run_id}: {_count(record.case_count, 'case')}, "
          f"{_count(record.observation_count, 'observation')} "
          f"({record.new_observation_count} new) in {record.wall_seconds:.1f} s "
          f"into {request.data_root}")
    for result in RESULT_CLASSES:
        print(f"  {RESULT_LABELS[result]:<24} {record.counts[result]:>7}")
    return 0


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


def _execute(request: RunRequest, warn: Callable[[str], None], resume: str | None) -> RunRecord:
    """The run, with a progress bar when a person watches the terminal."""
    if sys.stderr.isatty():
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with Progress(TextColumn("[bold]gero run[/]"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TimeRemainingColumn(), transient=True) as bar:
            task = bar.add_task("cases", total=None)
            return execute(request, lambda done, total: bar.update(
                task, completed=done, total=total), warn, resume)
    return execute(request, warn=warn, resume=resume)
