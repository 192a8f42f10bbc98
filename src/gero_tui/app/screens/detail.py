"""Evaluation detail: every recorded field, the element error histogram, the worst elements,
and actual / reference / difference side by side; `r` replays the evaluation in place.

Everything blocking (the row query, reading the evidence, the replay) runs in thread workers
that hand their results back to the UI thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Static
from textual.worker import Worker, get_current_worker

from gero import api
from gero.query.detail import DetailRecord, deciding_gate, fetch_observation
from gero.query.releases import compared_releases
from gero.query.tensors import (
    CaseInput,
    ElementAnalysis,
    Evidence,
    analyse,
    load_evidence,
    load_inputs,
)
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import leave
from gero_tui.app.screens.export_dialog import ExportDialog, ExportScope, data_root_of
from gero_tui.app.widgets.histogram import Bar, Chart, Histogram, marker_position
from gero_tui.app.widgets.inputs_view import InputsView
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.app.widgets.palette import CLASS_COLORS
from gero_tui.app.widgets.tab_bar import TabBar
from gero_tui.app.widgets.tensor_view import TensorView, format_element, side_label
from gero_tui.app.widgets.worst_list import WorstList
from gero_tui.app.worker_errors import worker_failure

if TYPE_CHECKING:
    from gero.api import ReplayReport
    from gero.query.source import RunSource


TABS = [("fields", "Fields", "f"), ("histogram", "Histogram", "h"),
        ("tensors", "Side by side", "t"), ("inputs", "Inputs", "n")]
"""(pane id, label, key) of the detail tabs."""


class DetailScreen(Screen[None]):
    """One evaluation, opened from the evaluations table with `enter`."""

    CSS_PATH = "detail.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("r", "replay", "replay"),
        Binding("e", "export", "export"),
        Binding("b", "bundle", "bundle"),
        Binding("c", "copy('case')", "copy id"),
        Binding("C", "copy('replay')", "copy cmd"),
        Binding("f", "tab('fields')", "fields", show=False),
        Binding("h", "tab('histogram')", "histogram", show=False),
        Binding("t", "tab('tensors')", "tensors", show=False),
        Binding("n", "tab('inputs')", "inputs", show=False),
        Binding("g", "op_histogram", "per-op"),
        Binding("B", "blame", "blame",
                tooltip="Which ORT optimisation level and graph rewrite changed the output"),
        Binding("L", "localize", "localize",
                tooltip="Error through the graph: the node where this output's error enters"),
    ]

    def __init__(self, source: RunSource, observation_id: str, replay: bool = False,
                 row_number: int | None = None) -> None:
        """``replay``: start replaying as soon as the screen opens (`r` in the table);
        ``row_number``: the row's ``rn`` in the table, read by it rather than by id."""
        super().__init__()
        self.row_number = row_number
        self.replay_on_mount = replay
        self.source = source
        self.observation_id = observation_id
        self.observation: DetailRecord | None = None
        self.evidence: Evidence | None = None
        self.analysis: ElementAnalysis | None = None
        self._fields_filled = False

    class _Loaded(Message):
        """A result of the loading worker, for ``method`` to show on the UI thread.

        Posted (not called from the thread) so it is handled after the screen is composed
        and mounted: the worker starts while the screen is still being built."""

        def __init__(self, method: Callable[..., None], *args: Any) -> None:
            super().__init__()
            self.method, self.args = method, args

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        message.method(*message.args)

    def compose(self) -> ComposeResult:
        self.load()  # reading 10^6 elements overlaps with building the screen
        yield Static("loading…", id="detail-title")
        yield Static("", id="detail-verdict")
        yield Static("", id="detail-blame")
        # Opens on the histogram (the element picture is what triage needs first); the fields
        # table is built the first time its tab is shown (it is the costliest to lay out).
        yield TabBar(TABS, "histogram", id="detail-tab-bar")
        with ContentSwitcher(initial="histogram", id="detail-tabs"):
            with VerticalScroll(id="fields"):
                yield Static("", id="fields-table")
            with VerticalScroll(id="histogram"):
                with Horizontal(id="histograms"):
                    yield Histogram(id="abs-histogram")
                    yield Histogram(id="ulp-histogram")
                yield Static("", id="histogram-counts")
                yield WorstList(id="worst")
            yield TensorView(id="tensors")
            yield InputsView(id="inputs")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#detail-verdict", Static).display = False
        self.query_one("#detail-blame", Static).display = False
        if self.replay_on_mount:
            self.action_replay()

    # Loading --------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="detail-load", exit_on_error=False)
    def load(self) -> None:
        """Fetch the row, then the evidence (each shown as soon as it is there)."""
        try:
            observation = fetch_observation(self.source.cursor(), self.observation_id,
                                            self.row_number)
        except GeroError as e:
            self.post_message(self._Loaded(self._show_error, str(e)))
            return
        self.post_message(self._Loaded(self._show_observation, observation))
        stored = api.stored_blame(observation.fields, data_root_of(self.source))
        if stored is not None:
            self.post_message(self._Loaded(self._show_blame, blame_text(stored, stored=True)))
        try:
            evidence = load_evidence(data_root_of(self.source), observation.fields)
            analysis = analyse(evidence)
        except GeroError as e:
            self.post_message(self._Loaded(self._show_evidence_error, str(e)))
        else:
            self.post_message(self._Loaded(self._show_evidence, evidence, analysis))
        # The inputs last: what the first tab shows comes first. A path that failed still
        # had inputs (they are what an execution error's replay needs).
        fed = observation.json_field("details").get("inputs")
        fed_text = fed if isinstance(fed, str) else ""
        try:
            inputs = load_inputs(data_root_of(self.source), observation.fields)
        except GeroError as e:
            self.post_message(self._Loaded(self._show_inputs_error, str(e), fed_text))
            return
        self.post_message(self._Loaded(self._show_inputs, inputs, fed_text))

    def _show_inputs(self, inputs: tuple[CaseInput, ...], fed: str) -> None:
        view = self.query_one(InputsView)
        view.show(inputs, fed)
        self._follow_cursor()

    def _show_inputs_error(self, message: str, fed: str) -> None:
        self.query_one(InputsView).show_message(f"No inputs: {message}", fed)

    def _follow_cursor(self) -> None:
        """The inputs at the element the side-by-side view shows."""
        if self.evidence is not None:
            self.query_one(InputsView).follow(self.query_one(TensorView).cursor,
                                              tuple(self.evidence.actual.shape))

    def _show_error(self, message: str) -> None:
        self.query_one("#detail-title", Static).update(Text(for_terminal(message),
                                                            style="bold red"))

    def _show_observation(self, obs: DetailRecord) -> None:
        self.observation = obs
        f = obs.fields
        # The run's names and reasons: their control characters shown, never sent.
        title = Text()
        title.append(for_terminal(f["op_type"]), style="bold")
        title.append(for_terminal(f" · {f['case_name']} · {f['dtype']} · {f['check']}: "))
        opt = f" ({f['optimization']})" if f["optimization"] not in ("-", None) else ""
        title.append(for_terminal(f"{f['backend']}{opt} vs {f['reference']}") + "\n")
        releases = compared_releases(f)
        if releases:  # both releases by name: the reference path names only one
            title.append(for_terminal(releases) + "\n", style="bold")
        title.append(f"{f['result']}", style=_RESULT_STYLE.get(str(f["result"]), "bold"))
        title.append(for_terminal(f" — {f['reason']}"))
        if f.get("note"):  # a sentence that changes no verdict (schema 5)
            title.append(f"\nnote: {for_terminal(f['note'])}", style="italic")
        arbiter = arbiter_text(obs)
        if arbiter:
            title.append(f"\n{for_terminal(arbiter)}", style="italic")
        widget = self.query_one("#detail-title", Static)
        widget.update(title)
        # The worker may answer before the first layout has cleared the title's pending-layout
        # flag; Textual 8.2 then keeps the box model of "loading…" (one line; seen on Python
        # 3.13). An inline style changes the box model's cache key, so the height is re-measured.
        widget.styles.height = "auto"
        if self._active_tab() == "fields":
            self._fill_fields()

    def _fill_fields(self) -> None:
        if self.observation is not None and not self._fields_filled:
            self._fields_filled = True
            self.query_one("#fields-table", Static).update(fields_table(self.observation))

    def _active_tab(self) -> str:
        return self.query_one("#detail-tabs", ContentSwitcher).current or ""

    def on_tab_bar_chosen(self, event: TabBar.Chosen) -> None:
        self.action_tab(event.pane)

    def _show_evidence_error(self, message: str) -> None:
        self.query_one("#histogram-counts", Static).update(
            Text(for_terminal(f"No element view: {message}"), style="yellow"))
        self.query_one(TensorView).show_message(f"No element view: {message}")
        if self._active_tab() == "histogram":
            # Nothing to draw: the recorded fields (the error message among them) say more.
            self.action_tab("fields")

    def _show_evidence(self, evidence: Evidence, analysis: ElementAnalysis) -> None:
        self.evidence, self.analysis = evidence, analysis
        abs_chart, ulp_chart = charts(analysis, evidence)
        self.query_one("#abs-histogram", Histogram).chart = abs_chart
        self.query_one("#ulp-histogram", Histogram).chart = ulp_chart
        gate = deciding_gate(self.observation.fields) if self.observation else ""
        self.query_one("#histogram-counts", Static).update(
            counts_text(analysis, evidence, gate))
        worst = self.query_one("#worst", WorstList)
        worst.set_rows(*worst_rows(analysis, evidence),
                       empty="worst elements: none, no element differs")
        if self._active_tab() == "histogram" and not isinstance(self.focused, TensorView):
            worst.focus()
        labels = None
        if self.observation is not None and self.observation.is_contract:
            labels = contract_labels(self.observation, evidence)
        self.query_one(TensorView).show(evidence, analysis, labels)

    # Actions --------------------------------------------------------------------------------
    def action_back(self) -> None:
        leave(self)

    def action_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", ContentSwitcher).current = tab
        self.query_one(TabBar).active = tab
        if tab == "fields":
            self._fill_fields()
        elif tab == "histogram":
            self.query_one("#worst", WorstList).focus()
        if tab == "tensors":
            self.query_one(TensorView).focus()
        if tab == "inputs":
            self._follow_cursor()
            self.query_one(InputsView).focus()

    def on_worst_list_opened(self, event: WorstList.Opened) -> None:
        """Enter on a worst element: show it side by side."""
        if self.analysis is None:
            return
        k = event.index
        if 0 <= k < len(self.analysis.worst):
            self.action_tab("tensors")
            self.query_one(TensorView).jump(self.analysis.worst[k].index)

    def action_replay(self) -> None:
        verdict = self.query_one("#detail-verdict", Static)
        verdict.display = True
        verdict.update(Text("replaying… (the evaluation runs again in the background)",
                            style="italic"))
        self.replay()

    @work(thread=True, exclusive=True, group="detail-replay", exit_on_error=False)
    def replay(self) -> None:
        """Re-run the case from its evidence and compare with what was stored."""
        try:
            row = self.observation.fields if self.observation else fetch_observation(
                self.source.cursor(), self.observation_id, self.row_number).fields
            root = data_root_of(self.source)
            directory = artifact_directory(root, row)
            worker = get_current_worker()
            # `gero replay` (``api.replay``) in a child process, killed when the worker is
            # cancelled (the user left the screen or quit): a hung case never outlives the
            # explorer.
            report = api.replay(directory, root, [self.observation_id],
                                cancelled=lambda: worker.is_cancelled)
            text = verdict_text(report, self.observation_id)
        except GeroError as e:
            text = Text(f"✗ replay failed: {for_terminal(e)}", style="bold red")
        except Exception as e:  # a replay must never take the explorer down
            text = Text(f"✗ replay failed unexpectedly: {type(e).__name__}: {for_terminal(e)}",
                        style="bold red")
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.query_one("#detail-verdict", Static).update, text)

    def action_blame(self) -> None:
        """``B``: run every ORT level on this graph and name the level and rewrite to blame."""
        fields = self.observation.fields if self.observation is not None else None
        from gero_runner.backends.names import levels, path_label, title, with_levels

        if fields is not None and not levels(str(fields.get("backend"))):
            # Blame reruns a runtime's levels: a row of a runtime without any (the
            # ReferenceEvaluator's, OpenVINO's) has none to compare.
            runtimes = " or ".join(title(b) for b in with_levels())
            self._show_blame(Text(
                f"blame is for {runtimes}'s optimisation levels: this row is "
                f"{path_label(str(fields.get('backend')), str(fields.get('optimization')))}"
                "'s (D on the Findings screen compares runtimes)", style="yellow"))
            return
        self._show_blame(Text("blaming… (every optimisation level runs in the background)",
                              style="italic"))
        self.blame()

    def _show_blame(self, text: Text) -> None:
        widget = self.query_one("#detail-blame", Static)
        widget.display = True
        widget.update(text)

    @work(thread=True, exclusive=True, group="detail-blame")
    def blame(self) -> None:
        try:
            row = self.observation.fields if self.observation else fetch_observation(
                self.source.cursor(), self.observation_id, self.row_number).fields
            # `gero blame` (``api.blame``), which stores what it found with the evidence.
            blamed = api.blame(row, data_root_of(self.source))
            text = blame_text(blamed.blame.as_dict(), stored=False)
        except GeroError as e:
            text = Text(f"✗ blame failed: {for_terminal(e)}", style="bold red")
        except Exception as e:  # blame must never take the explorer down
            text = Text(f"✗ blame failed unexpectedly: {type(e).__name__}: {for_terminal(e)}",
                        style="bold red")
        self.app.call_from_thread(self._show_blame, text)

    def action_localize(self) -> None:
        """``L``: the error through the graph (gero localize), stored or computed."""
        from gero_tui.app.screens.localize import LocalizeScreen

        row = self.observation.fields if self.observation is not None else None
        self.app.push_screen(LocalizeScreen(data_root_of(self.source), self.observation_id,
                                            row, self.source))

    def action_copy(self, what: str) -> None:
        if self.observation is None:
            return
        text = (str(self.observation["case_id"]) if what == "case"
                else replay_command(data_root_of(self.source), self.observation.fields))
        self.app.copy_to_clipboard(text)
        self.notify(f"copied to the clipboard (OSC 52): {text}", timeout=4)

    def _scope(self) -> ExportScope:
        scope = ExportScope.of_ids([self.observation_id])
        return ExportScope(scope.sql, scope.params, "this evaluation (1 row)", 1)

    def action_export(self) -> None:
        self.app.push_screen(ExportDialog(self.source, self._scope(),
                                          current_id=self.observation_id))

    def action_bundle(self) -> None:
        self.app.push_screen(ExportDialog(self.source, self._scope(),
                                          current_id=self.observation_id, bundle=True))

    def action_op_histogram(self) -> None:
        from gero_tui.app.screens.op_histogram import OpHistogramScreen

        if self.observation is not None:
            self.app.push_screen(OpHistogramScreen(self.source, str(self.observation["op_type"])))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so; the explorer goes on."""
        if (error := worker_failure(event)) is not None:
            self.notify(error, title="Detail failed", severity="error", timeout=15)


# The palette's colours: ANSI red and magenta look alike in many themes (see palette.py).
_RESULT_STYLE = {result: f"bold {color}" for result, color in CLASS_COLORS.items()}


def blame_text(blame: dict[str, Any], stored: bool) -> Text:
    """A blame result in one paragraph: the level, the rewrites, how sure."""
    head = "blame (stored): " if stored else "blame: "
    first = blame.get("first_level")
    text = Text(head, style="bold")
    text.append(for_terminal(blame.get("summary", "")), style="" if first else "dim")
    return text


def arbiter_text(obs: DetailRecord) -> str:
    """For a disagreement: which side the float64 arbiter is closer to (at the elements out
    of tolerance), in words. Contract issues show it when one was recorded."""
    side = obs.fields.get("arbiter")
    result = obs.fields.get("result")
    if result not in ("divergence", "contract_issue"):
        return ""
    if result == "contract_issue" and side not in ("actual", "reference", "tie"):
        return ""
    if side == "actual":
        return f"float64 arbiter: closer to the actual side ({obs['backend']})"
    if side == "reference":
        return f"float64 arbiter: closer to the reference side ({obs['reference']})"
    if side == "tie":
        return "float64 arbiter: both sides equally far from the float64 value"
    return "float64 arbiter: none (no float64 value for this comparison)"


def fields_table(obs: DetailRecord) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for title, rows in obs.sections():
        table.add_row(Text(title, style="bold underline"), "")
        for name, value in rows:
            # Texts: a str cell of a rich Table is markup, and a value is the run's name.
            table.add_row(Text(for_terminal(name)), Text(for_terminal(value, newlines=True)))
    return table


def charts(analysis: ElementAnalysis, evidence: Evidence) -> tuple[Chart, Chart]:
    """The log10 |a − r| and ULP histograms, the tolerance line on the first."""
    # Compare in log10 (exact bin edges), with a little slack for the split edge.
    lows = [b.log10_low + 1e-9 for b in analysis.abs_bins]
    after = marker_position(lows, analysis.tolerance_log10)
    bars = [Bar(b.label, b.count, beyond=low >= analysis.tolerance_log10)
            for b, low in zip(analysis.abs_bins, lows, strict=True)]
    if analysis.zero_error:
        bars.insert(0, Bar("0", analysis.zero_error))
        after = after + 1 if after is not None else None
    bars, after = compact_bars(bars, after)
    tol = 10 ** analysis.tolerance_log10 if math.isfinite(analysis.tolerance_log10) else 0.0
    abs_chart = Chart("log10 |actual − reference|, by decade", tuple(bars), after,
                      f"tolerance {tol:.2g}", footer="atol + rtol·median|r|")
    ulp_bars, _ = compact_bars([Bar(b.label, b.count) for b in analysis.ulp_bins], None)
    ulp_chart = Chart("ULP distance", tuple(ulp_bars))
    return abs_chart, ulp_chart


def compact_bars(bars: list[Bar], marker: int | None, run: int = 3
                 ) -> tuple[list[Bar], int | None]:
    """Fold runs of ``run`` or more empty bars into one '…' bar (the marker stays in place)."""
    out: list[Bar] = []
    new_marker = None if marker is None else len(bars)
    i = 0
    while i < len(bars):
        if marker is not None and i == marker:
            new_marker = len(out)
        j = i
        while j < len(bars) and bars[j].count == 0 and (marker is None or j == i or j != marker):
            j += 1
        if j - i >= run:
            out.append(Bar(f"{bars[i].label}…{bars[j - 1].label}", 0))
            i = j
        else:
            out.append(bars[i])
            i += 1
    if marker is not None and marker >= len(bars):
        new_marker = len(out)
    return out, new_marker


def counts_text(analysis: ElementAnalysis, evidence: Evidence, gate: str = "") -> Text:
    """The element counts; ``gate``: what decides the row where rtol/atol do not (then the
    elements outside them are context, not the verdict)."""
    text = Text()
    text.append(f"{analysis.element_count} elements, shape {list(evidence.actual.shape)}; ")
    style = "bold red" if analysis.out_of_tolerance and not gate else "green"
    text.append(f"{analysis.out_of_tolerance} outside tolerance", style=style)
    text.append(f" (atol={evidence.atol:g}, rtol={evidence.rtol:g}"
                + (f"; context only, the row's gate is {gate}" if gate else "") + "); ")
    text.append(f"NaN mismatches {analysis.nan_mismatch}, inf mismatches "
                f"{analysis.inf_mismatch}; exact zeros {analysis.zero_error}")
    return text


WORST_HEADER = ("index", "", "|a−r|", "ULP", "actual", "reference", "float64")
"""The verdict and the error first: at 80 columns the values at the end may be cut."""


def worst_rows(analysis: ElementAnalysis, evidence: Evidence
               ) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The worst elements as text cells (the verdict 'within' or 'OUT' second)."""
    rows: list[tuple[str, ...]] = [(
        str(list(w.index)),
        "within" if w.within else "OUT",
        "≠" if math.isnan(w.abs_error) else f"{w.abs_error:.3e}",
        "-" if math.isnan(w.abs_error) else f"{w.ulp:.0f}",
        format_element(w.actual, evidence.actual.dtype),
        format_element(w.reference, evidence.reference.dtype),
        "-" if w.exact is None else f"{w.exact:.10g}",
    ) for w in analysis.worst]
    return WORST_HEADER, rows


