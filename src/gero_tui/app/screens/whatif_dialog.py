"""Tolerance what-if: change one dtype's rtol/atol and see, live, what would change class.

Nothing runs again: each change re-grades the stored figures in DuckDB (see
``gero.query.whatif``) in a worker, and the dialog lists how many observations would
pass, diverge or stay undetermined, and which findings would shrink or vanish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, RadioSet, Static

from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import Dialog
from gero_tui.app.widgets.choice_set import Choice, ChoiceSet

if TYPE_CHECKING:
    from gero.query.findings import Finding
    from gero.query.whatif import WhatIf

DTYPES = ("float16", "float32", "float64")
DEFAULTS = {"float16": (5e-3, 5e-4), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-13)}
"""The specification's defaults, shown as placeholders: a case may carry its own tolerance,
and the value typed replaces it for every row of the dtype."""


def tolerance_problem(value: str) -> str | None:
    """Why ``value`` is not a tolerance, in the dialog's words; None when it is one."""
    import math

    try:
        number = float(value)
    except ValueError:
        return f"{value!r} is not a number (e.g. 1e-3)"
    if not math.isfinite(number) or number < 0:
        return f"{value} is not a tolerance: give a finite number ≥ 0"
    return None


def result_text(w: WhatIf, findings: list[Finding]) -> Text:
    """What the change would do, findings first."""
    titles = {f.finding_id: f.title for f in findings}
    text = Text.assemble(
        (f"{w.to_passed:,} would pass", "bold #98e024"), " · ",
        (f"{w.to_divergence:,} would diverge", "bold #fd971f"), " · ",
        f"{w.undetermined:,} undetermined (stored figures cannot tell)\n",
        (f"{w.regraded:,} re-graded from stored figures; {w.not_regraded:,} not re-graded: "
         "their class depends on more than the tolerance (NaN, inf, contracts)\n", "dim"))
    for c in w.findings[:12]:
        # As `gero findings --rtol/--atol` says it: "8 of 10 would pass".
        gone = c.would_pass == c.members
        text.append(f"{c.would_pass:>5} of {c.members:<5} would pass",
                    style="#98e024" if gone else "")
        text.append(f"{' (gone)' if gone else '':<8}{for_terminal(titles.get(c.finding_id, ''))}"
                    "\n")
    for n in w.new_failures[:8]:
        text.append("  new ", style="#fd971f")
        text.append(for_terminal(f"{n.count:>5} passed would diverge: {n.op_type} {n.dtype} "
                                 f"on {n.paths}") + "\n")
    if not w.findings and not w.new_failures:
        text.append("no observation would change class", style="dim")
    return text


class WhatIfDialog(Dialog[None]):
    """`w` from the findings: a dtype, its rtol and atol; results update on every key."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_dialog", "close")]
    CSS_PATH = "whatif_dialog.tcss"

    class Regraded(Message):
        def __init__(self, text: Text) -> None:
            self.text = text
            super().__init__()

    def __init__(self, source: Any, findings: list[Finding]) -> None:
        super().__init__()
        self.source = source
        self.findings = findings
        self._prepared = False

    def compose(self) -> ComposeResult:
        with Vertical(id="whatif-box"):
            yield Label("[b]What if[/b] a dtype had other tolerances?  "
                        "[dim]|a − r| ≤ atol + rtol·|r| · escape: close[/]")
            with ChoiceSet(id="whatif-dtype"):
                for i, dtype in enumerate(DTYPES):
                    yield Choice(dtype, value=i == 0, id=f"dtype-{dtype}")
            with Horizontal(id="whatif-inputs"):
                yield Input(placeholder=f"rtol (default {DEFAULTS['float16'][0]:g})",
                            id="whatif-rtol")
                yield Input(placeholder=f"atol (default {DEFAULTS['float16'][1]:g})",
                            id="whatif-atol")
            yield Static("type an rtol or an atol", id="whatif-result")

    def on_mount(self) -> None:
        self.query_one("#whatif-rtol", Input).focus()

    @property
    def dtype(self) -> str:
        pressed = self.query_one(RadioSet).pressed_button
        return str(pressed.label) if pressed is not None else DTYPES[0]

    @on(RadioSet.Changed)
    def _dtype_changed(self) -> None:
        rtol, atol = DEFAULTS[self.dtype]
        self.query_one("#whatif-rtol", Input).placeholder = f"rtol (default {rtol:g})"
        self.query_one("#whatif-atol", Input).placeholder = f"atol (default {atol:g})"
        self._changed()

    @on(Input.Changed)
    def _changed(self) -> None:
        from gero.query.whatif import parse_whatif

        rtol = self.query_one("#whatif-rtol", Input).value.strip()
        atol = self.query_one("#whatif-atol", Input).value.strip()
        for name, value in (("rtol", rtol), ("atol", atol)):
            if value and (problem := tolerance_problem(value)) is not None:
                # In the dialog's words: the parser's names a command-line flag.
                self.query_one("#whatif-result", Static).update(
                    Text(f"{name}: {problem}", style="red"))
                return
        try:
            overrides = parse_whatif([f"{self.dtype}={rtol}"] if rtol else [],
                                     [f"{self.dtype}={atol}"] if atol else [])
        except GeroError as e:
            self.query_one("#whatif-result", Static).update(Text(str(e), style="red"))
            return
        if overrides:
            self.regrade(overrides)

    @work(thread=True, exclusive=True, group="whatif")
    def regrade(self, overrides: dict[str, Any]) -> None:
        from gero.query.findings import ensure_members
        from gero.query.whatif import prepare, what_if

        try:
            ensure_members(self.source)
            if not self._prepared:
                prepare(self.source)
                self._prepared = True
            text = result_text(what_if(self.source, overrides), self.findings)
        except (duckdb.Error, GeroError) as e:
            text = Text(f"cannot re-grade: {for_terminal(e)}", style="red")
        self.post_message(self.Regraded(text))

    def on_what_if_dialog_regraded(self, message: Regraded) -> None:
        self.query_one("#whatif-result", Static).update(message.text)

    def action_dismiss_dialog(self) -> None:
        self.dismiss(None)
