"""``gero localize``: the node where an observation's error enters, and a repro of it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gero_cli.common import EXIT_CLEAN, add_data_dir, add_format, data_dir, echo, warn
from gero_runner.escape import for_shell


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "localize", help="the node where an observation's error enters, and a repro of it",
        description="Run the observation's two paths again on its inputs with intermediate "
        "tensors as outputs (a runtime setting, the ReferenceEvaluator, the float64 shadow; "
        "the model or its int8/fp16 variant), compare them tensor by tensor in topological "
        "order against each tensor's noise floor, and run each diverging node alone on the "
        "reference side's inputs on both paths: a node that makes the difference from "
        "agreeing inputs is an origin; one whose own run magnifies what it receives an "
        "amplifier, else a carrier. Where a path computes nodes together (a "
        "QuantizeLinear/DequantizeLinear pair folded into the node after it, a precision "
        "rewrite read from its optimised graph), they run as one region and the rewrite is "
        "named. A row its own gate passed is traced but names no origin. "
        "Large models are traced at checkpoints first, then the stretch where the error "
        "appears. The result is stored with the evidence (localize/OBSERVATION_ID.json) and "
        "shown in the explorer.")
    p.add_argument("observation", metavar="OBSERVATION_ID", help="observation id or prefix")
    add_data_dir(p)
    add_format(p, "text", "json", what="origins and amplifiers")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                   help="write the origin's nodes with their real input tensors as an ONNX "
                   "backend test directory (model.onnx, test_data_set_0) with gero's "
                   "manifest and observations, which `gero replay DIR` runs again")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import localize

    problems: list[str] = []
    result = localize(args.observation, data_dir=data_dir(args), output=args.output,
                      problems=problems)
    for problem in problems:
        warn(args, problem)
    if args.format == "json":
        print(json.dumps(result, indent=2, default=float))
        return EXIT_CLEAN
    echo(f"{result['case_id']} {result['check']} {result['output_name']}: "
         f"{result['actual']} against {result['reference']}")
    echo(f"  {result['compared']} tensors both paths keep, {result['traced']} traced in "
         f"{len([p for p in result['passes'] if 'tensors' in p])} pass(es), "
         f"{result['seconds']:.1f} s")
    for o in result["origins"]:
        share = "" if o["share"] is None else f", {o['share']:.0%} of the final error"
        more = (f" with the {len(o['nodes']) - 1} node(s) before it, run as one"
                if len(o["nodes"]) > 1 else "")
        echo(f"  origin     {o['node']} ({o['op_type']}){more}: inputs "
             f"{o['inputs_scaled_error']:.2g}"
             f", alone {o['local_scaled_error']:.2g}, end to end "
             f"{o['output_scaled_error']:.2g}{share}")
    for o in result["origins"]:
        if o.get("cause"):
            echo(f"  cause      {o['cause']}")
    for m in result["amplifiers"]:
        role = m.get("role") or "amplifier"
        own = ("" if m.get("propagated") is None
               else f", its own run makes {m['propagated']:.2g} of what it receives")
        echo(f"  {role:<10} {m['node']} ({m['op_type']}): inputs "
             f"{m['inputs_scaled_error']:.2g} -> {m['output_scaled_error']:.2g} (alone "
             f"{m['local_scaled_error']:.2g}{own})")
    for note in result["notes"]:
        echo(f"  note: {note}")
    echo(result["summary"])
    if result.get("repro"):
        echo(f"repro: {result['repro']} (gero replay {for_shell(result['repro'])})")
    echo(f"stored: {result['stored']}")
    return EXIT_CLEAN
