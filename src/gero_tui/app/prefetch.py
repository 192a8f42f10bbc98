"""Open the run and read the table's first page while Textual is still being imported.

``gero tui`` starts this before it imports the app: DuckDB runs its queries without the
GIL, so on a second core the first page is ready by the time the evaluations screen is
mounted, and the table paints with data at once instead of queueing its queries behind
Textual's start-up. Imports nothing of Textual (the point is to run before it loads).

Starting on the overview or the findings, the thread then computes the run's findings
(read back from the data root's cache, or grouped): `i` pressed as the overview paints
finds them ready instead of starting them behind the overview's own work. On the overview
it waits until the overview's counts are on screen (``release``): grouping a million rows
beside the overview's first queries delayed its first frame by 0.5-1 s.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gero.query.findings import FindingsReport

FIRST_PAGE_ROWS = 128
"""Rows read ahead: more than a terminal shows (the table asks again if not)."""


@dataclass
class Opened:
    """What the prefetch found: the open run and, when asked for, its first page."""

    source: object
    """A ``gero.query.source.RunSource`` (typed loosely: not imported at module load)."""
    page: object | None
    """A ``gero.query.table.Page`` of the unfiltered table in run order, or None."""
    count: int | None
    """Rows of the run, with the page."""


class Prefetch:
    """A thread that opens ``run`` of ``data_root`` (and reads the first page if asked)."""

    def __init__(self, data_root: Path, run: str | None, first_page: bool,
                 findings: bool = False, findings_now: bool = False) -> None:
        """``findings``: compute the findings once the run is open, after ``release``
        (at once with ``findings_now``: the screen shown first is the findings)."""
        self.data_root = Path(data_root)
        self.run = run
        self._first_page = first_page
        self._findings = findings
        self._released = threading.Event()
        if findings_now:
            self._released.set()
        self._result: Opened | None = None
        self._opened = threading.Event()
        self._report: tuple[object, FindingsReport] | None = None
        """(source, FindingsReport) once computed."""
        self._thread = threading.Thread(target=self._work, name="gero-prefetch", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            from gero.query.source import open_source
            from gero.query.table import TableFilter, TableQuery, TableSort

            source = open_source(self.data_root, self.run)
            page = count = None
            if self._first_page:
                query = TableQuery(source)
                try:
                    page = query.page(TableFilter(), TableSort(), 0, FIRST_PAGE_ROWS)
                    count = (len(page.rows) if len(page.rows) < FIRST_PAGE_ROWS
                             else query.count(TableFilter()))
                finally:
                    query.close()
            self._result = Opened(source, page, count)
        except Exception:  # the app opens the run again and reports the error
            self._result = None
            return
        finally:
            self._opened.set()
        if self._findings:
            self._released.wait()
            try:
                from gero.query.finding_status import report_for

                self._report = (source, report_for(source, self.data_root, source.run_id))
            except Exception:  # the screen that needs them computes them and says why not
                self._report = None

    def release(self) -> None:
        """The first screen has shown its figures: the findings may be computed now."""
        self._released.set()

    @property
    def done(self) -> bool:
        """Whether the run is open (``take`` then returns at once)."""
        return self._opened.is_set()

    def take(self, run_id: str, timeout: float = 30.0) -> Opened | None:
        """The result for ``run_id`` (waits for the run to open), or None if it failed or
        differs."""
        self._opened.wait(timeout)
        result, self._result = self._result, None
        if result is None:
            return None
        if getattr(result.source, "run_id", None) != run_id:
            result.source.close()  # type: ignore[attr-defined]
            return None
        return result

    def findings(self, source: object, timeout: float = 60.0) -> FindingsReport | None:
        """The ``FindingsReport`` of ``source`` if this thread computes it (waits for it),
        else None at once."""
        if not self._findings:
            return None
        self._released.set()  # asked for: no more waiting for the first screen
        self._thread.join(timeout)
        known = self._report
        return known[1] if known is not None and known[0] is source else None