# The two sides of each contract the runner checks (gero_runner.checks.contracts): the side the law
# constrains, then what the law says it must equal. Evidence files are shared between rows
# when bit-identical, so their names do not say which side of which law they are.
LAW_SIDES: dict[str, tuple[str, str]] = {
    "partition": ("concat(f(parts))", "f(full batch)"),
    "permutation": ("f(x[p])", "f(x)[p]"),
    "duplication": ("f(batch)[copy]", "f(batch)[original]"),
    "permutation_invariance": ("f(x[p])", "f(x)"),
    "partial_reduction": ("combine(f(parts))", "f(full batch)"),
    "rank_change": ("f(x with a unit axis)", "f(x) with a unit axis"),
    "threads": ("N threads", "1 thread"),
    "probability": ("row sums", "1"),
    "probability_extreme": ("row sums", "1"),
    "masked_rows": ("output", "zero where masked"),
    "layernorm_variance": ("Var(normalised)", "v / (v + ε)"),
}


def contract_labels(obs: DetailRecord, evidence: Evidence) -> tuple[str, str]:
    """The two sides of a contract: as the runner named them if it recorded names, else by
    the law (the evidence file names are no guide, see LAW_SIDES)."""
    details = obs.json_field("details")
    law = str(details.get("law") or str(obs["check"]).removeprefix("contract:"))
    sides = LAW_SIDES.get(law)
    if law == "threads" and isinstance(details.get("threads"), list) and details["threads"]:
        sides = (f"{details['threads'][-1]} threads", "1 thread")
    if law.startswith("probability") and "row_length" not in details:
        sides = ("output", "output clipped to [0, 1]")  # no axis: the range check alone
    left = details.get("actual_label") or (sides[0] if sides else None) or side_label(
        evidence.actual_file)
    right = details.get("reference_label") or (sides[1] if sides else None) or side_label(
        evidence.reference_file)
    return str(left), str(right)


