"""Faults for the Dask fault tests, in the ``dask worker`` processes they start only (every
interpreter those start, the case processes' fork server included, imports this file).

GERO_TEST_FAKE_VERSIONS (JSON, distribution -> version): ``importlib.metadata.version``
reports these, as on a worker set up with other versions. GERO_TEST_GATE and
GERO_TEST_GATED: cases of the listed operators wait until the gate file exists; with
GERO_TEST_GATE_AFTER=N instead, every case after a process's first N does.
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
MODULE = "gero_runner.execution.evaluate"


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps ``evaluate_case`` once its module is executed."""

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
            evaluate = module.evaluate_case
            done = [0]

            def gated(case: Any, settings: Any) -> Any:
                done[0] += 1
                if case.op_type in _GATED or 0 <= _AFTER < done[0]:
                    while not os.path.exists(os.environ["GERO_TEST_GATE"]):
                        time.sleep(0.05)
                return evaluate(case, settings)

            module.evaluate_case = gated

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _GATED or _AFTER >= 0:
    sys.meta_path.insert(0, _Finder())
