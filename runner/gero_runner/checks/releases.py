"""The ``releases`` check (issue 42): each setting of a runtime's release against the same
setting of its reference release (the first of that runtime's releases the run names), on
the same inputs, and which of the two the float64 result is closer to where they differ.

A release changes a result when any bit of an output changes: a correctly rounded float16
Sqrt moves one ulp, well inside any tolerance, and is still what a user upgrading asks
about. So a row is ``passed`` only when the outputs are bit-identical; any change is a
``divergence`` whose arbiter says its direction, decided at the elements that changed:
``actual`` (the release is closer to float64: it got better), ``reference`` (further: the
reference release was closer) or ``tie`` (both equally far: a change of rounding, not of
accuracy); '-' where the case has no float64 result. Its figures say how much moved
(elements, max |Δ|, ulps) and whether that is inside the case's tolerance.
"""

from __future__ import annotations

import functools

import numpy as np

from gero_runner.backends.names import release_of, title
from gero_runner.classify import NOT_APPLICABLE, TIE, arbiter_side, format_ulp
from gero_runner.execution.context import CaseContext, PathResult
from gero_runner.metrics.compare import ACTUAL, REFERENCE
from gero_runner.schema import DIVERGENCE, EXECUTION, PASSED, Observation

RELEASES = "releases"
"""The check's name on its rows."""
DIRECTION = {ACTUAL: "closer to float64", REFERENCE: "further from float64",
             TIE: "equally far from float64 (a change of rounding, not of accuracy)",
             NOT_APPLICABLE: "no float64 result to say which is closer"}
"""How a row's reason names its arbiter."""
SHORT = {ACTUAL: "closer to float64", REFERENCE: "further from float64",
         TIE: "equally far from float64", NOT_APPLICABLE: "no float64 result"}
"""Its failure kind's words (``law:changed since ONNX Runtime 1.20.1, closer to float64``):
the findings group a release's changes by them and title them with them."""


def runtime_of(backend: str) -> str:
    """The runtime a backend is a release of ("onnxruntime==1.20.1" -> "onnxruntime"); a
    runtime is its own installed release."""
    release = release_of(backend)
    return release[0] if release else backend


def release_name(path: PathResult) -> str:
    """How a sentence names a path's release: "ONNX Runtime 1.20.1"."""
    release = release_of(path.backend)
    return title(path.backend) if release else f"{title(path.backend)} {path.version}"


def pairs(ctx: CaseContext) -> list[tuple[PathResult, PathResult]]:
    """(release path, reference release's path of the same setting) for every runtime the
    run names in more than one release; the reference release is the first named."""
    order = list(ctx.settings.backends)
    wanted = None if ctx.family_paths is None else set(ctx.family_paths)
    out = []
    for runtime in dict.fromkeys(runtime_of(b) for b in order):
        releases = [b for b in order if runtime_of(b) == runtime]
        if len(releases) < 2:
            continue
        reference, others = releases[0], releases[1:]
        by_setting = {p.optimization: p for p in ctx.paths.values() if p.backend == reference}
        for p in ctx.paths.values():
            if p.backend in others and (wanted is None or p.name in wanted):
                q = by_setting.get(p.optimization)
                if q is not None:
                    out.append((p, q))
    return out


def uncompared(ctx: CaseContext, actual: PathResult, reference: PathResult) -> str:
    """A note naming the settings one of two releases has and the other lacks (tract 0.23
    has no unoptimised path): they are not compared, and the rows say so."""
    def settings(backend: str) -> list[str]:
        return [p.optimization for p in ctx.paths.values() if p.backend == backend]

    mine, theirs = settings(actual.backend), settings(reference.backend)
    alone = [(release_name(reference), s) for s in theirs if s not in mine]
    alone += [(release_name(actual), s) for s in mine if s not in theirs]
    if not alone:
        return ""
    named = ", ".join(f"{s} (only {who} has it)" for who, s in alone)
    return f"not compared between {release_name(actual)} and {release_name(reference)}: {named}"


def run_releases(ctx: CaseContext) -> list[Observation]:
    rows = []
    for actual, reference in pairs(ctx):
        rows += compare_releases(ctx, actual, reference)
    return rows


def _ulps(a: np.ndarray, r: np.ndarray) -> int:
    """The largest distance in units in the last place between two float arrays' elements
    (0 for integers and other kinds)."""
    if a.dtype != r.dtype or a.dtype.kind != "f" or not a.size:
        return 0
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    lowest = -(1 << (8 * a.dtype.itemsize - 1))

    def ordered(x: np.ndarray) -> np.ndarray:
        # the bit patterns in the floats' order: a negative float's counts down from zero
        i = x.view(bits).astype(np.int64)
        return np.where(i < 0, lowest - i, i)

    finite = np.isfinite(a) & np.isfinite(r)
    return int(np.abs(ordered(a[finite]) - ordered(r[finite])).max(initial=0))


