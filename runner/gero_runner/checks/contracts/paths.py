"""Running a path (a runtime's setting or the ReferenceEvaluator) on graphs other than the case's,
and turning a law's outcome into an observation row with its evidence files.

Shared by the contract and the variant families.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gero_runner import backends
from gero_runner.case import MODEL_SUITES, Arrays
from gero_runner.checks.contracts import laws
from gero_runner.checks.contracts.laws import LawResult
from gero_runner.classify import failure_kind
from gero_runner.errors import GeroError
from gero_runner.execution.paths import kept_version, note_running, path_outputs
from gero_runner.facts import NAN, law_cause, law_name
from gero_runner.schema import EXECUTION, PASSED, Observation
from gero_runner.storage.hashing import npy_bytes, sha256
from gero_runner.storage.path_outputs import Stored, path_key

if TYPE_CHECKING:
    from gero_runner.execution.context import CaseContext, PathResult


def base_paths(ctx: CaseContext) -> list[PathResult]:
    """The paths every law is checked on: each runtime's settings and the ReferenceEvaluator,
    where the case itself ran (a failed path is already an execution row of its own; data
    paths such as the float64 formula are not executions). A split case checks each path
    in its own part (``ctx.family_paths``)."""
    only = ctx.family_paths
    return [p for p in ctx.paths.values() if p.ok and backends.is_backend(p.backend)
            and (only is None or p.name in only)]


def family_paths(ctx: CaseContext, what: str, names: tuple[str, ...],
                 known: Iterable[str]) -> tuple[list[PathResult], Evidence]:
    """What a check family (contracts, variants) starts from: the paths it runs on and its
    evidence, once every name the case asks for is a known one."""
    known = tuple(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise GeroError(f"case {ctx.case.case_id}: unknown {what}(s) {', '.join(unknown)}; "
                        f"known: {', '.join(known)}")
    return base_paths(ctx), Evidence(ctx)


class PathRunner:
    """One path on one graph: the session (or evaluator) is built once, on first use, and
    reused for every batch size. Time spent is added to the case's backend seconds.

    ``kept``: each run's outputs are kept in the data root and a later run of the same path
    on the same graph and feeds reuses them (``storage.path_outputs``), as a path's outputs
    on the model are; never for a law about repeated runs (determinism)."""

    def __init__(self, ctx: CaseContext, path: PathResult, model: bytes,
                 threads: int | None = None, kept: bool = False) -> None:
        self.ctx, self.path, self.model = ctx, path, model
        # model cases only, as their paths' outputs: a synthetic case is cheaper to run
        # than to keep (thousands of tiny entries for the default suite)
        self.reuse = (path_outputs(ctx.settings)
                      if kept and ctx.case.suite in MODEL_SUITES else None)
        self.backend = backends.get(path.backend)
        self.settings = dict(path.settings)
        if threads is not None:
            self.settings = self.backend.with_threads(path.settings, threads) or self.settings
        self._session: Any = None
        self.graph = "a contract graph"
        """What the graph is, for the row of a crash that kills the worker while it runs."""
        self.result_path = self.path
        """The PathResult to record on rows (settings reflect the thread count used)."""
        if self.settings != path.settings:
            self.result_path = replace(path, settings=self.settings, threads=threads or 0,
                                       median_ms=math.nan, repeats=1, outputs=None, files=[])

    def __call__(self, feeds: Arrays) -> list[np.ndarray]:
        shapes = ", ".join(f"{k} {getattr(v, 'dtype', '')}{list(getattr(v, 'shape', ()))}"
                           for k, v in feeds.items())
        # a crash that kills the worker (a runtime's abort) leaves this for its row
        key = ""
        if self.reuse is not None:
            key = path_key(self.model, dict(feeds), self.path.backend,
                           kept_version(self.backend), self.path.optimization,
                           self.result_path.threads, self.settings, 1)
            stored, _ = self.reuse.load(key)
            if stored is not None:
                return list(stored.outputs)
        note_running(self.path.backend, self.path.optimization,
                     f"{self.graph}, inputs {shapes}")
        with self.ctx.backend_time():
            if self._session is None:
                self._session = self.backend.build(self.model, self.settings)
            got = self.backend.run(self._session, feeds)
        note_running("")
        if self.reuse is not None and all(isinstance(x, np.ndarray) for x in got):
            self.reuse.store(key, Stored(list(got), math.nan, math.nan, 1, True))
        return got

    def __enter__(self) -> PathRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the session now: its teardown (arenas, pool threads) is backend time too."""
        if self._session is not None:
            with self.ctx.backend_time():
                session, self._session = self._session, None
                self.backend.release(session)

    def once(self, feeds: Arrays) -> list[np.ndarray]:
        """Run a single time and release the session."""
        try:
            return self(feeds)
        finally:
            self.close()


