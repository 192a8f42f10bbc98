"""mkdocs hooks: the reference pages that must not drift from the code are written at build
time from the code itself, never committed.

- ``reference/cli.md``: every command and option, from the argparse parsers;
- ``reference/exit-status.md``: the exit statuses, from ``gero_cli.common``;
- ``reference/schema.md``: the observation table, from ``gero_runner.schema``;
- ``reference/tolerances.md``: the tolerance tables and the model-level gates, from
  ``gero_runner.tolerances`` and ``gero_runner.metrics.model_level``;
- ``reference/explorer-keys.md``: each explorer screen's keys, from its ``BINDINGS``;
- ``changelog.md``: CHANGELOG.md at the repository root;
- ``screenshots/*.png``: the repository's screenshots, which the pages and the README share.

mkdocs.yml names this file under ``hooks:``; ``mkdocs build --strict`` fails on a page
that links to something missing, so a renamed command or page breaks the build.
"""

from __future__ import annotations

import argparse
import importlib
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GENERATED_NOTE = ("<!-- Generated at build time by scripts/docs_hooks.py from the code: "
                  "edit the code, not this page. -->\n")


def _cell(text: str) -> str:
    """Text for one Markdown table cell: pipes escaped, no HTML, one line."""
    text = " ".join(str(text).split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("|", "\\|")


def _code(text: str) -> str:
    return "`" + str(text).replace("`", "'") + "`"


# --- the command line -------------------------------------------------------------------------

def subparsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, by name, in ``gero_cli.COMMANDS`` order."""
    from gero_cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or "-h" in action.option_strings:
            continue
        if action.option_strings:
            metavar = ""
            if action.nargs != 0:
                default = formatter._get_default_metavar_for_optional(action)
                metavar = " " + formatter._format_args(action, default)
            name = ", ".join(f"{o}{metavar}" for o in action.option_strings)
        else:
            default = formatter._get_default_metavar_for_positional(action)
            name = formatter._format_args(action, default)
        meaning = formatter._expand_help(action) if action.help else ""
        if action.choices and action.option_strings and "{" not in name:
            meaning += f" (one of {', '.join(map(str, action.choices))})"
        rows.append((name, meaning))
    return rows


def _usage(parser: argparse.ArgumentParser) -> str:
    import os

    width = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "96"
    try:
        return parser.format_usage().strip()
    finally:
        if width is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = width


def cli_page() -> str:
    from gero_cli import build_parser

    top = build_parser()
    parsers = subparsers()
    lines = [GENERATED_NOTE, "# Commands", "",
             "Every command and option, rendered from the parsers `gero` itself uses, so this "
             "page cannot fall behind the code. `gero COMMAND --help` prints the same text in a "
             "terminal. The [exit statuses](exit-status.md) are the same for every command.", "",
             "```text", _usage(top), "```", "", top.description or "", "",
             "| option | meaning |", "|---|---|"]
    lines += [f"| {_code(n)} | {_cell(m)} |" for n, m in _option_rows(top)]
    lines += ["", "| command | what it does |", "|---|---|"]
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    summary = {a.dest: a.help or "" for a in action._choices_actions}
    for name in parsers:
        lines.append(f"| [`gero {name}`](#gero-{name}) | {_cell(summary.get(name, ''))} |")
    for name, parser in parsers.items():
        lines += ["", f"## gero {name}", "", "```text", _usage(parser), "```", "",
                  _cell(parser.description or summary.get(name, "")), "",
                  "| option | meaning |", "|---|---|"]
        lines += [f"| {_code(n)} | {_cell(m)} |" for n, m in _option_rows(parser)]
        lines.append("| `-q`, `--quiet` | print nothing but errors; the exit status says the "
                     "outcome |")
    return "\n".join(lines) + "\n"


def exit_status_page() -> str:
    from gero_cli import BROKEN_PIPE
    from gero_cli.common import EXIT_STATUS_HELP

    rows: list[list[str]] = []
    for line in EXIT_STATUS_HELP.splitlines()[1:]:
        match = re.match(r"\s{2}(\d+)\s+(.*)", line)
        if match:
            rows.append([match.group(1), match.group(2)])
        elif rows:
            rows[-1][1] += " " + line.strip()
    lines = [GENERATED_NOTE, "# Exit statuses", "",
             "Every command exits with the same status for the same outcome, so a script or a "
             "CI job can act on it. This table is `gero --help`'s own (`gero_cli.common`).", "",
             "| status | meaning |", "|---|---|"]
    lines += [f"| {code} | {_cell(text)} |" for code, text in rows]
    lines.append(f"| {BROKEN_PIPE} | the reader of stdout went away (`gero diff A B \\| head`): "
                 "128 + SIGPIPE, as a shell reports it |")
    lines += ["", "A bad input is one sentence on stderr (`gero: error: ...`), never a "
              "traceback. In CI, `|| [ $? -eq 1 ]` accepts \"found something\" and still fails "
              "on an error: see [gero in CI](../how-to/ci.md)."]
    return "\n".join(lines) + "\n"


# --- the observation table --------------------------------------------------------------------

def schema_page() -> str:
    from gero_runner import schema
    from gero_runner.result_classes import RESULT_CLASSES, RESULT_LABELS

    lines = [GENERATED_NOTE, "# Observation schema", "",
             f"Schema version {schema.SCHEMA_VERSION}, from `runner/gero_runner/schema.py`: "
             "the one contract between the runner, which writes these columns to Parquet, and "
             "everything that reads them (the explorer, `gero export`, `gero diff`, the "
             "Python API). *identity* columns are hashed into `observation_id`: two rows equal "
             "on them are the same observation, stored once. See "
             "[the observation model](../explanation/observations.md) for what the columns "
             "mean together.", "",
             "| column | type | identity | meaning |", "|---|---|---|---|"]
    for column in schema.OBSERVATION_COLUMNS:
        lines.append(f"| `{column.name}` | `{column.type}` | {'yes' if column.identity else ''} "
                     f"| {_cell(column.doc)} |")
    lines += ["", "## Result classes", "", "| class | label in the views |", "|---|---|"]
    lines += [f"| `{c}` | {_cell(RESULT_LABELS[c])} |" for c in RESULT_CLASSES]
    lines += ["", "## Variant files of a model", "",
              "A model case builds these files; rows name them in their check "
              "(`model:VARIANT`, `model:VARIANT:GATE`) and in failed paths (`VARIANT:PATH`): "
              + ", ".join(_code(v) for v in schema.MODEL_VARIANTS) + "."]
    return "\n".join(lines) + "\n"


# --- tolerances and gates ---------------------------------------------------------------------

def _figure(value: float) -> str:
    """5e-3 rather than 0.005: the way the tables are written everywhere else."""
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    if -2 <= exponent <= 3:
        return f"{value:g}"
    return f"{value / 10 ** exponent:.3g}e{exponent}"


def tolerances_page() -> str:
    from gero_runner import tolerances
    from gero_runner.metrics import model_level as m

    lines = [GENERATED_NOTE, "# Tolerances and gates", "",
             "The figures gero compares with, read from `runner/gero_runner/tolerances.py` and "
             "`runner/gero_runner/metrics/model_level.py` when the site is built. Why they are "
             "what they are: [tolerances and model-level gates](../explanation/tolerances.md).",
             "", "## Element-wise tolerances", "",
             "`|actual − reference| ≤ atol + rtol · |reference|` for the synthetic suite; a "
             "model's outputs are compared on their scale, `|a − r| ≤ atol + rtol · max|r|`. "
             "`--rtol DTYPE=V` and `--atol DTYPE=V` override a figure (a finite number ≥ 0); "
             "every observation stores the tolerance it used. Integers and booleans compare "
             "exactly.", "",
             "| dtype | rtol | atol | rtol on a model's outputs | atol on a model's outputs |",
             "|---|---|---|---|---|"]
    for dtype in tolerances.FLOAT_DTYPES:
        d, model = tolerances.DEFAULT_TOLERANCES[dtype], tolerances.MODEL_TOLERANCES[dtype]
        lines.append(f"| {dtype} | {_figure(d.rtol)} | {_figure(d.atol)} | "
                     f"{_figure(model.rtol)} | {_figure(model.atol)} |")
    lines += ["", "A case that states a tolerance of its own (an onnx backend test's, a shipped "
              "model's) keeps it for its float outputs.", "",
              "## Model-level gates", "",
              "| figure | value | what it gates |", "|---|---|---|",
              f"| scaled-error gate, float32 output | {_figure(m.scaled_limit('float32'))} | "
              "`max|a−r| / max|r|` of a path on the fp32 model against the arbiter |",
              f"| scaled-error gate, float16 output | {_figure(m.scaled_limit('float16'))} | the "
              "same for a float16 output; also the fp16 file against its float16-rounded "
              "float64 shadow and against the fp32 model |",
              f"| scaled-error gate, bfloat16 output | {_figure(m.scaled_limit('bfloat16'))} | "
              f"{m.ROUNDINGS} of the dtype's own roundings (half an ulp each) |",
              f"| roundings allowed a narrower output | {m.ROUNDINGS} | a gate never below "
              f"{m.ROUNDINGS} roundings of the output's own type |",
              f"| row cosine and mean-pooled cosine cap | {_figure(m.COSINE_CAP)} | a path "
              f"passes at min({_figure(m.COSINE_CAP)}, noise floor) |",
              f"| rows for a percentile | {m.PERCENTILE_ROWS} | at least this many rows: the "
              "1st-percentile row cosine; fewer: the minimum |",
              f"| decisions that must agree | {m.DECISION_SHARE:.0%} | argmax along the "
              "decision axis, or as many as the noise floor keeps |",
              f"| fp16 against a correct fp16 computation | {_figure(m.FP16_RATIO_LIMIT)}× | "
              "the fp16 file's error against the fp32 model, relative to a correct float16 "
              "computation's own |",
              f"| fp16 spread cap | {_figure(m.FP16_SPREAD_CAP)} | the largest distance between "
              "the file's two correct computations that widens the fp16 gate |"]
    return "\n".join(lines) + "\n"


# --- the explorer's keys ----------------------------------------------------------------------

SCREENS = (
    ("The whole explorer (every screen)", "gero_tui.app.app", "GeroApp"),
    ("Overview", "gero_tui.app.screens.overview", "OverviewScreen"),
    ("Evaluations (the table)", "gero_tui.app.screens.evaluations", "EvaluationsScreen"),
    ("Findings (`i`)", "gero_tui.app.screens.findings", "FindingsScreen"),
    ("Evaluation detail (`enter` on a row)", "gero_tui.app.screens.detail", "DetailScreen"),
    ("The error through the graph (`L`)", "gero_tui.app.screens.localize", "LocalizeScreen"),
    ("Per-operation histogram", "gero_tui.app.screens.op_histogram", "OpHistogramScreen"),
    ("Runs compared (`d` in the run picker, `D` on Findings)", "gero_tui.app.screens.diff",
     "DiffScreen"),
    ("Run picker (`p`)", "gero_tui.app.screens.run_picker", "RunPickerScreen"),
)


def _bindings(cls: Any) -> Iterable[tuple[str, str, str]]:
    from textual.binding import Binding
    from textual.keys import format_key

    for item in cls.__dict__.get("BINDINGS", []):
        binding = item if isinstance(item, Binding) else Binding(*item)
        if binding.system:
            continue
        keys = " ".join(f"`{format_key(k.strip())}`" for k in binding.key.split(","))
        yield keys, binding.description or binding.action, binding.tooltip or ""


def explorer_keys_page() -> str:
    lines = [GENERATED_NOTE, "# Explorer keys", "",
             "Each screen's keys, read from its bindings when the site is built; `?` on any "
             "screen lists the same, the screen's own first. The explorer is keyboard only and "
             "works at 80×24 over SSH. What the screens show: "
             "[the explorer](../how-to/explorer.md)."]
    for title, module, name in SCREENS:
        # a renamed screen fails the build (strict), rather than vanish from the page
        cls = getattr(importlib.import_module(module), name)
        rows = list(_bindings(cls))
        if not rows:
            continue
        lines += ["", f"## {title}", "", "| key | action | more |", "|---|---|---|"]
        lines += [f"| {keys} | {_cell(action)} | {_cell(more)} |" for keys, action, more in rows]
    return "\n".join(lines) + "\n"


# --- mkdocs -----------------------------------------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/exit-status.md": exit_status_page,
    "reference/schema.md": schema_page,
    "reference/tolerances.md": tolerances_page,
    "reference/explorer-keys.md": explorer_keys_page,
}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "changelog.md", content=changelog))
    for png in sorted((ROOT / "screenshots").glob("*.png")):
        files.append(File.generated(config, f"screenshots/{png.name}", abs_src_path=str(png)))
    return files
