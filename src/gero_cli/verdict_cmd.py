"""``gero verdict``: is each model safe on each runtime setting, in each file?

One line per runtime setting: the model's own file (fp32) and each variant the run built
(fp16, int8-dynamic, int8-static) as safe, OFF or cannot run; then, for each that is not
safe, by how much against which gate and arbiter, or why it could not run. The exit status
is the answer a CI gates on."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gero_cli.common import EXIT_CLEAN, EXIT_FOUND, add_data_dir, add_format, data_dir, echo, warn
from gero_runner.errors import GeroError

if TYPE_CHECKING:
    from gero.query.verdicts import Verdict


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verdict", help="is each model safe on each runtime setting, in fp32, fp16 and int8?",
        description="The verdict card of a `gero run --model` run: for each model, each "
        "runtime setting and each file (the model as given, fp32, and each variant the run "
        "built: fp16, int8-dynamic, int8-static) one of safe (every model-level gate "
        "passed), off (by how much, against which gate and which arbiter: the float64 "
        "shadow, the fp32 model, the run's baseline on the file) or cannot run (and why). "
        "Exit status 0 when every verdict is safe, 1 when one is off or cannot run, 2 when "
        "the run tested no model or has no model by that name: a CI gates on it.")
    add_data_dir(p)
    p.add_argument("--run", default=None, help="run id or unique prefix (default: newest)")
    p.add_argument("--model", default=None, metavar="M",
                   help="only this model, by its name or its file (default: every model)")
    add_format(p, "text", "json", what="verdicts")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import gero
    from gero.query.verdicts import all_safe

    with gero.open_run(args.run, data_dir(args)) as run:
        card = run.verdicts(args.model)
        for problem in run.warnings:
            warn(args, problem)
        run_id = run.id
    if not card:  # a run of the operator suites: nothing here answers the question
        raise GeroError(f"run {run_id} tested no model: gero verdict judges the runs of "
                        "`gero run --model FILE.onnx`")
    code = EXIT_CLEAN if all_safe(card) else EXIT_FOUND
    if args.format == "json":
        print(json.dumps({"run_id": run_id, "safe": code == EXIT_CLEAN,
                          "verdicts": [v.as_dict() for v in card]}, indent=2))
        return code
    for line in card_lines(card, run_id):
        echo(line)
    return code


_CELL = {"safe": "safe", "off": "OFF", "cannot-run": "cannot run", "not-run": "not run (plan)",
         "not-built": "not built"}


def card_lines(card: Sequence[Verdict], run_id: str) -> list[str]:
    """The card as text: per model a line per runtime setting, then what is not safe."""
    from gero.query.verdicts import FILES, causes

    lines: list[str] = []
    cases = list(dict.fromkeys((v.model, v.case_id) for v in card))
    several = len({m for m, _ in cases}) < len(cases)  # one model in several cases
    for model, case_id in cases:
        mine = [v for v in card if v.case_id == case_id]
        files = [f for f in FILES if any(v.file == f for v in mine)]
        counts = {k: sum(v.verdict == k for v in mine) for k in _CELL}
        if lines:
            lines.append("")
        lines.append(f"model {model}{f' ({case_id})' if several else ''}, run {run_id}: "
                     f"{counts['safe']} safe, {counts['off']} off, {counts['cannot-run']} "
                     "cannot run"
                     + (f", {counts['not-run']} not run (plan)" if counts["not-run"] else "")
                     + (f", {counts['not-built']} not built" if counts["not-built"] else "")
                     + f" ({len(files)} file{'s' if len(files) > 1 else ''} × "
                     f"{len(mine) // max(1, len(files))} runtime settings)")
        settings = list(dict.fromkeys((v.runtime, v.setting) for v in mine))
        rt = max(len("runtime"), *(len(r) for r, _ in settings)) + 2
        st = max(len("setting"), *(len(s) for _, s in settings)) + 2
        widths = {f: max(len(f), 10, *(len(_CELL[v.verdict]) for v in mine if v.file == f)) + 2
                  for f in files}
        lines.append("  " + f"{'runtime':<{rt}}{'setting':<{st}}"
                     + "".join(f"{f:<{widths[f]}}" for f in files).rstrip())
        by_cell = {(v.runtime, v.setting, v.file): v for v in mine}
        for runtime, setting in settings:
            cells = "".join(f"{_cell(by_cell.get((runtime, setting, f))):<{widths[f]}}"
                            for f in files)
            lines.append("  " + f"{runtime:<{rt}}{setting:<{st}}" + cells.rstrip())
        groups = causes(mine)
        if groups:
            lines.append("  not safe:")
        for group in groups:
            lines.append(f"    {_where(group, settings)}: {_what(group)}")
    return lines


def _where(group: list[Verdict], settings: list[tuple[str, str]]) -> str:
    """Which settings, on which file: 'onnxruntime basic, all · int8-dynamic'."""
    mine = [rs for rs in settings if any((v.runtime, v.setting) == rs for v in group)]
    files = " ".join(dict.fromkeys(v.file for v in group))
    if len(mine) == len(settings) > 1:
        return f"every runtime setting · {files}"
    runtimes = dict.fromkeys(r for r, _ in mine)
    named = "; ".join(f"{r} " + ", ".join(s for q, s in mine if q == r) for r in runtimes)
    return f"{named} · {files}"


def _what(group: list[Verdict]) -> str:
    """The group's cause, said by its worst (own, where there is one) verdict."""
    from gero.query.verdicts import arbiter_words

    v = group[0]
    if v.verdict == "off":
        against = arbiter_words(v.arbiter)
        if all(w.inherited for w in group):
            against += f" (its runtime's baseline judges the {v.file} file)"
        return (f"off, {v.figure_text()} against {against} [{v.check}, output {v.output}, "
                f"observation {v.observation_id[:12]}]")
    ref = f" [observation {v.observation_id[:12]}]" if v.observation_id else ""
    return f"cannot run, {_short(v.reason)}{ref}"


def _cell(v: Verdict | None) -> str:
    return "—" if v is None else _CELL[v.verdict]


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
