"""ONNX Runtime on the CPU execution provider, one session per optimisation level.

onnxruntime is imported inside functions: importing it costs ~0.3 s and pulls in its
thread pools, which the explorer and the parent of the worker pool should not pay for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gero_runner.backends.base import NEEDED_ALWAYS, Backend, PathSpec, as_array
from gero_runner.backends.names import ORT_LEVELS
from gero_runner.case import Arrays

LEVEL_NAMES = ORT_LEVELS
"""The graph optimisation levels, in their natural order (every view sorts by it)."""
BACKEND = "onnxruntime"


class OnnxRuntime(Backend):
    """The CPU execution provider, one path per graph optimisation level."""

    name = BACKEND
    distribution = "onnxruntime"
    module = "onnxruntime"
    level_setting = "graph_optimization_level"
    keeps_optimized_graph = True
    disable_option = "disabled_optimizers"
    # ORT names a fused node after its transformer (/LayerNormFusion/).
    rewrite_names = (r"[A-Z][A-Za-z0-9]*(?:Fusion|Fuse|Elimination|Folding|Transformer|"
                     r"Optimizer|Rewriter|Reorder)")
    # Fused nodes not named after their transformer ('fused Gemm_27', 'Gelu'), by the
    # transformer that makes them (1.32: disabling it brings the nodes it fused back).
    rewrite_ops: ClassVar[dict[str, str]] = {"FusedGemm": "GemmActivationFusion",
                                             "FusedConv": "ConvActivationFusion",
                                             "Gelu": "GeluFusion", "BiasGelu": "BiasGeluFusion"}
    inserts_precision_casts = True
    widened_prefix = "InsertedPrecisionFreeCast_"

    def paths(self, threads: int) -> list[PathSpec]:
        return [self.level(level, threads) for level in LEVEL_NAMES]

    def needed_when(self, spec: PathSpec, paths: list[PathSpec]) -> str:
        # disable_all always runs: it is the noise floor's other end, the one sight of
        # whether `all` differs from the unoptimised graph (which decides whether basic
        # and extended run), and one session of the fastest runtime here.
        if spec.optimization == self.levels[0]:
            return NEEDED_ALWAYS
        return super().needed_when(spec, paths)

    def level(self, level: str, threads: int) -> PathSpec:
        return self.spec(level, threads, session_settings(level, threads))

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        return make_session(model, settings)

    def build_keeping_graph(self, model: bytes, settings: Mapping[str, Any],
                            graph: Path) -> Any:
        return make_session(model, settings, graph)

    def rewrite_aliases(self, rewrite: str) -> list[str]:
        # 1.32 registers LayerNorm fusion as LayerNormFusionL1 at basic and
        # LayerNormFusionL2 at extended; none is named LayerNormFusion, although the fused
        # node is /LayerNormFusion/ (Gelu fusion: GeluFusionL2 at extended).
        return [rewrite, f"{rewrite}L1", f"{rewrite}L2"]

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        return run(session, inputs)

    def with_threads(self, settings: Mapping[str, Any], threads: int) -> dict[str, Any]:
        changed = {**settings, "intra_op_num_threads": threads}
        if threads > 1:  # other workers run on the same cores (see make_session)
            changed["allow_spinning"] = False
        return changed


RUNTIME = OnnxRuntime()


def version() -> str:
    return RUNTIME.version()


def session_settings(level: str, threads: int) -> dict[str, Any]:
    """The settings recorded on every observation, enough to rebuild the session."""
    return {
        "provider": "CPUExecutionProvider",
        "graph_optimization_level": level,
        "intra_op_num_threads": threads,
        "inter_op_num_threads": 1,
        "execution_mode": "sequential",
    }


def make_session(model: bytes, settings: Mapping[str, Any], keep_graph: Path | None = None
                 ) -> Any:
    """A session with the path's settings (and ``disabled_optimizers`` when blame turns a
    rewrite off); with ``keep_graph``, its optimised graph is written there."""
    import onnxruntime as ort  # deferred: see module docstring

    levels = {
        "disable_all": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[settings["graph_optimization_level"]]
    options.intra_op_num_threads = int(settings["intra_op_num_threads"])
    options.inter_op_num_threads = int(settings.get("inter_op_num_threads", 1))
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 4  # errors are kept in the observation, not printed
    if not settings.get("allow_spinning", True):
        # Idle pool threads sleep instead of spinning: parallel workers then do not steal
        # each other's cores. Scheduling only; the kernels and their results are the same.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if keep_graph is not None:
        options.optimized_model_filepath = str(keep_graph)
    disabled = settings.get("disabled_optimizers")
    kwargs = {"disabled_optimizers": list(disabled)} if disabled else {}
    return ort.InferenceSession(model, options, providers=[settings["provider"]], **kwargs)


def run(session: Any, inputs: Arrays) -> list[np.ndarray]:
    return [as_array(o) for o in session.run(None, inputs)]


