"""Every screen's key bar lists each of its shown keys once, at 120 columns, and the help
lists each action once: the findings' bar left out `L` (hidden) and `enter` (the table's
hidden enter took the key), and `?` listed quit twice (q, and Textual's ctrl+q)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from conftest import settle
from detail_data import build
from rich.console import Console
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from gero_runner.errors import GeroError
from gero_tui.app.app import GeroApp
from gero_tui.app.screens.detail import DetailScreen
from gero_tui.app.screens.diff import DiffScreen
from gero_tui.app.screens.empty import EmptyScreen
from gero_tui.app.screens.evaluations import EvaluationsScreen
from gero_tui.app.screens.findings import FindingsScreen
from gero_tui.app.screens.help import HelpScreen
from gero_tui.app.screens.localize import LocalizeScreen
from gero_tui.app.screens.overview import OverviewScreen
from gero_tui.app.widgets.key_bar import KeyBar


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("key-bars")
    build(path)
    return path


def _shown(screen: Screen[Any]) -> set[str]:
    """The actions a bar must list: the shown bindings (in their BINDINGS) of the focused
    widget and its ancestors, of the screen and of the app, where they are enabled and their
    key is not another shown binding's, nearer the focus (a hidden one taking the key is
    what the bar must not suffer: the findings' table took enter)."""
    nodes: list[Any] = []
    node: Any = screen.focused
    while node is not None and node is not screen:
        nodes.append(node)
        node = node.parent
    nodes += [screen, screen.app]
    actions: set[str] = set()
    claimed: set[str] = set()
    for node in nodes:
        for binding in type(node).BINDINGS:
            if not isinstance(binding, Binding) or not binding.show:
                continue
            keys = set(binding.key.split(","))
            if keys <= claimed and not binding.priority:
                continue
            claimed |= keys
            if screen.app._check_action_state(binding.action, node) is not False:
                actions.add(binding.action)
    return actions


def _check_bar(screen: Screen[Any]) -> list[str]:
    listed = screen.query_one(KeyBar).listed()
    assert len(listed) == len(set(listed)), f"{type(screen).__name__}: {listed}"
    assert set(listed) == _shown(screen), type(screen).__name__
    return listed


def _fail() -> Any:
    raise GeroError("no run to compare with")


async def test_every_screens_key_bar_lists_its_keys_once(root: Path) -> None:
    app = GeroApp(root)
    seen: list[type[Screen[Any]]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key, kind in (("", OverviewScreen), ("v", EvaluationsScreen),
                          ("enter", DetailScreen), ("i", FindingsScreen)):
            if key:
                await pilot.press(key)
                await settle(pilot)
            assert isinstance(app.screen, kind)
            listed = _check_bar(app.screen)
            seen.append(kind)
            if kind is FindingsScreen:
                assert {"localize", "open_finding"} <= set(listed)
        await app.push_screen(DiffScreen("a → b", _fail))
        await settle(pilot)
        assert "open_entry" in _check_bar(app.screen)
        app.pop_screen()
        source = app.require_source()
        await app.push_screen(LocalizeScreen(root, "no-such-observation", source=source))
        await settle(pilot)
        assert "open_node" in _check_bar(app.screen)
        seen += [DiffScreen, LocalizeScreen]
    empty = GeroApp(root / "no-runs-here")
    async with empty.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(empty.screen, EmptyScreen)
        _check_bar(empty.screen)
        seen.append(EmptyScreen)
    # Every screen that has a key bar was looked at.
    import inspect

    from gero_tui.app import screens

    with_bar = {cls for cls in _screen_classes(screens) if "KeyBar()" in inspect.getsource(cls)}
    assert with_bar <= set(seen), with_bar - set(seen)


def _screen_classes(package: Any) -> list[type[Screen[Any]]]:
    import importlib
    import inspect
    import pkgutil

    found: list[type[Screen[Any]]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, Screen) and c.__module__ == module.__name__]
    return found


async def test_the_help_lists_each_action_once(root: Path) -> None:
    app = GeroApp(root, screen="findings")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#keys", Static).content)
        lines = [line.split() for line in console.export_text().splitlines() if line.strip()]
        quits = [words for words in lines if "Quit" in words]
        assert len(quits) == 1 and quits[0][:2] == ["q,", "^q"], quits
        described = [" ".join(words) for words in lines]
        assert sum(line.startswith("L Localize") for line in described) == 1
        assert sum(line.startswith("⏎ Its evaluations") for line in described) == 1
