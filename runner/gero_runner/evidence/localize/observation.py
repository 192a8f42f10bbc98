"""One observation localized: its case searched and judged (``localize_case``) in a child
process (a runtime may crash on a graph cut from the model), its temporary files in a
per-process scratch folder removed however the child ends, the result stored and, with
``-o``, its first origin written as a repro."""

from __future__ import annotations

import itertools
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gero_runner import backends
from gero_runner.errors import ArtifactError, GeroError
from gero_runner.evidence.localization import Localization, NodeFinding, Side
from gero_runner.evidence.localize.bounds import (
    ACCOUNTED,
    DEFAULT_TIMEOUT_S,
    RUNTIME,
    TRACE_BYTES,
)
from gero_runner.evidence.localize.judge import instrumented, judge
from gero_runner.evidence.localize.retrace import retrace
from gero_runner.evidence.localize.search import Search
from gero_runner.evidence.localize.sides import sides
from gero_runner.evidence.localize.store import store_localization, write_origin_repro
from gero_runner.evidence.localize.words import entered_before, summary
from gero_runner.evidence.rebuild import read_case_record
from gero_runner.storage.artifacts import evidence_directory, load_array, verify_manifest
from gero_runner.storage.outputs import check_writable, refuse_unusable_directory

if TYPE_CHECKING:
    import onnx


def localize_case(directory: Path, row: dict[str, Any]) -> tuple[Localization,
                                                                   dict[str, np.ndarray],
                                                                   bytes | None]:
    """Localize one observation (see the package, gero_runner.evidence.localize): the
    result, the tensors kept for the explorer, and the first origin's region as a model (its
    inputs among the tensors, ``repro/NAME``) for a repro."""
    start = time.perf_counter()
    verify_manifest(directory)
    record = read_case_record(directory)
    try:
        inputs = {name: load_array(directory, rel) for name, rel in record["inputs"].items()}
    except (KeyError, AttributeError) as e:
        raise ArtifactError(f"{directory / 'case.json'}: no inputs recorded ({e})") from e
    a, b = sides(directory, row, record)
    s = Search(directory, row, a, b, inputs)
    window = s.window()
    if window:
        extra = [n for t in window for n in s.region_inputs(t) if n not in window]
        s.trace(window, list(dict.fromkeys(extra)), keep=True)
    within_gate = str(row.get("result") or "") == "passed"
    if not within_gate:
        # Marking tensors may change what the runtime computes: a coarser trace that gives
        # the row's own output again is the one judged.
        window = retrace(directory, s) or window
    narrowed = ""
    if not within_gate and not any(f.diverges for f in s.figures.values()) and s.rounding:
        narrowed = _precision_cause(a, s.rounding, s.model_a)
        # A failed row whose tensors all stay within the path's own precision (bf16's
        # roundings, 0.03, over a row failed at 0.0095): judged again against float32's
        # roundings and the noise floors, as the row's gate judged its output.
        s.notes.append(f"no tensor differs by more than {s.a.label}'s own precision allows "
                       f"({s.rounding:.2g} scaled), yet the row failed "
                       f"({_gate(row) or 'its gate'}): its tensors are judged against "
                       "float32's roundings and their noise floors instead")
        s.rounding = 0.0
        s.figures.clear()
        window = s.window()
        if window:
            extra = [n for t in window for n in s.region_inputs(t) if n not in window]
            s.trace(window, list(dict.fromkeys(extra)), keep=True)
    started = time.perf_counter()
    if within_gate:
        # The row's own gate passed it: its difference is one the check allows, and a
        # node named as its origin would read as a fault. The tensors are still traced.
        origins: list[NodeFinding] = []
        amplifiers: list[NodeFinding] = []
        kept: dict[str, np.ndarray] = {}
        repro: bytes | None = None
    else:
        origins, amplifiers, kept, repro = judge(s, window)
        later = _later_stretch(s, window) if s.explained is not None and \
            s.explained < ACCOUNTED else []
        if later:
            # The first stretch explains too little, and past it the traced error jumps:
            # that stretch is traced and judged too (MiniLM's int8-static file against the
            # model: the quantised position embedding 5 %, the attention's scores
            # quantised at scale 1.3e36 later, 0.10 -> 0.86).
            first = s.explained
            s.notes.append(f"the stretch to {window[-1]} explains {first:.0%} of the final "
                           f"error; past it the traced error rises most at {later[-1]} "
                           f"({s.figures[later[-1]].scaled_error:.2g}): that stretch was "
                           "traced and judged too")
            extra = [n for t in later for n in s.region_inputs(t) if n not in later]
            s.trace(later, list(dict.fromkeys(extra)), keep=True)
            o2, a2, k2, r2 = judge(s, later)
            best = max((o.share or 0.0 for o in origins), default=0.0)
            if o2 and max((o.share or 0.0 for o in o2), default=0.0) > best:
                origins, repro = [*o2, *origins], r2  # the larger part of the error first
            else:
                origins = [*origins, *o2]
            amplifiers, kept = [*amplifiers, *a2], {**kept, **k2}
            known = [o.share for o in origins if o.share is not None]
            s.explained = sum(known) if known else first
        if narrowed and origins and not origins[0].cause:
            origins[0] = NodeFinding(**{**origins[0].__dict__, "cause": narrowed})
        before = (precision_before(a, s.model_a) if origins and entered_before(origins[0])
                  else "")
        if before and not origins[0].cause:
            origins[0] = NodeFinding(**{**origins[0].__dict__, "cause": before})
    s.phases["alone_and_shares_s"] = time.perf_counter() - started
    s.passes.append({k: round(v, 3) for k, v in s.phases.items()})
    fig = s.figures.get(s.output)
    final = fig.scaled_error if fig is not None else math.nan
    checked = instrumented(directory, s)
    loc = Localization(
        str(row.get("observation_id", "")), str(row.get("case_id", "")),
        str(row.get("check", "")), s.output, a.label, b.label, a.graph, b.graph,
        final, fig.threshold if fig is not None else math.nan, len(s.order),
        len(s.figures), s.passes,
        sorted(s.figures.values(), key=lambda f: f.position), origins, amplifiers,
        checked, "", time.perf_counter() - start, s.notes, unaccounted=s.unaccounted,
        within_gate=within_gate, renamed=[r.tensor for r in s.renamed],
        explained=s.explained)
    loc = Localization(**{**loc.__dict__, "summary": summary(loc, _gate(row),
                                                             _stored_error(row))})
    return loc, kept, repro


