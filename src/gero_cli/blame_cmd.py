"""``gero blame``: which ONNX Runtime optimisation level, and which graph rewrite, changed an
observation's output."""

from __future__ import annotations

import argparse
import json

from gero_cli.common import EXIT_CLEAN, add_data_dir, add_format, data_dir, echo, warn


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "blame", help="which ORT level and graph rewrite changed an observation's output",
        description="Run the observation's graph and inputs at every ONNX Runtime "
        "optimisation level, saving each optimised graph; name the first level whose output "
        "differs from the level before it, diff the two graphs' nodes (ORT names fused nodes "
        "after their transformer), confirm by running each optimised graph with every "
        "optimisation disabled, and by disabled_optimizers where ORT honours it. The result "
        "is stored with the evidence (blame/OBSERVATION_ID.json) and shown in the explorer.")
    p.add_argument("observation", metavar="OBSERVATION_ID", help="observation id or prefix")
    add_data_dir(p)
    add_format(p, "text", "json", what="blame")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from gero.api import blame as blame_of  # deferred: blame imports ONNX Runtime (~0.3 s)

    problems: list[str] = []
    try:
        blamed = blame_of(args.observation, data_dir(args), problems)
    finally:
        for problem in problems:
            warn(args, problem)
    row, blame, stored = blamed.observation, blamed.blame, blamed.stored
    if args.format == "json":
        print(json.dumps({**blame.as_dict(), "stored": str(stored)}, indent=2, default=float))
        return EXIT_CLEAN
    echo(f"{row['case_id']} {row['check']} {row['backend']} {row['optimization']}: "
         f"{row['result']} (graph {blame.graph}, {blame.backend} {blame.onnxruntime_version})")
    base = blame.levels[0].level if blame.levels else ""  # the unoptimised level
    who = backends_title(blame.backend)
    if blame.user_nodes:
        echo(f"  your graph: {blame.user_nodes} node(s) ({_ops(blame.user_ops)}); each level "
             f"counts the nodes of {who}'s optimised graph:")
    for o in blame.levels:
        state = (f"failed: {o.error}" if o.error else "bit-exact" if o.bit_exact_vs_disable_all
                 else f"max |Δ| = {o.max_abs_vs_disable_all:.3g}")
        changed = ""
        if blame.user_nodes and not o.error and (o.added or o.removed):
            said = ([f"adds {_ops(o.added)}"] if o.added else []) + (
                [f"takes away {_ops(o.removed)}"] if o.removed else [])
            changed = f" ({blame.user_nodes} of yours; it {', '.join(said)})"
        echo(f"  {o.level:<12} {o.node_count:>4} nodes{changed}  vs {base}: {state}")
    precisions = list(dict.fromkeys(o.precision for o in blame.levels if o.precision))
    for sentence in precisions:
        at = [o.level for o in blame.levels if o.precision == sentence]
        echo(f"  at {', '.join(at)}: {sentence}")
    if blame.first_level is not None:
        from gero_runner import backends

        runtime = backends.find(blame.backend)  # how it turns a rewrite off, by name
        option = runtime.disable_option if runtime and runtime.disable_option else "turned off"
        echo(f"first level that changes the output: {blame.first_level} "
             f"(against {blame.previous_level})")
        if blame.removed or blame.added:
            echo(f"  nodes removed: {_ops(blame.removed)}; added: {_ops(blame.added)}")
        for r in blame.rewrites:
            echo(f"  rewrite {r.transformer}: {', '.join(r.nodes)}")
            echo(f"    {option}: {r.disabled}: {r.note}")
        if not blame.rewrites:
            echo("  no node names a transformer: the rewrite cannot be named or confirmed by "
                 "disabling it")
        if blame.cause:  # only a rewrite whose disabling restores the output is the cause
            echo(f"  {blame.cause}")
        echo(f"  {blame.running_note}")
    echo(blame.summary)
    echo(f"stored: {stored}")
    return EXIT_CLEAN


def backends_title(name: str) -> str:
    from gero_runner import backends

    runtime = backends.find(name)
    return runtime.label() if runtime is not None else name or "the runtime"


def _ops(counts: dict[str, int]) -> str:
    return ", ".join(f"{op}×{n}" if n > 1 else op for op, n in sorted(counts.items())) or "—"