def artifact_directory(root: Path, row: dict[str, Any]) -> Path:
    """The evidence directory ``r`` replays (``api.evidence_directory``)."""
    if not row.get("artifact_path"):
        raise GeroError("this observation has no evidence directory (its worker crashed or "
                        "timed out before writing any): there is nothing to replay")
    return api.evidence_directory(row, root)


def replay_command(root: Path, row: dict[str, Any]) -> str:
    """What ``C`` copies: the command `gero findings` and the report print for the row."""
    return api.replay_command(str(row["observation_id"]), str(row.get("artifact_path") or ""),
                              root)


def verdict_text(report: ReplayReport, observation_id: str) -> Text:
    """One line: reproduced bit-exact / within tolerance / not reproduced, with the figures."""
    match = [o for o in report.observations if o.observation_id == observation_id]
    if not match:
        return Text(f"✗ the replay made no observation matching {observation_id[:12]}",
                    style="bold red")
    o = match[0]
    good = o.reproduced
    # A row replay does not re-run is neither reproduced nor failed.
    mark, style = ("✓ ", "bold green") if good else ("✗ ", "bold red") if o.replayed else (
        "– ", "bold yellow")
    text = Text(mark, style=style)
    text.append(o.label, style=style)
    if o.max_abs_difference is not None:
        text.append(f"; max |replayed − stored| = {o.max_abs_difference:.3g}")
    text.append(f"; result {o.stored_result} → {o.replayed_result or '-'}")
    text.append(f"; {report.seconds:.2f} s")
    if o.message:
        text.append(f" ({for_terminal(o.message)})", style="dim")
    for change in report.version_changes:
        text.append(f"\nversion changed: {for_terminal(change)}", style="yellow")
    return text
