"""Faults for the Dask executor's tests, in the worker processes of a test cluster only.

The test puts this directory on the PYTHONPATH of its ``dask worker`` processes (so every
interpreter they start, the fork server of the case processes included, imports it). When
``gero_runner.execution.evaluate`` is imported, its ``evaluate_case`` is wrapped: a case
whose id is listed under "crash" in the JSON file GERO_TEST_FAULTS ends its process with
``os._exit(3)``; one under "hang" never returns. The file is read at each case, so the
test changes the faults without restarting the cluster.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import time
from typing import Any

MODULE = "gero_runner.execution.evaluate"


def _faults() -> dict[str, list[str]]:
    try:
        with open(os.environ["GERO_TEST_FAULTS"]) as f:
            value = json.load(f)
    except (KeyError, OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _wrap(module: Any) -> None:
    evaluate = module.evaluate_case

    def faulty(case: Any, settings: Any) -> Any:
        faults = _faults()
        if case.case_id in faults.get("crash", []):
            os._exit(3)
        if case.case_id in faults.get("hang", []):
            while True:
                time.sleep(1)
        return evaluate(case, settings)

    module.evaluate_case = faulty


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the module once it is executed; every other import is left alone."""

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


if os.environ.get("GERO_TEST_FAULTS"):
    sys.meta_path.insert(0, _Finder())
