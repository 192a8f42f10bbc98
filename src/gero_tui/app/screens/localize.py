"""Error through the graph: one observation's localization (``gero localize``), the scaled
error of each compared tensor in topological order as a terminal chart, origins and
amplifiers marked, and ``enter`` on a node its output and inputs side by side.

Opened with ``L`` from the detail view or the Findings screen. A stored localization
(``localize/OBSERVATION_ID.json`` beside the evidence) shows at once; otherwise it is
computed in a worker (a child process: the paths run again), and stored.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist
from textual.worker import get_current_worker

from gero import api
from gero.query.tensors import Evidence, analyse
from gero_runner.errors import GeroError
from gero_runner.escape import for_terminal
from gero_tui.app.base import leave
from gero_tui.app.widgets.key_bar import KeyBar
from gero_tui.app.widgets.tensor_view import TensorView

CHART_WIDTH = 28
LOW, HIGH = -9.0, 1.0
"""log10 of the scaled errors the chart spans (below: an empty bar; above: full)."""
ORIGIN, AMPLIFIER, CARRIER = "◆ origin", "▲ amplifier", "· carrier"


def bar(value: float, threshold: float, width: int = CHART_WIDTH) -> Text:
    """A scaled error as a bar on a log scale, the tensor's threshold as a tick."""
    def cells(x: float) -> int:
        if not x > 0:
            return 0
        if math.isinf(x):
            return width
        return max(0, min(width, round((math.log10(x) - LOW) / (HIGH - LOW) * width)))

    n, tick = cells(value), cells(threshold)
    text = Text()
    for i in range(width):
        if i < n:
            text.append("█", style="bold red" if value > threshold else "green")
        elif i == tick:
            text.append("│", style="yellow")
        else:
            text.append("·", style="dim")
    return text


