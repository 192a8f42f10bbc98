"""``gero bisect``: the first published release of a runtime whose outputs on a model differ
from a good release's, by binary search over the releases between a good and a bad one,
and the node where the change enters at that step (``release_change``).

The releases come from the package index the user's pip uses (``pip index versions``), or
are given. Each release tried runs in its environment (``release_env``: made when missing,
reused after); the installed release runs in-process. A release "changes" the outputs when
any output differs from the good release's beyond ``atol + rtol·|good|`` (0 and 0: any
changed bit, a change of rounding included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from gero_runner import backends
from gero_runner.backends import release_env
from gero_runner.backends.release_env import published, version_key
from gero_runner.errors import GeroError
from gero_runner.evidence.release_change import Entry, first_change, write_repro


@dataclass
class Step:
    version: str
    changed: int
    """Elements beyond tolerance of the good release's outputs, over every output."""


@dataclass
class Bisection:
    runtime: str
    good: str
    bad: str
    steps: list[Step] = field(default_factory=list)
    first: str = ""
    """The first release whose outputs change ('' when the bad release's do not)."""
    last_good: str = ""
    entry: Entry | None = None
    repro: Path | None = None


def backend_name(runtime: str, version: str) -> str:
    """The installed release runs as the runtime itself; another in its environment."""
    return runtime if backends.get(runtime).version() == version else f"{runtime}=={version}"


def _outputs(name: str, model: bytes, settings: dict[str, Any],
             feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    backend = backends.get(name)
    session = backend.build(model, settings)
    try:
        return backend.run(session, feeds)
    finally:
        backend.release(session)


def _beyond(new: list[np.ndarray], old: list[np.ndarray], rtol: float, atol: float) -> int:
    count = 0
    for x, y in zip(new, old, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype:
            count += max(x.size, y.size)
        elif x.dtype.kind in "fc":
            with np.errstate(invalid="ignore", over="ignore"):
                a, b = x.astype(np.float64), y.astype(np.float64)
                close = (np.abs(a - b) <= atol + rtol * np.abs(b)) | (a == b) | (
                    np.isnan(a) & np.isnan(b))
            count += int((~close).sum())
        else:
            count += int(np.count_nonzero(x != y))
    return count


def bisect(model_path: Path, feeds: dict[str, np.ndarray], runtime: str, good: str, bad: str,
           *, releases: list[str] | None = None, setting: str | None = None,
           rtol: float = 0.0, atol: float = 0.0, repro: Path | None = None,
           say: Callable[[str], None] = lambda line: None,
           progress: Callable[[str], None] | None = None) -> Bisection:
    """Binary search for the first release in (good, bad] whose outputs change."""
    candidates = sorted(set(releases if releases is not None else published(runtime)),
                        key=version_key)
    for v in (good, bad):
        if v not in candidates:
            raise GeroError(f"{runtime} {v} is not among the releases searched "
                            f"({', '.join(candidates) or 'none'})")
    span = [v for v in candidates if version_key(good) <= version_key(v) <= version_key(bad)]
    if len(span) < 2:
        raise GeroError(f"--good {good} must be an earlier release than --bad {bad}")
    model = onnx.load(str(model_path))
    data = model.SerializeToString()
    paths = backends.get(runtime).paths(1)
    spec = next((p for p in paths if p.optimization == (setting or paths[0].optimization)),
                None)
    if spec is None:
        raise GeroError(f"{runtime} has no setting {setting!r}; its settings: "
                        f"{', '.join(p.optimization for p in paths)}")
    settings = dict(spec.settings)

    def outputs_of(version: str) -> list[np.ndarray]:
        name = backend_name(runtime, version)
        if name != runtime:
            release_env.create(name, progress=progress)  # reused when it exists
        return _outputs(name, data, settings, feeds)

    result = Bisection(runtime, good, bad)
    reference = outputs_of(good)
    say(f"{runtime} {good}: good (the reference)")

    def changed(version: str) -> bool:
        count = _beyond(outputs_of(version), reference, rtol, atol)
        result.steps.append(Step(version, count))
        say(f"{runtime} {version}: " + (f"changed ({count} element(s))" if count else
                                        "same as " + good))
        return count > 0

    if not changed(bad):
        return result
    lo, hi = 0, len(span) - 1  # span[lo] is as good, span[hi] changed
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if changed(span[mid]):
            hi = mid
        else:
            lo = mid
    result.first, result.last_good = span[hi], span[lo]
    entry, tensors = first_change(model, feeds, backend_name(runtime, span[hi]),
                                  backend_name(runtime, span[lo]), settings)
    result.entry = entry
    if entry is not None and repro is not None:
        result.repro = write_repro(repro, model, entry, tensors, feeds)
    return result
