"""The explorer's own consistency: every screen's CSS in a sibling .tcss file, result classes
in the palette's colours (ANSI red and magenta look alike in many themes)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

from textual.screen import Screen

from gero_tui.app import screens
from gero_tui.app.widgets.palette import CLASS_COLORS


def _screen_classes() -> list[type[Screen[object]]]:
    found = []
    for info in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"{screens.__name__}.{info.name}")
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, Screen) and c.__module__ == module.__name__]
    return found


def test_every_screen_keeps_its_css_in_a_tcss_file() -> None:
    classes = _screen_classes()
    assert len(classes) >= 10
    for cls in classes:
        assert not cls.__dict__.get("DEFAULT_CSS"), f"{cls.__name__}: CSS inline"
        path = cls.__dict__.get("CSS_PATH")
        if path is not None:
            assert (Path(inspect.getfile(cls)).parent / str(path)).is_file(), cls.__name__


def test_the_detail_view_colours_classes_as_the_palette_does() -> None:
    from gero_tui.app.screens.detail import _RESULT_STYLE

    assert {k: v.split()[-1] for k, v in _RESULT_STYLE.items()} == CLASS_COLORS
