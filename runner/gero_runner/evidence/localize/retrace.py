"""A trace that gives the row's own output again: a runtime may compile a graph differently
when its inner tensors are marked as outputs (OpenVINO at bf16 on tashkeel: the attention's
tensors marked, its output moves 0.35 from the stored row's; the LSTM's marked, it does
not). Where the traced run's output is not the stored one, each compared tensor is marked
alone with the output, and the trace is done again with only the tensors whose marking
leaves the output as stored: coarser (the nodes between them run as one region), but the
run the row measured."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from gero_runner.errors import ArtifactError
from gero_runner.evidence import subgraphs as sg
from gero_runner.evidence.localize.bounds import RUNTIME
from gero_runner.evidence.localize.figures import figure, rounding
from gero_runner.evidence.localize.search import Search
from gero_runner.evidence.localize.sides import run_side
from gero_runner.storage.artifacts import has_member, load_array

RETRACE_MAX = 16
"""Compared tensors each marked alone with the output (a compile each), spread over the
graph where there are more."""


def stored_output(directory: Path, s: Search) -> np.ndarray | None:
    """The path's own output as its run stored it (None where it was not kept)."""
    if not s.a.stored or not has_member(directory, s.a.stored):
        return None
    try:
        return load_array(directory, s.a.stored)
    except ArtifactError:
        return None


def _limit(s: Search) -> float:
    """The output's threshold (its floor, the path's own precision), but never half the
    row's own error or more: two bf16 runs 0.0083 apart are within bf16's roundings, yet
    not the same run for a row failed at 0.0095 (khmersm on OpenVINO bf16)."""
    fig = s.figures.get(s.output)
    threshold = fig.threshold if fig is not None and math.isfinite(fig.threshold) else 0.0
    try:
        row = float(s.row.get("scaled_error"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        row = math.nan
    if math.isfinite(row) and row > 0:
        threshold = min(threshold, row / 2)
    return max(threshold, rounding(np.dtype("float32")))


def off_stored(s: Search, stored: np.ndarray | None) -> float | None:
    """How far the traced run's output is from the stored one, where over the output's own
    threshold (None: it is the stored run, within it, or nothing to compare)."""
    if stored is None or s.a_final is None:
        return None
    off = figure(s.a_final, stored)[0]
    return off if off > _limit(s) else None


def retrace(directory: Path, s: Search) -> list[str] | None:
    """Where the traced run is not the stored one, the trace again with the tensors whose
    marking leaves the path's output as stored (the new window), or None: kept as traced
    (it was the stored run, the path is no runtime, or no coarser trace gives it again)."""
    stored = stored_output(directory, s)
    # The path's own noise, measured now: a later pass may judge against float32's
    # roundings (a bf16 row whose tensors all stay within bf16's), not the path's.
    s.traced_limit = _limit(s)
    off = off_stored(s, stored)
    if off is None or stored is None or s.a.kind != RUNTIME:
        return None
    limit = _limit(s)
    names = [t for t in s.order if t != s.output]
    if len(names) > RETRACE_MAX:
        step = len(names) / RETRACE_MAX
        names = [names[int(i * step)] for i in range(RETRACE_MAX)]
    keep = []
    for t in names:
        try:
            got = run_side(s.a, sg.prefix(s.model_a, [t, s.output]), s.inputs,
                           [t, s.output])[s.output]
        except Exception:  # a runtime that cannot mark it: not kept
            continue
        if figure(got, stored)[0] <= limit:
            keep.append(t)
    before = (list(s.order), set(s.available), dict(s.figures), s.a_final, s.b_final,
              s.a_values, s.b_values)
    shared = {i.name for i in s.model_a.graph.input} & {i.name for i in s.model_b.graph.input}
    s.order = [*keep, s.output]
    s.position = {t: i for i, t in enumerate(s.order)}
    s.available = shared | set(s.order)
    s.figures.clear()
    s.a_final = s.b_final = None
    window = s.window()
    if window:
        extra = [n for t in window for n in s.region_inputs(t) if n not in window]
        s.trace(window, list(dict.fromkeys(extra)), keep=True)
    again = off_stored(s, stored)
    if again is None:
        s.notes.append(f"with all {len(before[0])} compared tensors marked as outputs, "
                       f"{s.a.label}'s output is {off:.2g} scaled from the row's own; traced "
                       f"again with the {len(keep)} of {len(names)} tensors tried whose "
                       "marking leaves it as stored (the nodes between them run as one "
                       "region), which gives the row's output again")
        return window
    s.order, s.available, figures, s.a_final, s.b_final, s.a_values, s.b_values = before
    s.position = {t: i for i, t in enumerate(s.order)}
    s.figures.clear()
    s.figures.update(figures)
    s.notes.append(f"with all {len(s.order)} compared tensors marked as outputs, {s.a.label}'s "
                   f"output is {off:.2g} scaled from the row's own, and marking only the "
                   f"{len(keep)} of {len(names)} tried that each leave it as stored still "
                   f"gives {again:.2g}: the trace of every tensor is kept")
    return None
