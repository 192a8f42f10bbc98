"""``gero parity``: a PyTorch module against its ONNX export under ONNX Runtime.

Needs the optional extra (``pip install 'gero[torch]'``); without it the command says so.
Exit status: 0 when every comparison is within tolerance, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gero_cli.args.executor import RUN_ID
from gero_cli.common import EXIT_CLEAN, EXIT_FOUND, add_data_dir, data_dir, echo, warn


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "parity", help="check a PyTorch module against its ONNX export under ONNX Runtime",
        description="Build the module (eval mode), export it to ONNX unless --onnx is given, "
        "feed identical seeded inputs to PyTorch (no_grad) and to ONNX Runtime at every "
        "optimisation level, and store per-output, task-aware parity observations "
        "(suite 'parity'). Needs: pip install 'gero[torch]'. Exit 0 when every comparison "
        "is within tolerance, 1 otherwise.")
    p.add_argument("--module", required=True, metavar="PKG.MODULE:FACTORY",
                   help="callable returning a torch.nn.Module (the current directory is on "
                        "sys.path, as with python -m)")
    p.add_argument("--checkpoint", type=Path, default=None, metavar="PATH",
                   help="state dict to load (weights only)")
    p.add_argument("--onnx", type=Path, default=None, metavar="PATH",
                   help="compare against this ONNX file instead of exporting the module")
    p.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE[:DTYPE]",
                   help="a module argument, in order, e.g. x=2x3x32x32 or ids=1x16:int64 "
                        "(repeatable; dtypes float32 float16 float64 int64 int32 bool)")
    p.add_argument("--output-kind", action="append", default=[], metavar="NAME=KIND",
                   help="kind of an output: dense|confidence|rotation|translation|keypoints|"
                        "logits (default dense; repeatable)")
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default 1e-4)")
    p.add_argument("--coord-tol", type=float, default=1e-2,
                   help="keypoint correspondence radius (default 1e-2)")
    p.add_argument("--conf-tol", type=float, default=1e-2,
                   help="max confidence deviation (default 1e-2)")
    p.add_argument("--max-pairs", type=int, default=1, metavar="N",
                   help="seeded input samples fed to both runtimes (default 1)")
    p.add_argument("--output-file", type=Path, default=None, metavar="REPORT.md",
                   help="write a Markdown summary (per output: metrics, tolerance, verdict)")
    p.add_argument("--opset", type=int, default=17, help="ONNX opset for export: 17, 18 or 19")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the input samples (default 0; recorded per observation)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for PyTorch and ONNX Runtime intra-op (default 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per path")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per sample (building the module, PyTorch, the export and "
                        "every ONNX Runtime level); a sample past it, or whose worker "
                        "crashes, is an execution observation (default 120)")
    RUN_ID.add_to(p)  # the same option as gero run's
    add_data_dir(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import parity
    from gero_runner.parity.report import VERDICTS, markdown_report
    from gero_runner.schema import RESULT_CLASSES, RESULT_LABELS
    from gero_runner.storage.outputs import refuse_inside_root, write_output

    if args.output_file is not None:  # before the run: it may take minutes
        refuse_inside_root(args.output_file, data_dir(args), "--output-file")
    result = parity(
        args.module, args.input, checkpoint=args.checkpoint, onnx=args.onnx,
        output_kinds=args.output_kind, rtol=args.rtol, atol=args.atol,
        coord_tol=args.coord_tol, conf_tol=args.conf_tol, max_pairs=args.max_pairs,
        opset=args.opset, seed=args.seed, threads=args.threads, repeats=args.repeats,
        timeout=args.timeout, run_id=args.run_id, data_dir=data_dir(args),
        command_line=shlex.join(["gero", *sys.argv[1:]]), search_path=Path.cwd(),
        warn=lambda message: warn(args, message))
    record, rows = result.record, result.rows
    echo(f"parity run {record.run_id}: {args.module}, {record.case_count} sample(s), "
         f"{len(rows)} comparisons ({record.new_observation_count} new) into "
         f"{data_dir(args)}")
    for row in rows:
        echo(f"  {row['output_name']:<16} {row['optimization']:<12} "
             f"{VERDICTS.get(row['result'], row['result']):<18} {row['reason']}")
    for result_class in RESULT_CLASSES:
        echo(f"  {RESULT_LABELS[result_class]:<24} {record.counts[result_class]:>7}")
    if args.output_file is not None:
        write_output(args.output_file, markdown_report(record, rows, args.module),
                     "--output-file")
        echo(f"report written to {args.output_file}")
    return EXIT_CLEAN if all(r["result"] == "passed" for r in rows) else EXIT_FOUND
