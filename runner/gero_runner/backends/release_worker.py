"""The worker of a runtime release: run by another interpreter (a release's environment),
as a script, so it imports nothing of gero, only the standard library, NumPy and the runtime.

``backends.release`` starts it as ``PYTHON release_worker.py RUNTIME`` and talks to it one
JSON line at a time on its stdin and a private copy of its stdout (the runtime's own
prints go to stderr). Tensors travel as .npy files written and read without pickles.
Requests: ``hello`` (the runtime's version, levels, distributions), ``build`` (a session
from a model file and a path's settings, its optimised graph written where asked), ``run``
(inputs from .npy files, outputs to .npy files), ``release``. An answer is ``{"ok": ...}``
or ``{"error": "Type: message"}``. It ends with its parent (kill -9 included).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

ORT_LEVELS = ("disable_all", "basic", "extended", "all")
"""ONNX Runtime's levels, as ``backends.names.ORT_LEVELS`` (this file imports no gero)."""


def _exit_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            if ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0) == 0:  # PR_SET_PDEATHSIG
                if os.getppid() != parent:
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


# ------------------------------------------------------------------------------ ONNX Runtime
# The same session as gero_runner.backends.ort.make_session builds: a release is compared
# with the installed runtime path for path, so each setting must mean the same here.
def _ort_hello() -> dict[str, Any]:
    import onnxruntime as ort

    return {"version": ort.__version__, "levels": list(ORT_LEVELS),
            "distributions": ["onnxruntime"], "keeps_optimized_graph": True}


def _ort_build(model: bytes, settings: Mapping[str, Any], graph: str | None) -> Any:
    import onnxruntime as ort

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
    options.log_severity_level = 4
    if not settings.get("allow_spinning", True):
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if graph is not None:
        options.optimized_model_filepath = graph
    disabled = settings.get("disabled_optimizers")
    kwargs = {"disabled_optimizers": list(disabled)} if disabled else {}
    return ort.InferenceSession(model, options, providers=[settings["provider"]], **kwargs)


def _ort_run(session: Any, inputs: dict[str, np.ndarray]) -> list[Any]:
    return list(session.run(None, inputs))


# ------------------------------------------------------------------------------ OpenVINO
# The same compile as gero_runner.backends.openvino.OpenVino.build, without its model cache
# (a cached blob is named after the graph alone, and this worker's is another release's).
_OV: dict[str, Any] = {}


def _ov_core() -> Any:
    if "core" not in _OV:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
        import openvino

        _OV["module"], _OV["core"] = openvino, openvino.Core()
    return _OV["core"]


def _ov_hello() -> dict[str, Any]:
    from importlib import metadata

    hint = _ov_core().get_property("CPU", "INFERENCE_PRECISION_HINT")
    return {"version": metadata.version("openvino"), "levels": [],
            "distributions": ["openvino"], "keeps_optimized_graph": False,
            "default_precision": str(hint.get_type_name())}


def _ov_build(model: bytes, settings: Mapping[str, Any], graph: str | None) -> Any:
    core = _ov_core()
    read = core.read_model(model, _OV["module"].Tensor(np.empty(0, np.uint8)))
    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": int(settings["inference_num_threads"]),
                              "NUM_STREAMS": 1, "ENABLE_CPU_PINNING": False}
    if settings["inference_precision_hint"] != "default":
        config["INFERENCE_PRECISION_HINT"] = settings["inference_precision_hint"]
    if settings["inference_precision_hint"] == "f32" and "plugin_default" not in settings:
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
    compiled = core.compile_model(read, "CPU", config)
    return compiled, compiled.create_infer_request()


def _ov_run(session: Any, inputs: dict[str, np.ndarray]) -> list[Any]:
    compiled, request = session
    names = list(inputs)
    feeds = {}
    for i, port in enumerate(compiled.inputs):
        # the graph input a port stands for, as gero_runner.backends.openvino._input_name
        found = [n for n in inputs if n in port.get_names()]
        if len(found) != 1 and (found or i >= len(names)):
            raise ValueError(f"OpenVINO input {port.get_any_name()!r} matches {len(found)} "
                             f"of the case's inputs ({', '.join(inputs)})")
        feeds[i] = inputs[found[0] if found else names[i]]
    request.infer(feeds)
    return [np.array(request.get_output_tensor(i).data, copy=True)
            for i in range(len(compiled.outputs))]


RUNTIMES: dict[str, tuple[Callable[[], dict[str, Any]],
                          Callable[[bytes, Mapping[str, Any], str | None], Any],
                          Callable[[Any, dict[str, np.ndarray]], list[Any]]]] = {
    "onnxruntime": (_ort_hello, _ort_build, _ort_run),
    "openvino": (_ov_hello, _ov_build, _ov_run),
}


def _as_array(value: Any) -> np.ndarray:
    # as gero_runner.backends.base.as_array: string tensors as unicode arrays (no pickles)
    x = np.asarray(value)
    if x.dtype == object and all(isinstance(v, str) for v in x.reshape(-1)):
        return x.astype(str) if x.size else np.zeros(x.shape, dtype="<U1")
    return x


def serve(runtime: str, requests: Any, answers: Any) -> None:
    hello, build, run = RUNTIMES[runtime]
    sessions: dict[int, Any] = {}
    made = 0
    for line in requests:
        request = json.loads(line)
        try:
            op = request["op"]
            if op == "hello":
                answer: Any = hello()
            elif op == "build":
                session = build(Path(request["model"]).read_bytes(), request["settings"],
                                request.get("graph"))
                made += 1
                sessions[made] = session
                answer = made
            elif op == "run":
                feeds = {name: np.load(path, allow_pickle=False)
                         for name, path in request["inputs"].items()}
                outputs = run(sessions[request["session"]], feeds)
                written = []
                for i, value in enumerate(outputs):
                    path = os.path.join(request["out"], f"output-{i}.npy")
                    np.save(path, _as_array(value), allow_pickle=False)
                    written.append(path)
                answer = written
            elif op == "release":
                sessions.pop(request["session"], None)
                answer = None
            else:
                raise ValueError(f"unknown request {op!r}")
            reply = {"ok": answer}
        except Exception as e:  # the runtime's error is the path's result, as in-process
            reply = {"error": f"{type(e).__name__}: {e}".strip(),
                     "traceback": traceback.format_exc(limit=3)}
        answers.write(json.dumps(reply) + "\n")
        answers.flush()


def main() -> None:
    runtime, parent = sys.argv[1], int(sys.argv[2])
    _exit_with_parent(parent)
    # Answers go on a private copy of stdout; whatever the runtime prints goes to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    serve(runtime, sys.stdin, answers)


if __name__ == "__main__":
    main()