class Evidence:
    """Adds a law's two sides to the case's evidence, reusing an identical file already
    there (the full-batch side is often bit-identical to the path's own output)."""

    def __init__(self, ctx: CaseContext) -> None:
        self.ctx = ctx
        self._by_hash = {sha256(data): rel for rel, data in ctx.writer.files.items()
                         if rel.endswith(".npy")}
        self._by_digest: dict[str, str] = {}

    def add(self, relpath: str, x: np.ndarray) -> str:
        digest = self.ctx.digest(x)
        if digest not in self._by_digest and not self.ctx.writer.fits(x.nbytes + 128):
            self._by_digest[digest] = self.ctx.writer.add_array(relpath, x)  # its summary
        if digest not in self._by_digest:
            data = npy_bytes(x)
            key = sha256(data)
            if key not in self._by_hash:
                self._by_hash[key] = self.ctx.writer.add_bytes(relpath, data)
            self._by_digest[digest] = self._by_hash[key]
        return self._by_digest[digest]


def compare_law(ctx: CaseContext, law: str, actual: np.ndarray, reference: np.ndarray,
                rtol: float, atol: float, *, actual_label: str = "actual",
                reference_label: str = "reference") -> LawResult:
    """``laws.compare_law``, once per distinct pair of sides in a case (see ctx.once)."""
    key = ("law", law, ctx.digest(actual), ctx.digest(reference), rtol, atol, actual_label,
           reference_label)
    return ctx.once(key, lambda: laws.compare_law(law, actual, reference, rtol, atol,
                                                  actual_label=actual_label,
                                                  reference_label=reference_label))


def law_row(ctx: CaseContext, evidence: Evidence, check: str, path: PathResult,
            output_name: str, res: LawResult, *, reference_label: str, dtype: str,
            folder: str, extra: dict[str, Any] | None = None,
            cause_key: str = "") -> Observation:
    """The observation of one law on one path and output, with both sides as evidence
    (``cause_key``: a known cause of its breaking, ``facts.MODEL_QUANTIZATION``)."""
    stem = f"{folder}/{path.name}/{output_name or 'out'}"
    actual_file = evidence.add(f"{stem}.actual.npy", res.actual)
    reference_file = evidence.add(f"{stem}.reference.npy", res.reference)
    details = {**res.details, **(extra or {})}
    return ctx.row(check=check, output_name=output_name, actual=path,
                   reference_name=reference_label, reference_version=path.version,
                   dtype=dtype, cmp=res.cmp, rtol=res.rtol, atol=res.atol,
                   result=res.result, reason=res.reason,
                   cause=law_cause(res.reason) if res.result != PASSED else "",
                   failure_kind=law_kind(check, res) if res.result != PASSED else "",
                   cause_key=cause_key if res.result != PASSED else "",
                   actual_hash=ctx.digest(res.actual),
                   reference_hash=ctx.digest(res.reference),
                   actual_file=actual_file, reference_file=reference_file, details=details)


def law_kind(check: str, res: LawResult) -> str:
    """A broken law's kind: NaN fed to both sides of a comparing law (``nan``: no law's
    doing), the law broken by non-finite values on its side (``law:NAME:nonfinite``), else
    by finite ones (``law:NAME``): two causes on one law are two findings."""
    if "nan_both" in res.details and res.cmp is not None and failure_kind(res.cmp) == NAN:
        return NAN
    side = np.asarray(res.actual)
    if side.dtype.kind in "fc" and not np.isfinite(side).all():
        return law_name(check) + ":nonfinite"
    return law_name(check)


def execution_row(ctx: CaseContext, check: str, path: PathResult, output_name: str,
                  dtype: str, message: str, reference_label: str) -> Observation:
    """A law that could not be checked on a path because running it failed."""
    return ctx.row(check=check, output_name=output_name, actual=path,
                   reference_name=reference_label, reference_version=path.version,
                   dtype=dtype, cmp=None, rtol=math.nan, atol=math.nan, result=EXECUTION,
                   reason=message, cause=law_cause(message))
