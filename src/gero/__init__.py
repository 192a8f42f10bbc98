"""gero as a library: what the ``gero`` command does, for scripts and test suites.

    import gero

    run = gero.run(models=["model.onnx"], variants=["fp16", "int8-dynamic"], data_dir="data")
    run.passed                    # every observation within contract?
    run.counts                    # observations per result class
    run.findings()                # the causes behind the non-passed observations
    run.observations()            # every observation as a pyarrow.Table
    run.relation("result <> 'passed'")   # ... or as a DuckDB relation
    gero.open_run("20261201", data_dir="data")   # a stored run, by id prefix (newest: None)
    gero.localize("3b19944", data_dir="data")      # where an observation's error enters

``gero.blame``, ``bundle``, ``replay``, ``localize``, ``export``, ``parity``, ``compact``
and ``gc`` are the commands of those names. ``gero.testing.check_model`` turns a model
check into a pytest assertion. Bad input raises :class:`GeroError` with the one-sentence
message the command line prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gero_runner.errors import GeroError

if TYPE_CHECKING:
    from gero.api import (
        Run,
        blame,
        bundle,
        compact,
        export,
        find_observation,
        gc,
        localize,
        open_run,
        parity,
        replay,
        run,
    )
    from gero.query.findings import Finding

# Imported when first used: ``import gero.query.source`` (the explorer's first import)
# must not load the API and through it the runner's schema, pyarrow and NumPy (0.6-0.9 s
# on the UI thread before the explorer's first frame).
_LAZY = {**dict.fromkeys(("Run", "blame", "bundle", "compact", "export", "find_observation",
                          "gc", "localize", "open_run", "parity", "replay", "run"),
                         "gero.api"),
         "Finding": "gero.query.findings"}


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gero")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'gero' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["Finding", "GeroError", "Run", "__version__", "blame", "bundle", "compact",
           "export", "find_observation", "gc", "localize", "open_run", "parity", "replay",
           "run"]
