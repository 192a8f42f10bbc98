"""``gero bisect``: the first release of a runtime whose outputs on a model change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gero_cli.common import EXIT_CLEAN, EXIT_FOUND, echo, split_list


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bisect", help="the first release of a runtime whose outputs on a model change",
        description="Binary search over the published releases of RUNTIME between --good "
        "and --bad (pip index versions, from the index your pip uses; or --releases) for "
        "the first whose outputs on the model differ from the good release's, each release "
        "run in its environment (made with `gero env add` when missing, reused after; the "
        "installed release runs in-process); then the node of the model where that change "
        "enters (the first whose outputs differ bit for bit from bit-identical inputs). "
        "Exit status 1 when a release changes the outputs.")
    p.add_argument("--model", type=Path, required=True, metavar="PATH", help="the ONNX model")
    p.add_argument("--inputs", type=Path, required=True, metavar="FILE.npz",
                   help="its inputs, by graph input name")
    p.add_argument("--runtime", default="onnxruntime", metavar="RUNTIME",
                   help="the runtime whose releases are searched (default: onnxruntime)")
    p.add_argument("--good", required=True, metavar="VERSION",
                   help="a release whose outputs are right")
    p.add_argument("--bad", required=True, metavar="VERSION",
                   help="a later release whose outputs changed")
    p.add_argument("--releases", type=split_list, default=None, metavar="V1,V2",
                   help="the releases to search among (default: those the package index "
                   "lists); --releases GOOD,BAD compares just those two and names the node "
                   "where their outputs first differ")
    p.add_argument("--setting", default=None, metavar="SETTING",
                   help="the runtime's setting to run at (default: its first, ONNX "
                   "Runtime's disable_all)")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="relative tolerance of a change (default 0: any changed bit)")
    p.add_argument("--atol", type=float, default=0.0,
                   help="absolute tolerance of a change (default 0: any changed bit)")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                   help="write the node where the change enters, alone with its real "
                   "inputs, as a repro (model.onnx, inputs.npz, repro.py: run it with each "
                   "release's interpreter)")
    p.set_defaults(handler=main)


def _progress(line: str) -> None:
    print(f"  {line}", file=sys.stderr, flush=True)


def main(args: argparse.Namespace) -> int:
    import numpy as np

    from gero_runner.errors import GeroError
    from gero_runner.evidence.release_bisect import bisect

    if not args.model.is_file():
        raise GeroError(f"--model {args.model}: no such file")
    try:
        with np.load(args.inputs, allow_pickle=False) as data:
            feeds = {name: data[name] for name in data.files}
    except (OSError, ValueError) as e:
        raise GeroError(f"--inputs {args.inputs}: not a readable .npz ({e})") from None
    result = bisect(args.model, feeds, args.runtime, args.good, args.bad,
                    releases=args.releases, setting=args.setting, rtol=args.rtol,
                    atol=args.atol, repro=args.output, say=echo, progress=_progress)
    if not result.first:
        echo(f"{args.runtime} {args.bad} gives the outputs of {args.good}: nothing to bisect")
        return EXIT_CLEAN
    echo(f"first release that changes the outputs: {args.runtime} {result.first} "
         f"(after {result.last_good})")
    if result.entry is not None:
        echo(result.entry.sentence(f"{result.first}", f"{result.last_good}"))
    if result.repro is not None:
        echo(f"repro: {result.repro} (run repro.py with each release's interpreter)")
    return EXIT_FOUND
