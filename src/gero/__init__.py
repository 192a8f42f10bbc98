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

from importlib import metadata

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
from gero_runner.errors import GeroError


def _version() -> str:
    try:
        return metadata.version("gero")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "0+unknown"


__version__ = _version()
__all__ = ["Finding", "GeroError", "Run", "__version__", "blame", "bundle", "compact",
           "export", "find_observation", "gc", "localize", "open_run", "parity", "replay",
           "run"]
