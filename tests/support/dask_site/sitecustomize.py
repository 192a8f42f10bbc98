"""Faults for the Dask tests, in the ``dask worker`` processes they start only: a test puts
this directory on its workers' PYTHONPATH, so every interpreter those start (the case
processes' fork server included) imports this file.

- GERO_TEST_FAKE_VERSIONS (JSON, distribution -> version): ``importlib.metadata.version``
  reports these, as on a worker set up with other versions.
- GERO_TEST_GATE and GERO_TEST_GATED: cases of the listed operators wait until the gate file
  exists; with GERO_TEST_GATE_AFTER=N instead, every case after a process's first N does.
- GERO_TEST_FAULTS (a JSON file, read at each case, so a test changes the faults without
  restarting its cluster): a case whose id is listed under "crash" ends its process with
  ``os._exit(3)``; one under "hang" never returns.

The gate and the faults wrap ``gero_runner.checks.task.evaluate_case`` once that
module is executed; every other import is left alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import time
from importlib import metadata
from typing import Any

_FAKE = json.loads(os.environ.get("GERO_TEST_FAKE_VERSIONS") or "{}")
if _FAKE:
    _version = metadata.version

    def _faked(distribution_name: str) -> str:
        if distribution_name in _FAKE:
            return str(_FAKE[distribution_name])
        return _version(distribution_name)

    metadata.version = _faked

_GATED = set(filter(None, os.environ.get("GERO_TEST_GATED", "").split(",")))
_AFTER = int(os.environ.get("GERO_TEST_GATE_AFTER") or -1)
MODULE = "gero_runner.checks.task"


def _faults() -> dict[str, list[str]]:
    try:
        with open(os.environ["GERO_TEST_FAULTS"]) as f:
            value = json.load(f)
    except (KeyError, OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _wrap(module: Any) -> None:
    evaluate = module.evaluate_case
    done = [0]

    def faulty(case: Any, settings: Any) -> Any:
        done[0] += 1
        if case.op_type in _GATED or 0 <= _AFTER < done[0]:
            while not os.path.exists(os.environ["GERO_TEST_GATE"]):
                time.sleep(0.05)
        faults = _faults()
        if case.case_id in faults.get("crash", []):
            os._exit(3)
        if case.case_id in faults.get("hang", []):
            while True:
                time.sleep(1)
        return evaluate(case, settings)

    module.evaluate_case = faulty


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the module once it is executed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            _wrap(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _GATED or _AFTER >= 0 or os.environ.get("GERO_TEST_FAULTS"):
    sys.meta_path.insert(0, _Finder())
