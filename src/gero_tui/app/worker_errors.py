"""What a worker that raised says to the user: its error in one line, never a traceback.

Every worker of the explorer is started with ``exit_on_error=False``: an unexpected error
in a query or a replay is shown where the screen shows its status and the app goes on.
"""

from __future__ import annotations

from textual.worker import Worker, WorkerState


def worker_failure(event: Worker.StateChanged) -> str | None:
    """The error of a worker that ended by raising, as one line; None for any other state."""
    if event.state != WorkerState.ERROR:
        return None
    error = event.worker.error
    return f"{type(error).__name__}: {error}".splitlines()[0]
