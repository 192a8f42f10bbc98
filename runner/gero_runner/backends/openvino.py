"""OpenVINO's CPU plugin, reading ONNX directly: one path at float32 inference precision,
one at the plugin's default precision.

The default is what the plugin reports for ``INFERENCE_PRECISION_HINT`` on this CPU: on a
CPU with bfloat16 instructions it is ``bf16``, so a float32 model is computed in bfloat16
unless told otherwise. That path is labelled with what was reported (``bf16-default``), and
its settings record it as ``inference_precision`` so the overview can say so. Where the
default is ``f32`` itself, the two paths would compile and compute the same thing: there is
one path, ``f32``, whose settings record ``plugin_default: f32``.

Beside a default path, ``f32`` also turns off the plugin's dynamic quantization of
activations (``DYNAMIC_QUANTIZATION_GROUP_SIZE=0``): by default the CPU plugin quantizes the
activations of MatMuls with int8 weights to int8 on the fly, 4.5e-2 off float64 on an
int8-weight MiniLM where float32 arithmetic is 2e-6 off. gero's f32 is float32 throughout;
the f32-with-quantization combination a user gets by asking for f32 alone is not a path of
its own. On a bf16 CPU the default path's error is bf16's and the quantization's together,
and where MatMuls have int8 weights the quantization is the larger part (the int8 MiniLM:
0.0075 off float64 by default, 0.0021 with the quantization off; its fp16 file's row fails
its 0.004 gate only because of it); without such MatMuls it changes nothing. The compiled
model says which (``run_time_quantization``), and the precision cause names it. The one-path
case keeps the plugin's defaults (it is the default path).

A compile costs ~50 ms of CPU even for a two-node graph (the plugin's transformation
pipeline), several times ONNX Runtime's whole case, and a case compiles ~3 graphs (its own,
the symbolic-batch and the unit-axis contract graphs). Graphs under 4 MiB therefore go
through OpenVINO's model cache (``CACHE_DIR``), and a hit imports the compiled blob in ~10 ms,
so a rerun of a suite compiles nothing twice. OpenVINO names a blob after the graph, not
after every compile setting (the f32 and bf16 paths shared one file): gero gives each compile
configuration its own folder. The cache lives in ``$GERO_CACHE_DIR`` (default
``~/.cache/gero``), one folder per OpenVINO version and CPU, one below it per configuration;
``GERO_CACHE_DIR=off`` turns it off.

openvino is imported inside functions (see backends.base); importing it costs ~0.1 s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gero_runner.backends.base import Backend, PathSpec
from gero_runner.case import Arrays, CaseInstance

if TYPE_CHECKING:
    import onnx

BACKEND = "openvino"
F32 = "f32"
DEFAULT = "default"
CACHE_ENV = "GERO_CACHE_DIR"
CACHE_LIMIT = 4 << 20
"""Graphs up to this many bytes are cached: a bigger one's compile is small beside its run."""


def _openvino() -> Any:
    """The openvino package, imported without its telemetry: ``import openvino`` imports
    its converter, which sends an event to Google Analytics from a thread unless the user
    opted out (openvino_telemetry). gero computes; it reports to no one, and a thread left
    behind would make every later isolated call start a new interpreter. Hidden, the
    package is replaced by the converter's own stub."""
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino

    return openvino


@functools.cache  # one Core per worker process: it loads the CPU plugin once
def _core() -> Any:
    return _openvino().Core()


@functools.cache
def default_precision() -> str:
    """The CPU plugin's inference precision when none is asked for (e.g. 'bf16')."""
    hint = _core().get_property("CPU", "INFERENCE_PRECISION_HINT")
    return str(hint.get_type_name())


@functools.cache
def cache_dir() -> str | None:
    """This OpenVINO's and this CPU's folder of compiled graphs, or None (turned off, or
    it cannot be made)."""
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() == "off":
        return None
    root = Path(setting) if setting else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gero"
    cpu = hashlib.sha256(_cpu_identity().encode()).hexdigest()[:12]
    path = root / f"openvino-{RUNTIME.version()}-{cpu}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(path)


