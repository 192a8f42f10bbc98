"""What the explorer's screens may ask of the app: the open run and navigation.

``GeroApp`` implements it. Screens are typed against this class and import this module,
never ``app.py`` (which imports the screens): the app tells them about a new run through
the reactive ``source`` they watch, not by calling each screen it knows of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import App
from textual.await_complete import AwaitComplete
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widget import AwaitMount

from gero.api import RunInfo
from gero.query.source import RunSource
from gero.query.table import Page, TableFilter, TableSort
from gero_runner.escape import for_terminal

if TYPE_CHECKING:
    from gero.query.findings import FindingsReport

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    """A modal screen that dismisses once.

    Keys typed fast (``enter enter``) are queued in the dialog's widgets before the first
    dismisses it; the second would pop the screen below (a blank screen), then nothing
    (``ScreenStackError``). A dialog no longer on top ignores them."""

    def dismiss(self, result: ResultT | None = None) -> AwaitComplete:
        if not self.is_active:
            done: AwaitComplete = AwaitComplete.nothing()  # type: ignore[no-untyped-call]
            return done
        return super().dismiss(result)


def readable_text(readable: int, recorded: int | None) -> str | None:
    """"18,848 of 28,982 readable" for a run some of whose files could not be read; None
    for a whole run."""
    if recorded is None or readable >= recorded:
        return None
    return f"{readable:,} of {recorded:,} readable"


def leave(screen: Screen[Any]) -> None:
    """Pop ``screen`` if it is on top (a key queued before it was popped does nothing)."""
    if screen.is_active:
        screen.app.pop_screen()


class ExplorerApp(App[None]):
    """The explorer's app as its screens see it."""

    source: var[RunSource | None] = var(None, always_update=True)
    """The open run, once its worker has opened it; screens watch it
    (``self.watch(self.app, "source", ...)``) to show a new run."""
    first_page: tuple[Page, int] | None = None
    """The unfiltered table's first page and row count, read ahead; taken once."""
    last_sort: TableSort = TableSort()
    """The sort of the evaluations table last shown: a table opened again keeps it."""
    last_grouping: str | None = None
    """Its grouping (``m``), kept likewise."""

    def run_info(self) -> RunInfo | None:
        raise NotImplementedError

    def notify(self, message: str, *, title: str = "",
               severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every toast as plain text (a screen's ``notify`` comes here too): a message may
        quote a run's names, whose ``[bold]`` must not be markup nor their ESC reach the
        terminal."""
        super().notify(for_terminal(message, newlines=True), title=for_terminal(title),
                       severity=severity, timeout=timeout, markup=False)

    def figures_shown(self) -> None:
        """The first screen shows its figures: what waited for them may start (the
        findings, the detail modules' import)."""

    def recorded_count(self, source: RunSource) -> int | None:
        """The observations the run recorded, where some of its files were skipped (its
        counts then cover fewer: ``readable_text``); None for a run read whole."""
        info = self.run_info()
        if not source.problems or info is None or info.run_id != source.run_id:
            return None
        return info.observation_count

    def readable_note(self, source: RunSource) -> str | None:
        """``readable_text`` of the open run (counts its rows: call it from a worker)."""
        recorded = self.recorded_count(source)
        if recorded is None:
            return None
        rows = source.query("SELECT count(*) FROM obs")
        return readable_text(int(rows[0][0]) if rows else 0, recorded)

    def title_line(self) -> str:
        """Run id, date and versions, for the top line of each screen (plain text, control
        characters escaped: show it as a ``Text``, never as markup)."""
        raise NotImplementedError

    def require_source(self) -> RunSource:
        """The open run, or a StoreError while it is still opening."""
        raise NotImplementedError

    def findings(self, source: RunSource) -> FindingsReport:
        """The open run's findings (from any worker thread)."""
        raise NotImplementedError

    def findings_ready(self, source: RunSource) -> FindingsReport | None:
        """The open run's findings if already computed, without waiting (UI thread)."""
        raise NotImplementedError

    def show_evaluations(self, table_filter: TableFilter, find: bool = False
                         ) -> AwaitMount | None:
        """Open the evaluations table (or reuse the open one) with ``table_filter``;
        ``find``: with its find box open (await the result, so the next keys reach it)."""
        raise NotImplementedError

    def open_detail(self, observation_id: str, row_number: int | None = None,
                    replay: bool = False) -> None:
        """Push one evaluation's detail now (``replay``: and replay it)."""
        raise NotImplementedError

    def open_export(self, where: str, params: list[Any], selected: bool, count: int | None,
                    filter_text: str = "") -> None:
        """Push the export dialog for the rows ``where`` matches (``filter_text``: the
        filter in the user's words, for a report's header)."""
        raise NotImplementedError

    def show_overview(self) -> None:
        raise NotImplementedError

    def diff_runs(self, base: str) -> None:
        """``gero diff BASE RUN`` with the open run: the observations that differ."""
        raise NotImplementedError

    def compare_runtimes(self, backend: str, optimization: str) -> None:
        """``gero diff --backend X --against Y`` on the open run: choose Y, then the diff."""
        raise NotImplementedError
