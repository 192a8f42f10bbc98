"""Where and how a run executes: the new run's id, its workers, the executor, threads,
timed repeats and the seed of the input generators."""

from __future__ import annotations

import os

from gero_cli.args.base import ArgGroup, arg
from gero_runner.request import EXECUTORS

RUN_ID = ArgGroup((
    arg("run_id", default=None,
        help="id of the new run (default: date, time and a random suffix)"),
))

EXECUTOR = ArgGroup((
    arg("jobs", type=int, default=os.cpu_count() or 1,
        help="parallel worker processes at most (default: CPU count); one is "
             "started only for a case or path that waits, so a small run starts "
             "fewer"),
    arg("executor", choices=EXECUTORS, default="local",
        help="where cases run: local (--jobs worker processes here, the default) "
        "or dask (a Dask distributed cluster; pip install 'gero[dask]')"),
    arg("scheduler", default=None, metavar="tcp://HOST:PORT",
        help="the Dask scheduler of --executor dask (default: "
        "$GERO_DASK_SCHEDULER)"),
    arg("threads", type=int, default=1, help="ONNX Runtime intra-op threads"),
    arg("reuse", action="store_false", default=True,
        help="compute every path of a --model case; by default a path whose model, "
             "inputs, settings, runtime version and gero code did not change reuses the "
             "outputs an earlier run kept in the data root (DATA_DIR/cache/outputs; its "
             "rows say so), so a rerun after upgrading one runtime runs only its paths"),
))

REPEATS = ArgGroup((
    arg("repeats", type=int, default=5, help="timed runs per path"),
    arg("seed", type=int, default=0,
        help="seed of the input generators (default: 0; recorded per observation)"),
))