def _settings_folder(cache: str, config: Mapping[str, Any]) -> str | None:
    """One folder of the cache per compile configuration: OpenVINO names a blob after the
    graph alone, so the f32 and bf16 paths (and the dynamic-quantization and thread
    settings) shared one file, and one path loaded a blob the other had compiled (a wrong
    output, then a crash, on PP-OCRv4's int8 recogniser)."""
    key = json.dumps(sorted((k, str(v)) for k, v in config.items()))
    folder = Path(cache) / hashlib.sha256(key.encode()).hexdigest()[:12]
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None  # no cache rather than a shared one
    return str(folder)


def _cpu_identity() -> str:
    """The CPU's model name and instruction-set flags (what a compiled blob depends on)."""
    import platform

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    wanted = [line for line in lines if line.startswith(("model name", "flags"))][:2]
    return "\n".join([platform.machine(), platform.processor(), *wanted])


class OpenVino(Backend):
    name = BACKEND
    distribution = "openvino"
    module = "openvino"
    extra = "openvino"
    survives_fork = False  # a forked child of a process that ran it hangs on inference

    def paths(self, threads: int) -> list[PathSpec]:
        return self.paths_at(default_precision(), threads)

    def paths_at(self, default: str, threads: int) -> list[PathSpec]:
        """Its paths where the CPU plugin's default precision is ``default`` (a release's
        is asked of its worker: ``backends.release``)."""
        # No threads contract (with_threads): a thread count is a compile-time setting here,
        # and a compile costs ~30-150 ms a session; the inference threads are recorded.
        f32 = _settings(F32, F32, threads)
        if default == F32:  # the default path would be this one again: recorded, not run
            return [self.spec(F32, threads, {**f32, "plugin_default": default})]
        return [self.spec(F32, threads, f32),
                self.spec(f"{default}-{DEFAULT}", threads, _settings(DEFAULT, default, threads))]

    def model_baseline(self, paths: list[PathSpec]) -> PathSpec:
        # The float32 setting: a floor measured at a lower default precision would excuse
        # exactly the error the model family should show.
        return next((p for p in paths if p.optimization == F32), paths[0])

    def supports(self, case: CaseInstance) -> str | None:
        odd = sorted({str(x.dtype) for x in case.inputs.values() if x.dtype.kind in "OUSVc"})
        if odd:
            return f"OpenVINO takes no {', '.join(odd)} tensors"
        return None

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        openvino = _openvino()
        core = _core()
        read = core.read_model(model, openvino.Tensor(np.empty(0, np.uint8)))
        config: dict[str, Any] = {
            "INFERENCE_NUM_THREADS": int(settings["inference_num_threads"]),
            "NUM_STREAMS": 1,
            "ENABLE_CPU_PINNING": False,  # workers share the machine's cores
        }
        if settings["inference_precision_hint"] != DEFAULT:
            config["INFERENCE_PRECISION_HINT"] = settings["inference_precision_hint"]
        if settings["inference_precision_hint"] == F32 and "plugin_default" not in settings:
            # f32 beside a default path: float32 arithmetic throughout, so the plugin's
            # dynamic quantization of activations (int8-weight MatMuls, group size 32 by
            # default) is the default path's, named with it (the module docstring).
            config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
        cache = cache_dir() if len(model) <= CACHE_LIMIT else None
        folder = _settings_folder(cache, config) if cache is not None else None
        if folder is not None:  # a hit is the blob this compile made before (docstring)
            config["CACHE_DIR"] = folder
        compiled = core.compile_model(read, "CPU", config)
        return compiled, compiled.create_infer_request()

    def surviving_tensors(self, model: onnx.ModelProto, settings: Mapping[str, Any]
                          ) -> dict[str, str] | None:
        # Its executed graph (not ONNX): an executed node is named after the ONNX node it
        # ends (or its output tensor).
        compiled, _ = self.build(model.SerializeToString(), settings)
        kept = {op.get_friendly_name() for op in compiled.get_runtime_model().get_ordered_ops()}
        del compiled
        by_node = {o for n in model.graph.node if n.name in kept for o in n.output if o}
        return dict.fromkeys(kept | by_node, "")

    def float_precision(self, settings: Mapping[str, Any]) -> str | None:
        precision = settings.get("inference_precision")
        return str(precision) if precision else None

    def widened_nodes(self, model: bytes, settings: Mapping[str, Any]) -> dict[str, str] | None:
        # Its executed graph says what each executed node writes ("outputPrecisions") and
        # which ONNX nodes it stands for, by node name or output tensor (as above); whatever
        # the hint, a CPU without float16 arithmetic computes float16 nodes in f32.
        import onnx

        from gero_runner.backends.base import float16_nodes

        halves = float16_nodes(onnx.load_from_string(model))
        if not halves:
            return {}
        by_name = {name: key for key, (_, outs) in halves.items() for name in (key, *outs)}
        compiled, _ = self.build(model, settings)
        widened = {}
        for op in compiled.get_runtime_model().get_ordered_ops():
            info = op.get_rt_info()
            if "outputPrecisions" not in info or "originalLayersNames" not in info:
                continue
            if "f32" not in info["outputPrecisions"].astype(str).split(","):
                continue
            for name in info["originalLayersNames"].astype(str).split(","):
                if name in by_name:
                    widened[by_name[name]] = halves[by_name[name]][0]
        del compiled
        return widened

    def run_time_quantization(self, model: bytes, settings: Mapping[str, Any]) -> str:
        # The plugin quantizes the activations of a FullyConnected (a MatMul) whose weights
        # are int8 or uint8, where its DYNAMIC_QUANTIZATION_GROUP_SIZE is not 0; the
        # runtime model keeps those weights in their integer type.
        compiled, _ = self.build(model, settings)
        group = int(compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE"))
        count = 0
        if group:
            for op in compiled.get_runtime_model().get_ordered_ops():
                info = op.get_rt_info()
                if ("layerType" in info and info["layerType"].astype(str) == "FullyConnected"
                        and op.get_input_size() > 1
                        and op.get_input_element_type(1).get_type_name() in ("i8", "u8")):
                    count += 1
        del compiled
        if not count:
            return ""
        matmuls = f"{count} MatMul{'s' if count > 1 else ''}"
        return (f"quantizes the activations of its {matmuls} with int8 weights to 8 bits at "
                f"run time (dynamic quantization, group size {group})")

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        compiled, request = session
        names = list(inputs)
        request.infer({i: inputs[_input_name(p, names[i] if i < len(names) else None, inputs)]
                       for i, p in enumerate(compiled.inputs)})
        # Copies: the request reuses its output buffers on the next run.
        return [np.array(request.get_output_tensor(i).data, copy=True)
                for i in range(len(compiled.outputs))]


def _input_name(port: Any, at: str | None, inputs: Arrays) -> str:
    """The graph input a compiled model's input port stands for. A port can carry several
    tensor names (a graph input that feeds a Cast straight away also takes the Cast's output
    name, as in a float16 model with float32 inputs), and ``get_any_name`` may give either;
    a port whose names are all another tensor's (a graph input passed straight through to an
    output, as by Dropout, takes the output's name) is the graph input at its position (the
    ONNX frontend keeps the graph's input order)."""
    names = port.get_names()
    found = [n for n in inputs if n in names]
    if len(found) == 1:
        return found[0]
    if not found and at is not None:
        return at
    raise ValueError(f"OpenVINO input {port.get_any_name()!r} (names: "
                     f"{', '.join(sorted(names))}) matches {len(found)} of the case's "
                     f"inputs ({', '.join(inputs)})")


def _settings(hint: str, precision: str, threads: int) -> dict[str, Any]:
    return {"device": "CPU", "inference_precision_hint": hint,
            "inference_precision": precision, "inference_num_threads": threads,
            "num_streams": 1}


RUNTIME = OpenVino()
