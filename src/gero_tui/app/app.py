"""The explorer: opens a run of a data root and shows its overview and evaluations.

The run's DuckDB source is opened in a thread worker; screens ask the app for it and watch
its reactive ``source`` (``app.base.ExplorerApp``) to learn when it is ready or replaced.
Queries read the run's Parquet files in place (see ``gero.query.source``): nothing is
copied into memory.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable
from functools import partial
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb
from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.worker import Worker

from gero import api
from gero.api import RunGone, RunInfo
from gero.query.source import RunSource, open_source
from gero.query.table import Page, TableFilter, TableSort
from gero_runner.errors import GeroError, StoreError
from gero_runner.escape import for_terminal
from gero_tui.app.base import ExplorerApp
from gero_tui.app.prefetch import Opened, Prefetch
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.worker_errors import worker_failure

if TYPE_CHECKING:
    from gero.query.findings import FindingsReport

SCREENS = ("overview", "evaluations", "findings")
PRELOAD_DELAY_S = 0.5
"""After start, when the detail modules are imported in the background (the first paint
has happened by then; importing sooner would compete with it for the interpreter)."""
PRELOAD_MODULES = ("gero_tui.app.screens.detail", "gero_tui.app.screens.op_histogram")


STATUS_MARKS = {"running": " · RUNNING (what it saved so far; p enter reloads)",
                "interrupted": " · interrupted (partial)", "unreadable": " · unreadable record"}
"""The title line's word for a run that is not complete."""


def crash_line(error: BaseException | None) -> str:
    """One line for an unexpected error, naming a file with its traceback."""
    import tempfile
    import traceback

    if error is None:
        return "gero: error: the explorer stopped on an unexpected error"
    summary = " ".join(f"{type(error).__name__}: {error}".split())
    if len(summary) > 200:
        summary = summary[:199] + "…"
    try:
        with tempfile.NamedTemporaryFile("w", prefix="gero-tui-crash-", suffix=".txt",
                                         delete=False) as out:
            out.write("".join(traceback.format_exception(error)))
        where = f" (traceback in {out.name})"
    except OSError:
        where = ""
    return f"gero: error: the explorer stopped on an unexpected error: {summary}{where}"


