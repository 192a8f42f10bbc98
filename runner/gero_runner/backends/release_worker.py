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


# ------------------------------------------------------------------------------ tract
# The same session as gero_runner.backends.tract builds: the pipeline a path names
# (into_typed, into_optimized), and where tract cannot analyse the declared input facts,
# the graph analysed again from each input signature's concrete shapes (this needs onnx,
# which gero env add installs with tract). What the release's API has is probed, not assumed
# by version: tract 0.23 replaced Value by Tensor and into_typed/into_optimized by
# into_model, whose into_runnable always optimises (no unoptimised path).
_TRACT_FACT_TYPES = {"b1": "bool", "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64",
                     "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64", "f2": "f16",
                     "f4": "f32", "f8": "f64"}
_TRACT_DTYPES = {0x01: np.bool_, 0x11: np.uint8, 0x12: np.uint16, 0x14: np.uint32,
                 0x18: np.uint64, 0x21: np.int8, 0x22: np.int16, 0x24: np.int32,
                 0x28: np.int64, 0x32: np.float16, 0x34: np.float32, 0x38: np.float64}
_TRACT_BACKTRACE = "Stack backtrace:"
_TRACT: dict[str, Any] = {}


def _tract_version() -> str:
    from importlib import metadata

    return metadata.version("tract")


def _tract_has_typed() -> bool:
    """Whether the API has the unoptimised pipeline (``InferenceModel.into_typed``)."""
    from tract.inference_model import InferenceModel

    return hasattr(InferenceModel, "into_typed")


def _tract_pipelines() -> list[str]:
    """The settings the release offers: without ``into_typed`` (tract 0.23) only the
    optimised one."""
    return ["unoptimized", "optimized"] if _tract_has_typed() else ["optimized"]


def _tract_tensor_class() -> Any:
    """The class of the API's tensors: ``tract.value.Value`` up to 0.22, then
    ``tract.tensor.Tensor``."""
    try:
        from tract.value import Value

        return Value
    except ImportError:
        from tract.tensor import Tensor

        return Tensor


def _tract_hello() -> dict[str, Any]:
    return {"version": _tract_version(), "levels": [], "distributions": ["tract"],
            "keeps_optimized_graph": False, "settings": _tract_pipelines(),
            "reads_outputs": "bytes" if _tract_needs_bytes() else "to_numpy"}


def _tract_needs_bytes() -> bool:
    """Whether ``Value.to_numpy`` misreads a non-float32 tensor (tract 0.21 and 0.22 read
    every tensor as float32): probed once on a float16 and an int64 value."""
    if "bytes" not in _TRACT:
        Value = _tract_tensor_class()
        needs = False
        for x in (np.array([1.5, -2.0], np.float16), np.array([3, -4], np.int64)):
            try:
                back = np.asarray(Value.from_numpy(x).to_numpy())
                needs |= back.dtype != x.dtype or not np.array_equal(back, x)
            except Exception:
                needs = True
        _TRACT["bytes"] = needs
    return bool(_TRACT["bytes"])


def _tract_short(e: Exception) -> Exception:
    """tract's error without the Rust stack backtrace after its message."""
    text = str(e)
    return type(e)(text.split(_TRACT_BACKTRACE, 1)[0].strip()) if _TRACT_BACKTRACE in text \
        else e


def _tract_open_inputs(model: bytes) -> bool:
    import onnx

    graph = onnx.load_from_string(model).graph
    weights = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name in weights:
            continue
        tensor = value.type.tensor_type
        if not tensor.HasField("shape") or any(
                not d.HasField("dim_value") for d in tensor.shape.dim):
            return True
    return False


def _tract_drop_shapes(graph: Any) -> None:
    import onnx

    del graph.value_info[:]
    for value in graph.output:
        if value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                _tract_drop_shapes(sub)


