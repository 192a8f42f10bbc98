"""The landing screen: counts per result class, precision across operations, inference time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, OptionList, Static
from textual.worker import Worker

from gero.query.table import RESULT_CLASSES, TableFilter
from gero_runner.backends.names import short_name
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import readable_text
from gero_tui.app.widgets.class_counts import ClassCounts
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.app.widgets.operation_bars import SEGMENTS, OperationBars
from gero_tui.app.widgets.timing_table import TimingTable
from gero_tui.app.widgets.verdict_card import VerdictCard
from gero_tui.app.worker_errors import worker_failure

CLASS_NAMES = {c: c.replace("_", " ") for c in RESULT_CLASSES}

if TYPE_CHECKING:
    from gero.query.assessable import Split
    from gero.query.findings import FindingsReport
    from gero.query.summary import OperationSummary
    from gero.query.verdicts import Verdict
    from gero_tui.app.base import ExplorerApp


def _precision_heading(title: str = "Precision across operations") -> Text:
    """The pane's title and a legend in the bars' own colours."""
    text = Text.assemble((title, "bold"), ("  enter: its evaluations\n", "dim"))
    for key, color in SEGMENTS:
        text.append("█", style=color)
        text.append(f" {CLASS_NAMES[key]}  ", style="bold")
    return text


def _operation_filter(option_id: str) -> TableFilter:
    """A bar's evaluations: its operation, and its runtime when bars are per runtime."""
    op, _, backend = option_id.partition("\t")
    return TableFilter(operations=frozenset({op}),
                       backends=frozenset({backend}) if backend else frozenset())