def bits_differ(a: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Where two arrays of one shape and dtype differ bit for bit (-0.0 differs from 0.0,
    which ``==`` calls equal)."""
    if a.dtype.kind in "fc" and a.dtype.itemsize in (2, 4, 8, 16):
        unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}[a.dtype.itemsize]
        x = np.ascontiguousarray(a).view(unsigned).reshape((*a.shape, -1))
        y = np.ascontiguousarray(r).view(unsigned).reshape((*r.shape, -1))
        return np.asarray((x != y).any(axis=-1))
    return np.asarray(a != r)


def direction(a: np.ndarray, r: np.ndarray, truth: np.ndarray | None) -> str:
    """Which release float64 sides with at the elements that changed (``arbiter_side``)."""
    if truth is None or np.shape(truth) != a.shape or a.dtype.kind not in "fiu":
        return NOT_APPLICABLE
    with np.errstate(invalid="ignore"):
        changed = ~((a == r) | (np.isnan(a) & np.isnan(r)))
    t = np.asarray(truth, dtype=np.float64)[changed]
    return arbiter_side(_distance(a[changed], t), _distance(r[changed], t))


def _distance(x: np.ndarray, truth: np.ndarray) -> tuple[int, float]:
    """(elements infinitely far, max finite distance) from float64, as the arbiter of the
    other comparisons measures (``classify.arbiter``): equal values, NaN for NaN, are 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        x = x.astype(np.float64)
        same = (x == truth) | (np.isnan(x) & np.isnan(truth))
        d = np.where(same, 0.0, np.abs(x - truth))
    infinite = ~np.isfinite(d)
    return int(infinite.sum()), float(d[~infinite].max(initial=0.0))


def compare_releases(ctx: CaseContext, actual: PathResult, reference: PathResult
                     ) -> list[Observation]:
    """One row per output: the release's setting against the reference release's."""
    rows = []
    exact = list((ctx.case.expected_exact or {}).values())
    new, old = release_name(actual), release_name(reference)
    for j, name in enumerate(ctx.output_names):
        dtype = ctx.case.dtype
        row = functools.partial(ctx.row, check=RELEASES, output_name=name, actual=actual,
                                # as a levels row names its base: a path localize can run
                                reference_name=f"{reference.backend}:{reference.optimization}",
                                reference_version=reference.version,
                                reference_ms=reference.median_ms,
                                note=uncompared(ctx, actual, reference))
        if not (actual.ok and reference.ok):
            if actual.ok or reference.ok:  # one ran, the other did not: a change
                failed = reference if actual.ok else actual
                rtol, atol = ctx.tolerance(dtype)
                rows.append(row(dtype=dtype, cmp=None, rtol=rtol, atol=atol,
                                    result=EXECUTION, error=failed.error or "",
                                    reason=f"{release_name(failed)} failed where "
                                    f"{release_name(actual if actual.ok else reference)} "
                                    f"ran ({actual.optimization}): {failed.error}"))
            continue
        assert actual.outputs is not None and reference.outputs is not None
        if j >= len(actual.outputs) or j >= len(reference.outputs):
            continue
        a, r = actual.outputs[j], reference.outputs[j]
        dtype = str(r.dtype)
        rtol, atol = ctx.tolerance(dtype)
        cmp = ctx.compare(a, r, rtol, atol)
        row = functools.partial(row, actual_hash=ctx.digest(a), reference_hash=ctx.digest(r),
                                actual_file=actual.files[j],
                                reference_file=reference.files[j])
        if cmp.bit_exact:
            rows.append(row(dtype=dtype, cmp=cmp, rtol=rtol, atol=atol,
                                result=PASSED, reason=f"{new} gives the same bits as {old}"))
            continue
        side = NOT_APPLICABLE
        if a.shape == r.shape and a.dtype == r.dtype:
            side = direction(a, r, exact[j] if j < len(exact) else None)
        same_layout = a.shape == r.shape and a.dtype == r.dtype
        changed = int(bits_differ(a, r).sum()) if same_layout else cmp.element_count
        size = (f"max |Δ| {cmp.max_abs_error:.3g}, {format_ulp(_ulps(a, r))} ulp"
                if a.dtype.kind == "f" and same_layout else "")
        if size and not cmp.max_abs_error > 0:  # equal values, other bits: -0.0 for 0.0
            size = "equal values: the sign of a zero or a NaN's bits"
        inside = ("inside" if cmp.mismatch_count == 0 else "outside") + " tolerance"
        rows.append(row(
            dtype=dtype, cmp=cmp, rtol=rtol, atol=atol, result=DIVERGENCE,
            arbiter=side, failure_kind=f"law:changed since {old}, {SHORT[side]}",
            reason=f"{new} changed {ctx.case.op_type} ({dtype}) output {name!r} at "
            f"{actual.optimization} from {old} on {changed} of {cmp.element_count} elements "
            f"({', '.join(filter(None, (size, inside)))}): {DIRECTION[side]}",
            figures={"changed": changed, "ulps": _ulps(a, r), "direction": side}))
    return rows