def _tract_runnable(model: bytes, pipeline: str, inputs: dict[str, np.ndarray] | None
                    ) -> tuple[list[str], Any]:
    import tempfile

    import tract

    if inputs is not None:  # as backends.tract._without_symbolic_facts
        import onnx

        proto = onnx.load_from_string(model)
        _tract_drop_shapes(proto.graph)
        model = bytes(proto.SerializeToString())
    fd, path = tempfile.mkstemp(suffix=".onnx", prefix="gero-tract-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model)
        onnx_loader = tract.onnx()  # 0.23 renamed model_for_path to load
        inference = getattr(onnx_loader, "model_for_path", None) or onnx_loader.load
        inference = inference(path)
    finally:
        os.unlink(path)
    names = [inference.input_name(i) for i in range(inference.input_count())]
    if inputs is not None:
        for i, name in enumerate(names):
            x = inputs[name]
            inference.set_input_fact(i, ",".join([*(str(d) for d in x.shape),
                                                  _TRACT_FACT_TYPES[x.dtype.str[1:]]]))
    if not _tract_has_typed():  # into_model's into_runnable optimises
        return names, inference.into_model().into_runnable()
    return names, getattr(inference, pipeline)().into_runnable()


class _TractConcrete:
    """A graph tract analyses only from concrete input facts: one runnable per signature."""

    def __init__(self, model: bytes, pipeline: str) -> None:
        self.model, self.pipeline = model, pipeline
        self.runnables: dict[tuple[Any, ...], tuple[list[str], Any]] = {}

    def for_inputs(self, inputs: dict[str, np.ndarray]) -> tuple[list[str], Any]:
        key = tuple((k, x.shape, x.dtype.str) for k, x in inputs.items())
        if key not in self.runnables:
            self.runnables[key] = _tract_runnable(self.model, self.pipeline, inputs)
        return self.runnables[key]


def _tract_build(model: bytes, settings: Mapping[str, Any], graph: str | None) -> Any:
    pipeline = settings["pipeline"]
    offered = {"unoptimized": "into_typed", "optimized": "into_optimized"}
    if pipeline not in [offered[p] for p in _tract_pipelines()]:
        raise ValueError(f"tract {_tract_version()} has no pipeline {pipeline!r} in its "
                         "Python API")
    try:
        return _tract_runnable(model, pipeline, None)
    except Exception as e:
        if not _tract_open_inputs(model):
            raise _tract_short(e) from None
        return _TractConcrete(model, pipeline)


def _tract_value(x: np.ndarray) -> Any:
    """A tract value holding a copy of ``x``, a 0-d array kept 0-d (0.22's
    ``Value.from_numpy`` passes it through ``np.ascontiguousarray``, which makes it shape
    [1]; 0.23's ``Tensor.from_numpy`` keeps its rank)."""
    import ctypes

    if _tract_tensor_class().__name__ == "Tensor":
        return _tract_tensor_class().from_numpy(np.asarray(x))

    from tract.bindings import check, lib
    from tract.value import Value, dt_numpy_to_tract

    x = np.asarray(x, order="C")
    shape = (ctypes.c_size_t * x.ndim)(*x.shape)
    ptr = ctypes.c_void_p()
    check(lib.tract_value_from_bytes(dt_numpy_to_tract(x.dtype), ctypes.c_size_t(x.ndim),
                                     shape, ctypes.c_void_p(x.__array_interface__["data"][0]),
                                     ctypes.byref(ptr)))
    return Value(ptr)


def _tract_bytes(value: Any) -> np.ndarray:
    """A copy of a tract value's data in the element type tract reports."""
    import ctypes

    from tract.bindings import check, lib

    datum, rank = ctypes.c_uint32(), ctypes.c_size_t()
    shape = ctypes.POINTER(ctypes.c_size_t)()
    data = ctypes.c_void_p()
    as_bytes = getattr(lib, "tract_value_as_bytes", None) or lib.tract_tensor_as_bytes
    check(as_bytes(value.ptr, ctypes.byref(datum), ctypes.byref(rank), ctypes.byref(shape),
                   ctypes.byref(data)))
    if datum.value not in _TRACT_DTYPES:
        raise TypeError(f"tract returned an element type gero cannot read (code "
                        f"{datum.value:#x})")
    dtype = np.dtype(_TRACT_DTYPES[datum.value])
    dims = tuple(int(shape[i]) for i in range(rank.value))
    count = int(np.prod(dims, dtype=np.int64))
    if count == 0 or not data.value:
        return np.zeros(dims, dtype)
    raw = ctypes.string_at(data.value, count * dtype.itemsize)
    return np.frombuffer(raw, dtype=dtype).reshape(dims).copy()


def _tract_run(session: Any, inputs: dict[str, np.ndarray]) -> list[Any]:
    try:
        if isinstance(session, _TractConcrete):
            session = session.for_inputs(inputs)
        names, runnable = session
        outputs = runnable.run([_tract_value(inputs[n]) for n in names])
        read = _tract_bytes if _tract_needs_bytes() else (lambda v: v.to_numpy())
        return [read(o) for o in outputs]
    except Exception as e:
        raise _tract_short(e) from None


RUNTIMES: dict[str, tuple[Callable[[], dict[str, Any]],
                          Callable[[bytes, Mapping[str, Any], str | None], Any],
                          Callable[[Any, dict[str, np.ndarray]], list[Any]]]] = {
    "onnxruntime": (_ort_hello, _ort_build, _ort_run),
    "openvino": (_ov_hello, _ov_build, _ov_run),
    "tract": (_tract_hello, _tract_build, _tract_run),
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