class OverviewScreen(Screen[None]):
    """What the run found, at a glance; every figure leads to its evaluations."""

    app: ExplorerApp

    CSS_PATH = "overview.tcss"
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012 (Textual declares it per instance)
        (0, "-narrow"), (100, "-wide")]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_operation", "Open operation", show=False),
        Binding("n", "group_bars", "By finding", tooltip="Bars per operation or per finding"),
        # Priority, and awaited: the keys typed right after these reach the table they open.
        Binding("v", "open_all", "Evaluations", priority=True),
        Binding("slash", "find", "Find", tooltip="Open the evaluations table's find box",
                priority=True),
        Binding("g", "op_histogram", "Per-op histogram"),
        Binding("1", "open_class('passed')", "Passed", show=False, priority=True),
        Binding("2", "open_class('divergence')", "Divergence", show=False, priority=True),
        Binding("3", "open_class('contract_issue')", "Contract", show=False, priority=True),
        Binding("4", "open_class('execution')", "Execution", show=False, priority=True),
        Binding("tab", "focus_next", "Next pane", show=False),
    ]

    class Loaded(Message):
        def __init__(self, counts: dict[str, int], operations: list[OperationSummary],
                     per_runtime: list[tuple[str, str, dict[str, int]]] | None = None,
                     notes: list[str] | None = None,
                     runtime_ms: dict[str, dict[str, float]] | None = None,
                     split: Split | None = None) -> None:
            self.counts = counts
            self.operations = operations
            self.per_runtime = per_runtime or []
            """(operation, runtime, counts) when the run has several runtimes."""
            self.notes = notes or []
            """Runtime settings that compute below the precision the model declares."""
            self.runtime_ms = runtime_ms or {}
            """Per operation, each runtime's median inference time (ms)."""
            self.split = split
            """The non-passed counts: to act on, and what cannot be assessed (apart)."""
            super().__init__()

    class VerdictsLoaded(Message):
        def __init__(self, card: list[Verdict], not_run: list[dict[str, Any]],
                     notes: list[dict[str, Any]]) -> None:
            self.card = card
            """Each model case, runtime setting and file: safe, off or cannot-run."""
            self.not_run = not_run
            """The settings the plan did not run on a model, with why (in no count)."""
            self.notes = notes
            """The rows' notes: sentences that change no verdict."""
            super().__init__()

    class FindingsCounted(Message):
        def __init__(self, report: FindingsReport) -> None:
            self.report = report
            super().__init__()

    by_finding = False
    """Whether the bars show one line per finding rather than per operation."""
    _findings: FindingsReport | None = None
    _loaded: Loaded | None = None

    class Failed(Message):
        def __init__(self, error: str) -> None:
            self.error = error
            super().__init__()

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield ClassCounts(id="counts")
        yield Static("findings: …", id="findings-count")
        yield VerdictCard(id="verdicts")
        yield Static(id="problems")
        with Horizontal(id="panes"):
            with Vertical(id="precision"):
                yield Label(_precision_heading(), classes="heading")
                yield OperationBars(id="bars")
            with Vertical(id="timing"):
                yield Label("Inference time, with context\n"
                            "[dim]ms, median of per-case medians; pairs: cases timed on both "
                            "sides[/]", classes="heading")
                yield TimingTable(id="timings")
        # One line of keys; Textual's Footer rebuilds a widget per key on every screen change.
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#problems").display = False
        self.query_one(OperationBars).focus()
        self.source_changed()
        self.watch(self.app, "source", self.source_changed, init=False)

    _stale = False
    """Whether the run changed while another screen covered this one."""

    def source_changed(self) -> None:
        """The app opened (another) run: show its figures (once this screen is seen).

        Under the evaluations table (``gero tui --screen evaluations``) the overview's
        queries would compete with the table's first page for the CPU, so they wait.
        """
        source = self.app.source
        if source is None:
            return
        if not self.is_current:
            self._stale = True
            return
        self._stale = False
        self.query_one("#title", Static).update(Text(self.app.title_line()))
        info = self.app.run_info()
        counts = self.query_one(ClassCounts)
        counts.split = None  # the previous run's, until this run's figures are read
        counts.counts = dict(info.counts) if info and info.counts else None
        problems = self.query_one("#problems", Static)
        problems.display = bool(source.problems)
        problems.update(Text(for_terminal("\n".join(f"⚠ {p}" for p in source.problems),
                                          newlines=True)))
        self._load(source)
        # The findings after the counts (on_overview_screen_loaded): grouping every row
        # beside the counts' queries delayed the overview's first frame.

    @work(thread=True, exclusive=True, group="overview-findings")
    def _load_findings(self, source: Any) -> None:
        """The findings, beside the other figures rather than after them: `i` pressed as
        soon as the overview paints finds them computed or nearly."""
        try:
            self.post_message(self.FindingsCounted(self.app.findings(source)))
        except (duckdb.Error, GeroError) as e:
            self.post_message(self.Failed(str(e)))

    @work(thread=True, exclusive=True, group="overview-verdicts")
    def _load_verdicts(self, source: Any) -> None:
        """The verdict card of the run's models (none for the operator suites)."""
        from gero.api import plan_notes_of, verdicts_of

        try:
            card = verdicts_of(source)
            not_run, notes = plan_notes_of(source) if card else ([], [])
            self.post_message(self.VerdictsLoaded(card, not_run, notes))
        except (duckdb.Error, GeroError) as e:
            self.post_message(self.Failed(str(e)))

    def on_overview_screen_verdicts_loaded(self, message: VerdictsLoaded) -> None:
        self.query_one(VerdictCard).show(message.card, message.not_run, message.notes)

    def on_screen_resume(self) -> None:
        if self._stale:
            self.source_changed()

    @work(thread=True, exclusive=True, group="overview", exit_on_error=False)
    def _load(self, source: Any) -> None:
        # Deferred: the summary module imports the runner's schema, and so pyarrow (~0.2 s),
        # which the explorer does not pay before its first paint.
        from gero.query.assessable import split_counts
        from gero.query.runtimes import lower_precision, operation_runtimes
        from gero.query.summary import class_counts, operations, runtime_medians

        try:
            notes = [f"ⓘ {lp.backend} {lp.optimization} computes {lp.dtype} tensors in "
                     f"{lp.precision} ({lp.not_passed} of {lp.observations} comparisons not "
                     "passed)" for lp in lower_precision(source)]
            self.post_message(self.Loaded(class_counts(source), operations(source),
                                          operation_runtimes(source), notes,
                                          runtime_medians(source), split_counts(source)))
        except (duckdb.Error, GeroError) as e:
            self.post_message(self.Failed(str(e)))

    def on_overview_screen_findings_counted(self, message: FindingsCounted) -> None:
        report = self._findings = message.report
        apart = [f for f in report.findings if not f.assessable]
        self.query_one("#findings-count", Static).update(Text.assemble(
            (f"{len(report.findings)} findings", "bold"),
            f" behind {report.non_passed:,} non-passed observations",
            # what cannot be assessed lists last (findings.finding_order)
            f", the last {len(apart)} cannot be assessed  " if apart else "  ",
            ("i: list · n: bars by finding", "dim")))
        if self.by_finding:
            self._show_bars()

    def action_group_bars(self) -> None:
        """``n``: the bars per finding (worst first), or back per operation."""
        self.by_finding = not self.by_finding
        self._show_bars()

    def _show_bars(self) -> None:
        bars = self.query_one(OperationBars)
        heading = self.query_one("#precision .heading", Label)
        if self.by_finding and self._findings is not None:
            heading.update(_precision_heading("Findings, worst first"))
            bars.show([(f.title, dict(f.class_counts)) for f in self._findings.findings],
                      ids=[f.finding_id for f in self._findings.findings], name_max=80)
            return
        heading.update(_precision_heading())
        message = self._loaded
        if message is None:
            return
        if message.per_runtime:  # one bar per operation and runtime
            # the runtime's short name in front: the name column is narrow
            bars.show([(f"{short_name(backend)[:5]:<5} {op}", counts)
                       for op, backend, counts in message.per_runtime],
                      ids=[f"{op}\t{backend}" for op, backend, _ in message.per_runtime])
        else:
            bars.show([
                (o.op_type, {"passed": o.passed, "divergence": o.divergence,
                             "contract_issue": o.contract_issue, "execution": o.execution})
                for o in message.operations])

    def on_overview_screen_loaded(self, message: Loaded) -> None:
        counts = self.query_one(ClassCounts)
        counts.split = message.split
        counts.counts = message.counts
        if self.app.source is not None:
            self._load_findings(self.app.source)
            self._load_verdicts(self.app.source)
        self.call_after_refresh(self.app.figures_shown)
        self._loaded = message
        self._show_bars()
        source = self.app.source
        partial = None if source is None else readable_text(
            sum(message.counts.values()), self.app.recorded_count(source))
        if partial is not None:
            message.notes.insert(0, f"⚠ {partial}: the counts, bars and findings here are "
                                 "of the readable observations")
        if message.notes:
            problems = self.query_one("#problems", Static)
            problems.display = True
            problems.update(Text(for_terminal(
                "\n".join([*(f"⚠ {p}" for p in self.app.source.problems), *message.notes]
                          if self.app.source else message.notes), newlines=True)))
        several = len({b for by in message.runtime_ms.values() for b in by}) > 1
        self.query_one(TimingTable).show([
            (o.op_type, o.measured_pairs,
             message.runtime_ms.get(o.op_type, {}) if several or o.runtime_median_ms is None
             else {"onnxruntime": o.runtime_median_ms},  # ORT's, timed beside the reference
             o.reference_median_ms) for o in message.operations])

    def on_overview_screen_failed(self, message: Failed) -> None:
        self.app.figures_shown()
        self.notify(message.error, title="Overview query failed", severity="error", timeout=10)

    def _filter_for(self, option_id: str) -> TableFilter:
        if self.by_finding and self._findings is not None:
            title = next((f.title for f in self._findings.findings
                          if f.finding_id == option_id), "")
            return TableFilter(finding=option_id, finding_title=title[:60])
        return _operation_filter(option_id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        # Not on top: an `enter` queued before the last one opened the table.
        if event.option.id and self.is_active:
            self.app.show_evaluations(self._filter_for(event.option.id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value and self.is_active:
            self.app.show_evaluations(TableFilter(operations=frozenset({event.row_key.value})))

    def action_open_operation(self) -> None:
        bars = self.query_one(OperationBars)
        if bars.highlighted is not None:
            option = bars.get_option_at_index(bars.highlighted)
            if option.id:
                self.app.show_evaluations(self._filter_for(option.id))

    def action_op_histogram(self) -> None:
        """``g``: max abs error histogram of the highlighted operation."""
        if self.by_finding:
            self.notify("the histogram is per operation: n shows the operations again")
            return
        from gero_tui.app.screens.op_histogram import OpHistogramScreen

        bars = self.query_one(OperationBars)
        if bars.highlighted is not None and self.app.source is not None:
            option = bars.get_option_at_index(bars.highlighted)
            if option.id:
                op = option.id.partition("\t")[0]
                self.app.push_screen(OpHistogramScreen(self.app.source, op))

    async def action_open_all(self) -> None:
        """Open the evaluations table without a filter."""
        await self._open(TableFilter())

    async def action_find(self) -> None:
        """``/``: the evaluations table with its find box open (the keys typed next go there)."""
        await self._open(TableFilter(), find=True)

    async def action_open_class(self, result: str) -> None:
        """Open the evaluations table filtered to one result class."""
        if result in RESULT_CLASSES:
            await self._open(TableFilter(classes=frozenset({result})))

    async def _open(self, table_filter: TableFilter, find: bool = False) -> None:
        mounted = self.app.show_evaluations(table_filter, find=find)
        if mounted is not None:
            await mounted

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so; the explorer goes on."""
        if (error := worker_failure(event)) is not None:
            self.notify(error, title="Overview query failed", severity="error", timeout=15)