class GeroApp(ExplorerApp):
    """gero's explorer over one data root."""

    TITLE = "gero"
    # The findings screen's rules are parsed with the app's: pushing a screen with a
    # stylesheet of its own re-parses every rule on the UI thread (about 0.1 s, seconds on
    # a loaded machine), between `F` and the findings' first paint.
    CSS_PATH: ClassVar[list[str | PurePath]] = ["app.tcss", "screens/findings.tcss"]
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", tooltip="Leave the explorer"),
        Binding("question_mark", "help", "Help", tooltip="Every key of this screen"),
        Binding("p", "pick_run", "Runs", tooltip="Switch to another run of the data root"),
        Binding("i", "findings", "Findings",
                tooltip="The causes behind the run's non-passed observations"),
    ]

    class SourceOpened(Message):
        def __init__(self, source: RunSource) -> None:
            self.source = source
            super().__init__()

    class SourceFailed(Message):
        def __init__(self, error: str) -> None:
            self.error = error
            super().__init__()

    class RunWentAway(Message):
        """The open run was removed underneath (posted from any thread)."""

        def __init__(self, gone: RunGone) -> None:
            self.gone = gone
            super().__init__()

    def __init__(self, data_root: Path, run: str | None = None, screen: str = "overview",
                 prefetch: Prefetch | None = None) -> None:
        super().__init__()
        if screen not in SCREENS:
            raise GeroError(f"unknown screen {screen!r}; screens: {', '.join(SCREENS)}")
        self.data_root = Path(data_root)
        self.start_screen = screen
        self.run_id: str | None = None
        # A bad --run prefix is a command-line error, reported before the UI starts.
        self.run_id = (api.find_run(run, self.data_root) if api.run_ids(self.data_root)
                       else None)
        self._info: RunInfo | None = None
        self._prefetch = prefetch
        self._early_findings = prefetch
        """Kept after the run is adopted: it may be computing the findings (see prefetch)."""
        self.last_sort = TableSort()
        """The sort of the evaluations table last shown: a table opened again keeps it."""
        self.last_grouping: str | None = None
        """Its grouping (``m``), kept likewise."""
        self._findings: tuple[object, FindingsReport] | None = None
        self._findings_lock = threading.Lock()
        self._figures_shown = False
        self.crash_line: str | None = None
        """The one line printed when an unexpected exception ended the app."""
        self._gone: dict[str, str] = {}
        """Runs removed underneath while open, whose leaving is done (run_gone), and the
        sentence that said so."""

    # -- run and source ----------------------------------------------------------------

    def on_mount(self) -> None:
        if not gc.isenabled():
            # `gero tui` starts without garbage collection (see cli/tui_cmd.py): back on once
            # the first screen has had time to paint.
            self.set_timer(1.0, gc.enable)
        # Once the first screen is up, import what `enter` needs (NumPy and the detail
        # modules, ~150 ms) in the background, so the first detail opens as fast as later ones.
        # On the overview: once its counts are on screen (figures_shown), not before.
        if self.start_screen == "evaluations":
            self.set_timer(PRELOAD_DELAY_S, self._preload)
        if self.run_id is None:
            from gero_tui.app.screens.empty import EmptyScreen

            self.push_screen(EmptyScreen(self.data_root))
            return
        self._info = api.run_info(self.run_id, self.data_root)
        # Starting on the table, the overview is made when escape asks for it (show_overview):
        # composing it first would delay the table's first paint.
        prefetch = self._prefetch
        if prefetch is not None and prefetch.done:
            # Read ahead while Textual loaded: the screen mounts with its data.
            self._prefetch = None
            opened = prefetch.take(self.run_id)
            if opened is not None:
                self._adopt(opened)
        if self.start_screen == "evaluations":
            # The overview's module (and the widgets it imports) loads when escape asks for
            # it: ~20 ms less before the table's first paint.
            self.push_screen(EvaluationsScreen())
        else:
            from gero_tui.app.screens.overview import OverviewScreen

            self.push_screen(OverviewScreen())
            if self.start_screen == "findings":
                from gero_tui.app.screens.findings import FindingsScreen

                self.push_screen(FindingsScreen())
        if self.source is None:
            self._open(self.run_id)

    def figures_shown(self) -> None:
        if self._figures_shown:
            return
        self._figures_shown = True
        if self._early_findings is not None:
            self._early_findings.release()
        if self.start_screen != "evaluations":
            self.set_timer(0.2, self._preload)  # after the frame that shows them

    @work(thread=True, group="preload", exit_on_error=False)
    def _preload(self) -> None:
        """Import the detail view's modules; an import error shows when the view opens."""
        import importlib

        for name in PRELOAD_MODULES:
            importlib.import_module(name)

    def run_info(self) -> RunInfo | None:
        return self._info

    def title_line(self) -> str:
        """Run id, date and versions, for the top line of each screen."""
        info = self._info
        if info is None:
            return "gero"
        runtimes = " · ".join(f"{name} {version}" for name, version in info.runtimes.items())
        state = STATUS_MARKS.get(info.status, "")
        return for_terminal(f"gero · run {info.run_id}{state} · {info.date} · {info.suite} · "
                            f"{runtimes or f'onnxruntime {info.onnxruntime_version}'} · "
                            f"onnx {info.onnx_version}")

    def findings(self, source: RunSource) -> FindingsReport:
        """The open run's findings, computed once per source (from any worker thread).

        Computing them writes the members table the evaluations filter reads; the lock keeps
        two screens from writing it at once."""
        from gero.query.finding_status import report_for

        with self._findings_lock:
            if self._findings is None or self._findings[0] is not source:
                early, self._early_findings = self._early_findings, None
                report = early.findings(source) if early is not None else None
                self._findings = (source, report if report is not None
                                  else report_for(source, self.data_root, source.run_id))
            return self._findings[1]

    def findings_ready(self, source: RunSource) -> FindingsReport | None:
        known = self._findings  # one read: a worker may replace it meanwhile
        return known[1] if known is not None and known[0] is source else None

    def require_source(self) -> RunSource:
        if self.source is None:
            raise StoreError("the run is still opening")
        return self.source

    @work(thread=True, exclusive=True, group="source", exit_on_error=False)
    def _open(self, run_id: str) -> None:
        prefetch, self._prefetch = self._prefetch, None
        opened = prefetch.take(run_id) if prefetch is not None else None
        if opened is not None:
            self.call_from_thread(self._adopt, opened)
            return
        try:
            source = open_source(self.data_root, run_id)
        except (GeroError, duckdb.Error) as e:
            self.post_message(self.SourceFailed(str(e)))
            return
        self.post_message(self.SourceOpened(source))

    def _adopt(self, opened: Opened) -> None:
        """Use what the prefetch opened (and its first page, if any)."""
        if isinstance(opened.page, Page) and opened.count is not None:
            self.first_page = (opened.page, opened.count)
        self.on_gero_app_source_opened(self.SourceOpened(opened.source))  # type: ignore[arg-type]

    def on_gero_app_source_opened(self, message: SourceOpened) -> None:
        old = self.source
        message.source.on_gone = self._post_gone
        self.run_id = message.source.run_id
        self._info = api.run_info(self.run_id, self.data_root)
        for problem in message.source.problems:
            self.notify(problem, title="Skipped a file", severity="warning", timeout=15)
        self.source = message.source  # the screens watching it show the new run
        if old is not None:
            old.close()

    def on_gero_app_source_failed(self, message: SourceFailed) -> None:
        self.notify(message.error, title="Cannot open the run", severity="error", timeout=15)

    def _post_gone(self, gone: RunGone) -> None:
        # Thread-safe: a query in a worker may be the one that finds the run gone.
        self.post_message(self.RunWentAway(gone))

    def on_gero_app_run_went_away(self, message: RunWentAway) -> None:
        self.run_gone(message.gone)

    def run_gone(self, gone: RunGone) -> None:
        """The open run was removed underneath (``gero gc --apply``): one line says so, the
        screens of that run close, and the newest run left opens with the run picker over it
        to choose another (escape keeps the newest); a root left without runs says how to
        make one. Once per run, however many screens and workers found it gone."""
        if gone.run_id in self._gone or gone.run_id != self.run_id:
            return
        self._gone[gone.run_id] = str(gone)
        self.clear_notifications()  # a screen's own failure that said it first
        # Not closed here: a worker may still be reading from it (it then fails on its own,
        # and its error is this one); DuckDB closes it once nothing holds it.
        self.source = None
        while len(self.screen_stack) > 1:
            self.pop_screen()
        runs = api.run_ids(self.data_root)
        if not runs:
            from gero_tui.app.screens.empty import EmptyScreen

            self.run_id, self._info = None, None
            super().notify(f"{gone}; no run is left", title="Run gone", severity="error",
                           timeout=30)
            self.push_screen(EmptyScreen(self.data_root))
            return
        from gero_tui.app.screens.overview import OverviewScreen

        newest = api.find_run(None, self.data_root, runs)
        super().notify(f"{gone}; showing {newest} (p: another run)", title="Run gone",
                       severity="error", timeout=30)
        self.switch_run(newest)
        self.push_screen(OverviewScreen())
        self.action_pick_run()

    def notify(self, message: str, *, title: str = "",
               severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """A toast, but not a screen's own failure over a run gone underneath: run_gone
        says that once."""
        if any(said in message for said in self._gone.values()):
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _handle_exception(self, error: Exception) -> None:
        """The open run gone under a screen that was reading it is no crash: leave the run
        (``run_gone``); any other error ends the app (Textual's handling)."""
        gone = _run_gone_in(error)
        if gone is None:
            super()._handle_exception(error)
            return
        self.post_message(self.RunWentAway(gone))

    # -- navigation --------------------------------------------------------------------

    def show_evaluations(self, table_filter: TableFilter, find: bool = False
                         ) -> AwaitMount | None:
        """Open the evaluations table (or reuse the open one) with ``table_filter``.

        A new table keeps the sort the last one had. ``find`` opens its find box; await
        the result so that the keys typed next reach the box.
        """
        for screen in self.screen_stack:
            if isinstance(screen, EvaluationsScreen):
                table = screen  # (the `is` below narrows `screen` back to Screen for mypy)
                while self.screen is not screen:
                    self.pop_screen()
                table.set_filter(table_filter)
                if find:
                    table.action_text_filter()
                return None
        return self.push_screen(EvaluationsScreen(table_filter, self.last_sort, find=find,
                                                  grouping=self.last_grouping))

    def show_overview(self) -> None:
        """Back to the overview: pop to it, or make it in place of the table opened first."""
        from gero_tui.app.screens.overview import OverviewScreen

        if not any(isinstance(s, OverviewScreen) for s in self.screen_stack):
            self.switch_screen(OverviewScreen())
            return
        while len(self.screen_stack) > 2 and not isinstance(self.screen, OverviewScreen):
            self.pop_screen()

    def action_findings(self) -> None:
        """``i``: the findings (the open one, or a new one over the current screen)."""
        from gero_tui.app.screens.findings import FindingsScreen

        for screen in self.screen_stack:
            if isinstance(screen, FindingsScreen):
                while self.screen is not screen:
                    self.pop_screen()
                return
        self.push_screen(FindingsScreen())

    def action_help(self) -> None:
        """Show every key of the current screen."""
        from gero_tui.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_pick_run(self) -> None:
        """Choose another run of the data root."""
        from gero_tui.app.screens.run_picker import RunPickerScreen

        if isinstance(self.screen, RunPickerScreen):  # `p p`: one picker
            return
        runs = api.list_runs(self.data_root)
        if not runs:
            self.notify(f"no runs in {self.data_root}", severity="warning")
            return

        def chosen(run_id: str | None) -> None:
            if run_id and run_id != self.run_id:
                self.switch_run(run_id)

        self.push_screen(RunPickerScreen(runs, self.run_id), chosen)

    def diff_runs(self, base: str) -> None:
        """``d`` in the run picker: every observation that differs from ``base`` to the open
        run (``gero diff BASE RUN``)."""
        from gero.query.diff import diff_runs
        from gero_tui.app.screens.diff import DiffScreen

        current, root = self.run_id, self.data_root
        if current is None or base == current:
            self.notify("choose another run than the open one to compare with", timeout=4)
            return
        self.push_screen(DiffScreen(f"{base} → {current} (gero diff {base} {current})",
                                    lambda: diff_runs(root, base, current)))

    def switch_run(self, run_id: str) -> None:
        """Open another run; the screens show it once its source is open."""
        self.run_id = run_id
        self._info = api.run_info(run_id, self.data_root)
        self._open(run_id)

    # -- what part 2 implements ----------------------------------------------------------

    def open_detail(self, observation_id: str, row_number: int | None = None,
                    replay: bool = False) -> None:
        # With `replay`, the verdict appears at the top of the detail, replayed in a worker.
        from gero_tui.app.screens.detail import DetailScreen

        self.push_screen(DetailScreen(self.require_source(), observation_id, replay=replay,
                                      row_number=row_number))

    def open_export(self, where: str, params: list[Any], selected: bool, count: int | None,
                    filter_text: str = "") -> None:
        from gero_tui.app.screens.export_dialog import ExportDialog, ExportScope

        what = "selected" if selected else "matching"
        shown = "?" if count is None else f"{count:,}"
        scope = ExportScope(where, tuple(params), f"{shown} {what} rows", count, filter_text,
                            sort=getattr(self.screen, "sort", None))
        current = getattr(self.screen, "current_observation_id", None)
        self.push_screen(ExportDialog(self.require_source(), scope, current_id=current))

    def on_evaluations_screen_export_rows(self, message: EvaluationsScreen.ExportRows) -> None:
        self.open_export(message.where, message.params, message.selected, message.count)

    def compare_runtimes(self, backend: str, optimization: str) -> None:
        from gero.query.diff import diff_backends
        from gero_runner.backends.names import path_label
        from gero_tui.app.screens.choice import ChoiceScreen
        from gero_tui.app.screens.diff import DiffScreen

        source = self.require_source()
        mine = backend if optimization == "-" else f"{backend}/{optimization}"
        others = [(b if o == "-" else f"{b}/{o}", path_label(str(b), str(o)))
                  for b, o in source.query("SELECT DISTINCT backend, optimization FROM obs "
                                           "ORDER BY ALL")
                  if b != backend]
        if not others:
            self.notify(f"no other runtime in this run to compare {mine} with", timeout=4)
            return
        root, run_id = self.data_root, source.run_id

        def chosen(against: str | None) -> None:
            if against is not None:
                self.push_screen(DiffScreen(
                    f"{mine} against {against} (gero diff {run_id} --backend {mine} "
                    f"--against {against})",
                    lambda: diff_backends(root, run_id, mine, against)))

        self.push_screen(ChoiceScreen(f"Compare {path_label(backend, optimization)} against",
                                      others), chosen)

    # -- command palette -----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Every action bound on the screen, by name, then Textual's own commands."""
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if binding.system or binding.action in seen or not active.enabled:
                continue
            seen.add(binding.action)
            title = binding.description or binding.action
            key = self.get_key_display(binding)
            yield SystemCommand(f"{title} ({key})", binding.tooltip or f"key: {key}",
                                partial(self.run_action, binding.action, active.node))
        yield from super().get_system_commands(screen)

    # -- an unexpected error -------------------------------------------------------------

    def _fatal_error(self) -> None:
        """An exception nothing handled: the app exits with status 1 (Textual sets it);
        `gero tui` prints one line once the terminal is back, the traceback kept in a file
        (Textual would print a screenful of locals)."""
        self.bell()
        self.crash_line = crash_line(self._exception)
        self._close_messages_no_wait()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised: say so; the explorer goes on (a run gone underneath is
        said once, by run_gone)."""
        if _run_gone_in(event.worker.error) is not None:
            return
        if (error := worker_failure(event)) is not None:
            self.notify(error, title="Worker failed", severity="error", timeout=15)


def _run_gone_in(error: BaseException | None) -> RunGone | None:
    """``error`` or the error it was raised from, when that is the open run gone."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, RunGone):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None
