"""``gero summary``: counts per result class and per operation, as text or JSON.

Each text line goes out through ``echo`` (a model's path or an operation name may carry
control characters); JSON keeps the raw values, escaped by JSON itself."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gero_cli.common import (
    EXIT_CLEAN,
    EXIT_FOUND,
    add_data_dir,
    add_format,
    data_dir,
    echo,
    warn,
)
from gero_runner.backends import short_name
from gero_runner.result_classes import PASSED, RESULT_CLASSES, RESULT_LABELS, RESULT_WORDS


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("summary", help="summarise a run (the newest by default)",
                       description="Counts per result class and per operation, versions and "
                       "timings of a run. Exit status 1 when the run has non-passed "
                       "observations, 0 when every observation passed.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix")
    add_format(p, "text", "json", what="summary")
    p.add_argument("--all-checks", action="store_true",
                   help="list every contract and variant per operator, not only the violated")
    p.set_defaults(handler=main)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def main(args: argparse.Namespace) -> int:
    import gero
    from gero.query.assessable import TOOLING_NOTE

    with gero.open_run(args.run, data_dir(args)) as run:
        summary = run.summary()
        for problem in run.warnings:
            warn(args, problem)
    # notes on gero's own tooling an older gero recorded as failures change no exit status
    notes = sum(e["observations"] for e in summary["not_assessable"]
                if e["reason"] == TOOLING_NOTE)
    code = EXIT_FOUND if sum(n for c, n in summary["counts"].items() if c != PASSED) > notes \
        else EXIT_CLEAN
    if args.format == "json":
        print(json.dumps(summary, indent=2, default=str))
        return code
    run = summary["run"]
    echo(f"run {run['run_id']} ({run['status']}), suite {run['suite']}, "
         f"{run['case_count']} cases, {sum(summary['counts'].values())} observations")
    if run.get("models"):
        echo(f"model{'s' if len(run['models']) > 1 else ''}: {', '.join(run['models'])}")
    runtimes = ", ".join(f"{name} {version}" for name, version in run.get("backends", {}).items()
                         if name != "onnx-reference")
    echo(f"{runtimes or 'onnxruntime ' + run['onnxruntime_version']}, "
         f"onnx {run['onnx_version']}, "
         f"numpy {run['numpy_version']}, python {run['python_version']}; {run['cpu_model']}")
    for seeded in summary["seeded_inputs"]:
        echo(f"inputs of {seeded['model']}: gero's seeded defaults ({seeded['inputs']}); its "
             "verdicts rest on that noise, not on your data: give --inputs FILE.npz")
    for result in RESULT_CLASSES:
        echo(f"  {RESULT_LABELS[result]:<24} {summary['counts'][result]:>7}")
    _print_split(summary)
    echo()
    if summary["verdicts"]:  # a model run: the card answers "is it safe here?" first
        from gero.query.verdicts import Verdict
        from gero_cli.verdict_cmd import card_lines

        for line in card_lines([Verdict.from_dict(v) for v in summary["verdicts"]],
                               run["run_id"]):
            echo(line)
        echo()
    _print_plan_notes(summary)
    timed = _timed_runtimes(summary["operations"])
    several = len(timed) > 1  # one column per runtime, named; else ONNX Runtime's as before
    columns = "".join(f"{short_name(b)[:8] + ' ms':>12}" for b in timed) if several \
        else f"{'runtime ms':>12}"
    header = (f"{'operation':<28}{'passed':>8}{'diverg.':>8}{'contract':>9}{'exec.':>7}"
              f"{'pairs':>7}{columns}{'reference ms':>14}")
    echo(header)
    echo("-" * len(header))
    for op in summary["operations"]:
        by = op.get("runtime_median_ms_by_backend", {})
        cells = "".join(f"{_ms(by.get(b)):>12}" for b in timed) if several \
            else f"{_ms(op['runtime_median_ms']):>12}"
        echo(f"{op['op_type'][:27]:<28}{op['passed']:>8}{op['divergence']:>8}"
             f"{op['contract_issue']:>9}{op['execution']:>7}{op['measured_pairs']:>7}"
             f"{cells}{_ms(op['reference_median_ms']):>14}")
    if summary["checks"]:
        _print_checks(summary["checks"], args.all_checks)
    _print_runtimes(summary["runtimes"])
    echo()
    echo("median of per-case medians in ms, Python call overhead included, session "
         "construction excluded; the reference evaluator's timings are context, not a ranking.")
    return code


def _print_split(summary: dict[str, Any]) -> None:
    """The non-passed counts split: what a user acts on (a runtime's numbers, laws, failures)
    and, counted apart, what cannot be assessed by construction."""
    apart = summary["not_assessable"]
    if not apart:
        return
    act = summary["assessable_counts"]
    words = ", ".join(f"{n:,} {RESULT_WORDS[c]}" for c, n in act.items() if n)
    echo(f"  to act on: {sum(act.values()):,} non-passed{f' ({words})' if words else ''}")
    echo(f"  counted apart, cannot be assessed by construction: "
         f"{sum(e['observations'] for e in apart):,}")
    for e in apart:
        classes = ", ".join(RESULT_WORDS[c] for c in e["by_class"])
        echo(f"  {e['observations']:>9,}  {e['label']} ({classes})")


def _print_plan_notes(summary: dict[str, Any]) -> None:
    """The settings the plan did not run and the rows' notes: context, in no count."""
    from gero.query.plan_notes import setting_words

    for entry in summary["not_run"]:
        echo(f"not run (not needed): {setting_words(entry)}")
    for entry in summary["notes"]:
        rows = f" ({entry['rows']} rows)" if entry["rows"] > 1 else ""
        echo(f"note on {entry['model']}{rows}: {entry['note']}")
    if summary["not_run"] or summary["notes"]:
        echo()


def _timed_runtimes(operations: list[dict[str, Any]]) -> list[str]:
    """The runtimes with an inference time on some operation, in first-seen order."""
    seen: dict[str, None] = {}
    for op in operations:
        seen.update(dict.fromkeys(op.get("runtime_median_ms_by_backend", {})))
    return list(seen)


def _print_runtimes(runtimes: dict[str, Any]) -> None:
    """The conformance matrix per runtime and setting, what computes in a lower precision
    than declared, findings unique to one runtime, and build/run times (context)."""
    if len({r["backend"] for r in runtimes["matrix"]} - {"onnx-reference"}) < 2 and \
            not runtimes["lower_precision"]:
        return  # one runtime: the tables above say it all
    echo()
    echo("runtimes: agreement / analytic / expected comparisons per setting")
    header = (f"  {'suite':<14}{'runtime':<16}{'setting':<14}{'passed':>8}{'diverg.':>8}"
              f"{'contract':>9}{'exec.':>7}")
    echo(header)
    for r in runtimes["matrix"]:
        echo(f"  {r['suite'][:13]:<14}{r['backend'][:15]:<16}{r['optimization'][:13]:<14}"
             f"{r['passed']:>8}{r['divergence']:>8}{r['contract_issue']:>9}"
             f"{r['execution']:>7}")
    for lp in runtimes["lower_precision"]:
        echo(f"  note: {lp['backend']} {lp['optimization']} computes {lp['dtype']} tensors in "
             f"{lp['precision']} ({lp['not_passed']} of {lp['observations']} comparisons "
             "not passed)")
    if runtimes["unique_findings"]:
        echo()
        echo("findings unique to one runtime (fails on all its settings, every other "
             "runtime passes):")
        for u in runtimes["unique_findings"][:30]:
            error = "—" if u["max_abs_error"] is None else f"{u['max_abs_error']:.3g}"
            echo(f"  {u['backend']:<12}{u['op_type'][:26]:<27}{u['outputs']:>5} × "
                 f"{u['result']:<15} max |a−r| {error}")
        if len(runtimes["unique_findings"]) > 30:
            echo(f"  … {len(runtimes['unique_findings']) - 30} more (--format json)")
    echo()
    echo("session build and run per runtime setting (median over cases, ms; context):")
    for t in runtimes["timings"]:
        echo(f"  {t['backend'][:15]:<16}{t['optimization'][:13]:<14}{t['cases']:>6} cases  "
             f"build {_ms(t['build_median_ms']):>9}  run {_ms(t['run_median_ms']):>9}")


def _print_checks(checks: list[dict[str, Any]], everything: bool) -> None:
    """Contract, variant and model-gate outcomes per operator or model: the violated ones,
    or all of them."""
    laws: dict[str, list[int]] = {}
    for item in checks:
        totals = laws.setdefault(item["check"], [0, 0])
        totals[0] += item["passed"]
        totals[1] += item["not_passed"]
    echo()
    echo("contracts, variants and model gates (passed / not passed):")
    width = max(40, *(len(law) + 2 for law in laws))
    for law, (passed, failed) in sorted(laws.items()):
        echo(f"  {law:<{width}}{passed:>8}{failed:>8}")
    shown = checks if everything else [c for c in checks if c["not_passed"]]
    if not shown:
        echo("every law held for every operator")
        return
    title = "per operator or model" if everything else "operators or models that fail a check"
    echo()
    echo(f"{title} (passed / not passed; --all-checks lists every one):")
    # Names as long as a model's file or a variant's check keep a gap between columns.
    op_width = max(28, *(len(str(c["op_type"])) + 2 for c in shown))
    check_width = max(36, *(len(str(c["check"])) + 2 for c in shown))
    for item in shown:
        echo(f"  {item['op_type']:<{op_width}}{item['check']:<{check_width}}"
             f"{item['passed']:>6}{item['not_passed']:>6}")