LATER_JUMP = 4.0
"""Past the first stretch judged, a traced tensor whose error is this many times the largest
of the traced tensors before it may end a later stretch judged (``_later_stretch``)."""


def _later_stretch(s: Search, window: list[str]) -> list[str]:
    """Past ``window``, the compared tensors up to the traced one whose error rises most
    over every traced one before it (and is at least ``LATER_JUMP`` times their largest; a
    tensor on a parallel branch that agrees is no baseline), from just after the traced one
    before it: empty where none jumps so, or where the stretch is over ``TRACE_BYTES``."""
    if not window:
        return []
    end = s.position[window[-1]]
    traced = sorted((f for f in s.figures.values() if f.name in s.position),
                    key=lambda f: s.position[f.name])
    best: tuple[float, str, str] | None = None
    highest = 0.0
    for before, f in itertools.pairwise(traced):
        if math.isfinite(before.scaled_error):
            highest = max(highest, before.scaled_error)
        if s.position[f.name] <= end or not f.diverges or not math.isfinite(f.scaled_error):
            continue
        rise = f.scaled_error - highest
        if f.scaled_error >= LATER_JUMP * highest and (best is None or rise > best[0]):
            best = (rise, before.name, f.name)
    if best is None:
        return []
    lo, hi = s.position[best[1]], s.position[best[2]]
    stretch = [t for t in s.order if lo < s.position[t] <= hi]
    return stretch if sum(s.size(t) for t in stretch) <= TRACE_BYTES else []


def _precision_cause(side: Side, allowance: float, model: onnx.ModelProto) -> str:
    """Where a failed row's tensors all stay within ``side``'s own precision: that
    precision, as the cause of an origin found below it ('' where the side declares none),
    with what the side quantizes at run time besides (``Backend.run_time_quantization``:
    OpenVINO's default path on int8-weight MatMuls, the larger part of MiniLM's error)."""
    if side.kind != RUNTIME:
        return ""
    runtime = backends.get(side.backend)
    precision = runtime.float_precision(side.settings) or ""
    if precision not in ("bf16", "f16"):
        return ""
    quantized = runtime.run_time_quantization(model.SerializeToString(), side.settings)
    return (f"{side.label} computes float32 in {precision} (its inference precision)"
            f"{' and ' + quantized if quantized else ''}: every "
            f"tensor's difference is within the {allowance:.2g} its roundings allow, and "
            "the row's gate is tighter")


