"""A runtime release (``RUNTIME==VERSION``) as a ``Backend`` whose sessions live in a worker
process of that release's interpreter (``release_env``, ``release_worker``).

It has the paths of the runtime it is a release of, under its own name (the rows' backend
column "onnxruntime==1.20.1", path names "onnxruntime==1.20.1-all"), so that every check
family runs on it as on any runtime, inside gero's own workers with their isolation and
budgets: a gero worker that runs one of its paths starts one release worker, kept for the
worker's life, and builds, runs and releases sessions there. Model bytes and tensors travel
as files (.onnx, .npy without pickles). Its version and levels are the worker's (asked of a
short-lived worker once per process, so that a parent that forks holds no pipe of it).
A release worker that dies fails the path it was running with a sentence naming its signal;
the next session starts another.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gero_runner.backends import release_env
from gero_runner.backends.base import Backend, PathSpec
from gero_runner.backends.names import line
from gero_runner.errors import GeroError, PathFailed

if TYPE_CHECKING:
    import onnx

WORKER = Path(__file__).with_name("release_worker.py")


class ReleaseError(RuntimeError):
    """What the release's runtime raised, as its worker reported it (type: message)."""


class _Worker:
    """One worker process of a release's interpreter, and its scratch folder."""

    def __init__(self, release: str, python: Path) -> None:
        self.release = release
        self.owner = os.getpid()
        self.scratch = Path(tempfile.mkdtemp(prefix="gero-release-"))
        runtime = release_env.parse(release).runtime
        self.process = subprocess.Popen(
            [str(python), "-I", str(WORKER), runtime, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self.models: dict[str, Path] = {}
        self.calls = 0

    def ask(self, request: dict[str, Any]) -> Any:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            line = stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise PathFailed(self._death())
        answer = json.loads(line)
        if "error" in answer:
            raise ReleaseError(f"{self.release}: {answer['error']}")
        return answer["ok"]

    def _death(self) -> str:
        code = self.process.wait()
        if code < 0:
            try:
                how = f"crashed with {signal.Signals(-code).name}"
            except ValueError:
                how = f"crashed with signal {-code}"
        else:
            how = f"exited with code {code}"
        return f"worker process of {self.release} {how}"

    def model_file(self, model: bytes) -> Path:
        key = hashlib.sha256(model).hexdigest()[:16]
        if key not in self.models:
            path = self.scratch / f"model-{key}.onnx"
            path.write_bytes(model)
            self.models[key] = path
        return self.models[key]

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def close(self) -> None:
        if self.owner == os.getpid():
            self.process.kill()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # a dead worker's pipe
                        stream.close()
            self.process.wait()
            shutil.rmtree(self.scratch, ignore_errors=True)


_WORKERS: dict[str, _Worker] = {}


def _worker(release: str) -> _Worker:
    """This process's worker of the release, started on first use (or after one died, or
    in a forked child, which must not share its parent's pipes)."""
    worker = _WORKERS.get(release)
    if worker is None or not worker.alive():
        if worker is not None:
            worker.close()
        worker = _WORKERS[release] = _Worker(release, _python(release))
    return worker


@atexit.register
def _close_all() -> None:
    for worker in _WORKERS.values():
        worker.close()
    _WORKERS.clear()


def _python(release: str) -> Path:
    python = release_env.python_for(release)
    if python is None:
        raise GeroError(f"no environment of {release}: {release_env.add_hint(release)}")
    return python


@functools.cache
def hello(release: str) -> Mapping[str, Any]:
    """What the release's worker says of its runtime: version, levels, distributions."""
    worker = _Worker(release, _python(release))
    try:
        answer: Mapping[str, Any] = worker.ask({"op": "hello"})
    except (PathFailed, ReleaseError) as e:
        raise GeroError(f"the worker of {release} cannot start: {e}") from None
    finally:
        worker.close()
    return answer


class _Session:
    def __init__(self, worker: _Worker, number: int) -> None:
        self.worker, self.number = worker, number


class ReleaseBackend(Backend):
    """A release of ``base`` (a runtime gero knows), run in its own interpreter; a release's
    class also derives from its runtime's (``backend``)."""

    base: Backend

    def installed(self) -> bool:
        return release_env.python_for(self.name) is not None

    def install_hint(self) -> str:
        return release_env.add_hint(self.name)

    def version(self) -> str:
        return str(hello(self.name)["version"])

    def distributions(self) -> tuple[str, ...]:
        return tuple(hello(self.name)["distributions"])

    def paths(self, threads: int) -> list[PathSpec]:
        check_levels(self.name)
        # OpenVINO's paths depend on its plugin's default precision: the release's own
        at = getattr(self, "paths_at", None)
        default = hello(self.name).get("default_precision")
        found = at(str(default), threads) if at and default else self.base.paths(threads)
        # A release offers only the settings its API has (tract 0.23: no unoptimised path)
        offered = hello(self.name).get("settings")
        if offered is not None:
            found = [p for p in found if p.optimization in offered]
        return [self.spec(p.optimization, p.threads, p.settings) for p in found]

    def surviving_tensors(self, model: onnx.ModelProto, settings: Mapping[str, Any]
                          ) -> dict[str, str] | None:
        # From its optimised graph where the worker writes one as ONNX (ONNX Runtime's); a
        # runtime's executed graph otherwise stays in the worker: not known, every tensor.
        if self.keeps_optimized_graph:
            return Backend.surviving_tensors(self, model, settings)
        return None

    def widened_nodes(self, model: bytes, settings: Mapping[str, Any]) -> dict[str, str] | None:
        # As above: read from an ONNX graph, or not known (None) for OpenVINO's.
        if self.keeps_optimized_graph:
            return Backend.widened_nodes(self, model, settings)
        return None

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        return self._build(model, settings, None)

    def build_keeping_graph(self, model: bytes, settings: Mapping[str, Any],
                            graph: Path) -> Any:
        return self._build(model, settings, graph)

    def _build(self, model: bytes, settings: Mapping[str, Any], graph: Path | None) -> Any:
        worker = _worker(self.name)
        number = worker.ask({"op": "build", "model": str(worker.model_file(model)),
                             "settings": dict(settings),
                             "graph": None if graph is None else str(graph)})
        return _Session(worker, int(number))

    def run(self, session: Any, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        worker: _Worker = session.worker
        worker.calls += 1
        call = worker.scratch / f"call-{worker.calls}"
        call.mkdir()
        try:
            feeds = {}
            for i, (name, value) in enumerate(inputs.items()):
                path = call / f"input-{i}.npy"
                np.save(path, np.asarray(value), allow_pickle=False)
                feeds[name] = str(path)
            written = worker.ask({"op": "run", "session": session.number, "inputs": feeds,
                                  "out": str(call)})
            return [np.load(path, allow_pickle=False) for path in written]
        finally:
            shutil.rmtree(call, ignore_errors=True)

    def release(self, session: Any) -> None:
        worker: _Worker = session.worker
        if worker.alive():
            worker.ask({"op": "release", "session": session.number})


@functools.cache
def backend(name: str) -> Backend:
    """The backend of release ``name`` ("onnxruntime==1.20.1"): a class of its own, whose
    capabilities are its runtime's (its levels, how it names and turns off rewrites) and
    whose names are the release's."""
    from gero_runner import backends

    release = release_env.parse(name)
    base = backends.get(release.runtime)
    names = line(name)
    assert names is not None  # parse() accepted its runtime
    attributes: dict[str, Any] = {
        "name": name, "prefix": names.prefix, "distribution": base.distribution,
        "module": base.module, "extra": None, "title": names.title, "short": names.short,
        "path_label": names.path_label, "levels": names.levels, "base": base,
    }
    # Its runtime's class after ReleaseBackend: every capability and setting rule (levels,
    # rewrites, deployed and needed settings, precision) is the runtime's; building,
    # running and releasing sessions, its version and its paths' names are the release's.
    made = type(f"Release_{release.runtime}", (ReleaseBackend, type(base)), attributes)
    release_backend: Backend = made()
    return release_backend


def check_levels(name: str) -> None:
    """The worker's levels are its runtime's (a release whose levels differ cannot be
    compared setting by setting)."""
    said = tuple(hello(name)["levels"])
    have = backend(name).levels
    if said != have:
        raise GeroError(f"{name}: its levels {said} differ from {have}")
