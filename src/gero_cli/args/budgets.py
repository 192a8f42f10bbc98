"""What a run may spend: time per case and per path, which paths it skips or runs, how many
cases, and the memory and disk a case may take."""

from __future__ import annotations

from gero_cli.args.base import ArgGroup, arg, repeated_names
from gero_runner.request import (
    DEFAULT_MAX_EVIDENCE_MB,
    DEFAULT_MAX_TENSOR_MB,
    DEFAULT_PATH_BUDGET_S,
    DEFAULT_TIMEOUT_S,
    PATHS_CHOICES,
    PATHS_NEEDED,
)

BUDGETS = ArgGroup((
    arg("timeout", type=float, default=DEFAULT_TIMEOUT_S,
        help="seconds per operator case, and for judging a --model case once its "
             "paths ran (default %(default)g)"),
    arg("path_budget", type=float, default=DEFAULT_PATH_BUDGET_S, metavar="SECONDS",
        help="seconds each path of a --model case may take (default %(default)g): "
             "each runtime setting, the ReferenceEvaluator, the float64 shadow, "
             "each variant's build and each variant on each path, the contract "
             "graphs, the noise-floor runs; a path that runs out is one execution "
             "row naming it, and the case's other rows are kept"),
    arg("skip_paths", repeated_names, action="append", default=[], metavar="RUNTIME:SETTING",
        help="a runtime setting not to run, e.g. tract:unoptimized (repeatable or "
             "comma-separated; the runtime's other settings still run)"),
    arg("paths", choices=PATHS_CHOICES, default=PATHS_NEEDED,
        help="which settings a --model case runs: 'needed' (default) runs each "
             "runtime's deployed setting (ORT all, OpenVINO's default, tract "
             "optimized), its noise floor's, the ReferenceEvaluator and the float64 "
             "shadow, and another setting only where it can change or explain a "
             "verdict (ORT basic and extended where disable_all and all differ, tract "
             "unoptimized where optimized is off its gates); each not run is named, "
             "with why, in the case's plan.json; 'all' runs every setting"),
    arg("limit", type=int, default=None, help="run only the first N cases"),
    arg("max_tensor_mb", type=float, default=DEFAULT_MAX_TENSOR_MB, metavar="MB",
        help="largest tensor a case may make (MiB, default 1024): a model whose "
             "inputs, intermediates or outputs would be larger is refused before "
             "running, an output that comes out larger is not compared; either is "
             "an execution observation"),
    arg("max_evidence_mb", type=float, default=DEFAULT_MAX_EVIDENCE_MB, metavar="MB",
        help="tensors one case keeps on disk (MiB, default 64); past it a tensor is "
             "kept as a summary (shape, dtype, hash, statistics, worst elements) "
             "and the rows say so; the inputs are always kept"),
))
