"""A minimal host app for the detail-side screens, used by their tests and for looking at
them in tmux before (and independently of) the full explorer."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from textual.app import App

from gero.query.source import RunSource, open_source
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.export_dialog import ExportDialog, ExportScope
from gero_tui.app.screens.op_histogram import OpHistogramScreen


class Harness(App[None]):
    """Opens one screen (detail, op histogram or export dialog) over a data root."""

    def __init__(self, data_root: Path, screen: str, target: str,
                 directory: Path | None = None) -> None:
        super().__init__()
        self.source: RunSource = open_source(data_root)
        self.screen_name, self.target, self.directory = screen, target, directory

    def on_mount(self) -> None:
        if self.screen_name == "detail":
            self.push_screen(DetailScreen(self.source, self.target))
        elif self.screen_name == "op":
            self.push_screen(OpHistogramScreen(self.source, self.target))
        else:
            self.push_screen(ExportDialog(self.source, ExportScope(description="all 4 rows"),
                                          current_id=self.target, directory=self.directory))



def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async pilot test with asyncio (no async pytest plugin is installed)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


if __name__ == "__main__":
    Harness(Path(sys.argv[1]), sys.argv[2], sys.argv[3]).run()