def read_stored(path: Path) -> tuple[dict[str, Any] | None, dict[str, np.ndarray]]:
    """A stored localization (``api.localization_file``) and the tensors it kept beside it
    (None and {} when there is none)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, {}
    tensors: dict[str, np.ndarray] = {}
    try:
        with np.load(path.with_suffix(".npz"), allow_pickle=False) as kept:
            tensors = {k.replace("|", "/"): np.asarray(kept[k]) for k in kept.files}
    except (OSError, ValueError):
        pass
    return (data if isinstance(data, dict) else None), tensors


class LocalizeScreen(Screen[None]):
    """One observation's error through the graph."""

    CSS_PATH = "localize.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("enter", "open_node", "node", priority=True),  # not the table's hidden one
        Binding("o", "next_origin", "next origin"),
        Binding("i", "cycle_input", "its inputs"),
        Binding("a", "cycle_output", "alone/traced"),
    ]

    def __init__(self, data_root: Path, observation_id: str,
                 row: dict[str, Any] | None = None, source: Any = None) -> None:
        """``row``: the observation's full row, or None to read it from ``source`` (the
        app's run source) in the worker."""
        super().__init__()
        self.data_root = data_root
        self.row = row
        self.source = source
        self.observation_id = observation_id
        self.result: dict[str, Any] | None = None
        self.kept: dict[str, np.ndarray] = {}
        self.shown: str | None = None
        """The tensor whose node is open."""
        self.view = 0
        """What of the open node is side by side: 0 its output alone, 1 traced, 2+ inputs."""

    def compose(self) -> ComposeResult:
        yield Static("loading…", id="localize-summary")
        table: DataTable[Any] = DataTable(id="localize-nodes", cursor_type="row",
                                          zebra_stripes=True)
        yield table
        yield Static("", id="localize-node")
        yield TensorView(id="localize-tensor")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, width in (("#", 5), ("node", 28), ("op", 18), ("scaled error", 12),
                             ("through the graph (log scale, │ its threshold)", CHART_WIDTH),
                             ("", 12)):
            table.add_column(label, width=width)
        table.focus()
        self.load()

    @work(thread=True, exclusive=True, group="localize")
    def load(self) -> None:
        try:
            if self.row is None:
                from gero.query.detail import fetch_observation

                self.row = fetch_observation(self.source.cursor(), self.observation_id).fields
            path = api.localization_file(self.row, self.data_root)
            result, kept = read_stored(path)
            stored = result is not None
            if result is None:
                self.app.call_from_thread(
                    self.query_one("#localize-summary", Static).update,
                    Text("localizing… (both paths run again in the background)",
                         style="italic"))
                worker = get_current_worker()
                # In a child process (it imports ONNX and the runtimes), stopped when the
                # screen is left.
                loc = api.localize(self.row, self.data_root,
                                   cancelled=lambda: worker.is_cancelled)
                result, kept = read_stored(Path(loc["stored"]))
                result = result or loc
        except GeroError as e:
            self.app.call_from_thread(self._failed, f"✗ localize failed: {e}")
            return
        except Exception as e:  # localizing must never take the explorer down
            self.app.call_from_thread(self._failed, f"✗ localize failed unexpectedly: "
                                      f"{type(e).__name__}: {e}")
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.show_result, result, kept, stored)

    def _failed(self, message: str) -> None:
        self.query_one("#localize-summary", Static).update(Text(for_terminal(message),
                                                                style="bold red"))

    def show_result(self, result: dict[str, Any], kept: dict[str, np.ndarray],
                    stored: bool = True) -> None:
        self.result, self.kept = result, kept
        roles = {o["tensor"]: ORIGIN for o in result.get("origins", [])}
        # A node is an amplifier only where its own run showed the gain (a result stored
        # before roles has none: it called every such node one).
        roles.update({a["tensor"]: CARRIER if a.get("role") == "carrier" else AMPLIFIER
                      for a in result.get("amplifiers", []) if a["tensor"] not in roles})
        head = Text.assemble(
            ("error through the graph" + (" (stored)" if stored else ""), "bold"),
            for_terminal(f" · {result.get('actual')} against {result.get('reference')} · "
                         f"{result.get('output_name')} · {len(result.get('tensors', []))} "
                         "tensors compared"), "\n",
            (for_terminal(result.get("summary", "")),
             "bold" if result.get("origins") else "green"))
        self.query_one("#localize-summary", Static).update(head)
        table = self.query_one(DataTable)
        table.clear()
        for t in result.get("tensors", []):
            role = roles.get(t["name"], "")
            table.add_row(
                Text(str(t["position"]), justify="right"),
                Text(for_terminal(t.get("node") or t["name"]), style="bold" if role else ""),
                Text(for_terminal(t.get("op_type", ""))),
                Text(f"{t['scaled_error']:.2g}", justify="right",
                     style="red" if t.get("diverges") else ""),
                bar(float(t["scaled_error"]), float(t["threshold"])),
                Text(role, style="bold red" if role == ORIGIN else "yellow"),
                key=t["name"])
        origins = [o["tensor"] for o in result.get("origins", [])]
        if origins:
            self._move_to(origins[0])

    def _move_to(self, tensor: str) -> None:
        table = self.query_one(DataTable)
        with contextlib.suppress(RowDoesNotExist):  # not in the table: stay where we are
            table.move_cursor(row=table.get_row_index(tensor))

    def _finding(self, tensor: str) -> dict[str, Any] | None:
        assert self.result is not None
        for group in ("origins", "amplifiers"):
            for f in self.result.get(group, []):
                if f["tensor"] == tensor:
                    role = (ORIGIN if group == "origins" else
                            CARRIER if f.get("role") == "carrier" else AMPLIFIER)
                    return {**f, "role": role}
        return None

    def highlighted(self) -> str | None:
        if self.result is None:
            return None
        table = self.query_one(DataTable)
        tensors = self.result.get("tensors", [])
        if not tensors or table.cursor_row < 0:
            return None
        return str(tensors[min(table.cursor_row, len(tensors) - 1)]["name"])

    def action_open_node(self) -> None:
        tensor = self.highlighted()
        if tensor is not None:
            self.shown, self.view = tensor, 0
            self._show_node()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """``enter`` on a node (the table takes the key): its tensors side by side."""
        self.action_open_node()

    def action_next_origin(self) -> None:
        if self.result is None or not self.result.get("origins"):
            return
        names = [o["tensor"] for o in self.result["origins"]]
        current = self.highlighted()
        nxt = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self._move_to(nxt)

    def _inputs(self, tensor: str) -> list[str]:
        prefix = f"{tensor}/input/"
        return [k.removeprefix(prefix) for k in self.kept if k.startswith(prefix)]

    def action_cycle_output(self) -> None:
        if self.shown is not None:
            self.view = 1 - self.view if self.view < 2 else 0
            self._show_node()

    def action_cycle_input(self) -> None:
        if self.shown is not None:
            n = len(self._inputs(self.shown))
            self.view = 2 + ((self.view - 1) % n if self.view >= 2 and n else 0) if n else 0
            self._show_node()

    def _pair(self, tensor: str) -> tuple[np.ndarray | None, np.ndarray | None, str]:
        """The two tensors side by side for the open node's current view, and a label."""
        if self.view >= 2:
            inputs = self._inputs(tensor)
            name = inputs[(self.view - 2) % len(inputs)]
            return (self.kept.get(f"{tensor}/input-traced/{name}"),
                    self.kept.get(f"{tensor}/input/{name}"),
                    f"input {name}: the path's own value end to end against the reference's "
                    "(what both were given when run alone)")
        kind = "alone" if self.view == 0 else "traced"
        words = ("alone, from the reference's inputs on both paths" if kind == "alone"
                 else "end to end, each path from its own inputs")
        return (self.kept.get(f"{tensor}/{kind}/actual"),
                self.kept.get(f"{tensor}/{kind}/reference"), f"output {tensor} {words}")

    def _show_node(self) -> None:
        assert self.shown is not None and self.result is not None
        tensor = self.shown
        finding = self._finding(tensor)
        info = self.query_one("#localize-node", Static)
        view = self.query_one("#localize-tensor", TensorView)
        if finding is None:
            fig = next(t for t in self.result["tensors"] if t["name"] == tensor)
            info.update(Text.assemble(
                (for_terminal(fig.get('node') or tensor), "bold"),
                for_terminal(f" ({fig.get('op_type')}) → {tensor}: ") +
                f"scaled error {fig['scaled_error']:.3g} end to end, floor {fig['floor']:.2g}, "
                f"threshold {fig['threshold']:.2g}; not run alone (it does not diverge, or "
                "lies outside the stretch traced), so no tensors are kept for it"))
            view.display = False
            return
        ins = for_terminal(", ".join(f"{n} {v:.2g}" for n, v in finding.get("inputs", {}).items())
                           or "—")
        share = finding.get("share")
        a, r, label = self._pair(tensor)
        info.update(Text.assemble(
            (for_terminal(f"{finding['role']}  {finding['node']} ({finding['op_type']})"), "bold"),
            f" → {for_terminal(tensor)}: inputs {ins}; alone "
            f"{finding['local_scaled_error']:.3g}, end to end "
            f"{finding['output_scaled_error']:.3g}, gain {finding['gain']:.3g}"
            + (f", {share:.0%} of the final error" if isinstance(share, float) else "")
            + f"\n{len(finding.get('nodes', []))} node(s): "
            + for_terminal(", ".join(finding.get("nodes", [])[:6])),
            ("\n" + for_terminal(label) + " · a alone/traced · i its inputs", "dim")))
        if a is None or r is None or a.shape != r.shape:
            view.display = True
            view.show_message("these tensors were not kept (over 4 MiB, or not traced)")
            return
        if a.dtype != r.dtype and a.dtype.kind == r.dtype.kind == "f":
            wide = np.result_type(a.dtype, r.dtype)  # a float16 overflow stays visible
            a, r = a.astype(wide), r.astype(wide)
        evidence = Evidence(Path("."), a, r, None,
                            f"{self.result.get('actual')}", f"{self.result.get('reference')}",
                            0.0, float(finding.get("threshold", 0.0)))
        try:
            analysis = analyse(evidence)
        except Exception as e:  # shown, not raised
            view.display = True
            view.show_message(f"cannot compare these tensors: {for_terminal(e)}")
            return
        view.display = True
        view.show(evidence, analysis, (str(self.result.get("actual")),
                                       str(self.result.get("reference"))))

    def action_back(self) -> None:
        leave(self)