def precision_before(side: Side, model: onnx.ModelProto | None = None) -> str:
    """Where the first origin's inputs are already further off than its own difference:
    ``side``'s reduced inference precision, which computes the nodes before the tensors
    compared too (frspell on OpenVINO bf16: the encoder GRU, fused away, is where it first
    shows), as the cause ('' where the side declares none), with what it quantizes at run
    time in ``model`` besides (as ``_precision_cause``)."""
    if side.kind != RUNTIME:
        return ""
    runtime = backends.get(side.backend)
    precision = runtime.float_precision(side.settings) or ""
    if precision not in ("bf16", "f16"):
        return ""
    quantized = (runtime.run_time_quantization(model.SerializeToString(), side.settings)
                 if model is not None else "")
    return (f"{side.label} computes float32 in {precision} (its inference precision)"
            f"{' and ' + quantized if quantized else ''}, in the "
            "nodes before the tensors compared too, where the difference its inputs carry "
            "was made")


def _stored_error(row: dict[str, Any]) -> float | None:
    """The row's own scaled error, as its run stored it."""
    try:
        value = float(row.get("scaled_error"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _gate(row: dict[str, Any]) -> str:
    """The row's own verdict in words, for a row its gate passed."""
    reason = str(row.get("reason") or "").strip()
    return reason.split(";")[0][:200] if reason else ""


def _child(directory: str, row: dict[str, Any], scratch: str
           ) -> tuple[Localization, dict[str, np.ndarray], bytes | None, float]:
    import resource

    # Every temporary file of this process (its work folder, tract's copy of a graph) goes
    # into the caller's scratch directory, which the caller removes however this ends.
    tempfile.tempdir = scratch
    loc, kept, repro = localize_case(Path(directory), row)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return loc, kept, repro, peak


class LocalizeFailed(GeroError):
    """The child that runs the paths again did not finish: it crashed (a runtime aborted on
    a graph gero cut from the model), was killed, ran out of time or failed inside. Not bad
    input: exit status 1."""

    exit_code = 1


SCRATCH_PREFIX = "gero-localize-"
"""The scratch directory of a localization in $TMPDIR (``gero-localize-<pid>-…``)."""


def _localize_isolated(directory: Path, row: dict[str, Any], timeout_s: float,
                       cancelled: Callable[[], bool] | None
                       ) -> tuple[Localization, dict[str, np.ndarray], bytes | None, float]:
    """``_child`` in a child process, its temporary files in a scratch directory removed
    however it ends (a kill -9 of this process: by the next localization)."""
    from gero_runner.evidence.repro import SCRATCH_PREFIX as REPRO_SCRATCH
    from gero_runner.process import isolate, scratch

    oid = str(row.get("observation_id"))[:12]
    scratch.sweep(REPRO_SCRATCH)  # what a killed `gero localize -o` left
    try:
        work = scratch.make(SCRATCH_PREFIX)
    except OSError as e:
        raise GeroError(f"localizing {oid}: no scratch folder can be made in "
                        f"{tempfile.gettempdir()} ({e.strerror or e}); set TMPDIR to a "
                        "writable folder") from None
    try:
        got: tuple[Localization, dict[str, np.ndarray], bytes | None, float] = \
            isolate.call_isolated(_child, str(directory), row, str(work),
                                  timeout_s=timeout_s, cancelled=cancelled)
    except isolate.IsolatedFailure as e:
        if e.raised is not None and issubclass(e.raised, GeroError):  # bad evidence
            text = str(e).removeprefix(f"{e.raised.__name__}: ")
            raise GeroError(f"localizing {oid}: {text}") from None
        # crashed with SIGABRT, was killed (SIGKILL: ...), timed out after N s
        what = {isolate.RAISED: f"failed ({e})",
                isolate.CANCELLED: "was cancelled"}.get(e.kind, str(e))
        raise LocalizeFailed(f"localizing {oid}: the child process that runs the paths "
                             f"again {what}; nothing was stored") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return got


def localize_observation(data_root: Path, row: dict[str, Any], output: Path | None = None,
                         timeout_s: float = DEFAULT_TIMEOUT_S,
                         cancelled: Callable[[], bool] | None = None) -> tuple[Localization,
                                                                              Path]:
    """Localize the observation ``row`` (a full row) in a child process (a runtime may
    crash on a cut graph), store the result, and with ``output`` write the first origin as
    a repro directory; (localization, stored file)."""
    directory = evidence_directory(data_root, row)
    if output is not None:
        refuse_unusable_directory(output)
    verify_manifest(directory)  # here too: bad evidence is one sentence, before any child
    check_writable(data_root, directory)  # the result is stored there: refused before work
    sides(directory, row, read_case_record(directory))
    loc, kept, repro, peak = _localize_isolated(directory, row, timeout_s, cancelled)
    loc = Localization(**{**loc.__dict__, "notes": [*loc.notes]})
    loc.passes.append({"peak_rss_mb": round(peak, 1)})
    if output is not None:
        loc = write_origin_repro(output, repro, kept, loc, row, timeout_s, str(data_root))
    return loc, store_localization(directory, loc, kept, data_root)
