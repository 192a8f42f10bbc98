"""The verdict card of each model, compact: one line per runtime, one cell per file (the
model as given, fp32, and each variant built), safe / OFF / cannot run. Under several
settings of a runtime a cell counts those that are not safe ("OFF 2/4"); ``gero verdict``
has every setting and figure.

Words carry the verdict (OFF in capitals), so that it reads without colour (NO_COLOR).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from gero_runner.backends.names import short_name
from gero_runner.escape import for_terminal
from gero_tui.app.widgets.palette import CLASS_COLORS

if TYPE_CHECKING:
    from gero.query.verdicts import Verdict

SHOWN_MODELS = 2
"""Models the overview has room for; the others are counted."""
_STYLE = {"safe": CLASS_COLORS["passed"], "off": f"bold {CLASS_COLORS['divergence']}",
          "cannot-run": CLASS_COLORS["execution"], "not-run": "dim", "not-built": "dim"}


class VerdictCard(Static):
    """Is each model safe on each runtime, in each file? Hidden for a run without models."""

    DEFAULT_CSS = """
    VerdictCard { height: auto; padding: 0 1; display: none; }
    """

    def show(self, card: Sequence[Verdict], not_run: Sequence[dict[str, Any]] = (),
             notes: Sequence[dict[str, Any]] = ()) -> None:
        self.display = bool(card)
        if card:
            self.update(Group(card_table(card), *plan_lines(not_run, notes)))


def plan_lines(not_run: Sequence[dict[str, Any]], notes: Sequence[dict[str, Any]]
               ) -> list[Text]:
    """Under the card, dim: the settings the plan did not run (why) and the rows' notes,
    which count in no class. The run's names: control characters shown, never sent."""
    from gero.query.plan_notes import setting_words

    lines = [Text(for_terminal(f"not run (not needed): {setting_words(e)}"), style="dim")
             for e in not_run]
    for e in notes:
        rows = f" ({e['rows']} rows)" if e["rows"] > 1 else ""
        lines.append(Text(for_terminal(f"note on {e['model']}{rows}: {e['note']}"),
                          style="dim"))
    return lines


def card_table(card: Sequence[Verdict]) -> Group:
    """Per model a title line, then a line per runtime with a cell per file."""
    from gero.query.verdicts import FILES

    parts: list[Text | Table] = []
    models = list(dict.fromkeys(v.model for v in card))
    for model in models[:SHOWN_MODELS]:
        mine = [v for v in card if v.model == model]
        files = [f for f in FILES if any(v.file == f for v in mine)]
        counts = {k: sum(v.verdict == k for v in mine) for k in _STYLE}
        parts.append(Text.assemble(
            ("Verdict ", "bold"), (model, "bold"),
            f"  {counts['safe']} safe · {counts['off']} off · {counts['cannot-run']} cannot run",
            ("  gero verdict: each setting", "dim"), no_wrap=True, overflow="ellipsis"))
        grid = Table.grid(padding=(0, 2))
        for _ in range(len(files) + 1):
            grid.add_column(no_wrap=True)
        grid.add_row("", *[Text(f, style="dim") for f in files])
        for runtime in dict.fromkeys(v.runtime for v in mine):
            grid.add_row(Text(short_name(runtime)),
                         *[_cell([v for v in mine if v.runtime == runtime and v.file == f])
                           for f in files])
        parts.append(grid)
    if len(models) > SHOWN_MODELS:
        parts.append(Text(f"… {len(models) - SHOWN_MODELS} more models: gero verdict",
                          style="dim"))
    return Group(*parts)


def _cell(settings: list[Verdict]) -> Text:
    """One runtime on one file, over its settings."""
    if not settings:
        return Text("—", style="dim")
    off = sum(v.verdict == "off" for v in settings)
    failed = sum(v.verdict == "cannot-run" for v in settings)
    several = len(settings) > 1
    if all(v.verdict == "not-run" for v in settings):  # the plan left it out: no verdict
        return Text("not run", style=_STYLE["not-run"])
    if all(v.verdict == "not-built" for v in settings):  # gero could not build the file
        return Text("not built", style=_STYLE["not-built"])
    if off:
        return Text(f"OFF {off}/{len(settings)}" if several else "OFF", style=_STYLE["off"])
    if failed:
        return Text(f"cannot run {failed}/{len(settings)}" if several else "cannot run",
                    style=_STYLE["cannot-run"])
    return Text("safe", style=_STYLE["safe"])
