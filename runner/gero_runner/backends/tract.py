"""tract, Sonos' Rust inference engine, through its Python bindings: one path with its
optimiser (``into_optimized``: kernel selection, fusions) and one without (``into_typed``:
the decluttered tract-core graph as the ONNX importer builds it).

tract 0.23 dropped the unoptimised path from its Python API (``into_runnable`` always
optimises), hence the extra's ``<0.23``. tract loads models from a file, so the bytes are
written to a temporary file that lives only while the model is read. tract 0.22's
``Value.to_numpy`` reads every tensor as float32 whatever its element type (float16 outputs
come back as garbage), so outputs are read here with the element type tract reports.

tract analyses a graph from its declared input facts. Where it cannot (an input without a
shape, a Flatten of symbolic dims: "Can not compute a shape with square of symbols"), the
graph is analysed again with the case's concrete input shapes and element types
(``set_input_fact``), once per input signature: the settings record this policy as
``input_facts``, and a graph tract cannot run even with concrete shapes keeps its error.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from gero_runner.backends.base import NEEDED_WHEN_OFF, Backend, PathSpec
from gero_runner.case import Arrays, CaseInstance

BACKEND = "tract"
OPTIMIZED = "optimized"
UNOPTIMIZED = "unoptimized"
_PIPELINES = {OPTIMIZED: "into_optimized", UNOPTIMIZED: "into_typed"}
INPUT_FACTS = "declared; the inputs' shapes where tract cannot analyse the declared ones"


class Tract(Backend):
    name = BACKEND
    distribution = "tract"
    module = "tract"
    extra = "tract"

    def paths(self, threads: int) -> list[PathSpec]:
        # tract runs on the calling thread: no thread setting to record.
        return [self.spec(level, 1, {"pipeline": _PIPELINES[level],
                                     "input_facts": INPUT_FACTS})
                for level in (UNOPTIMIZED, OPTIMIZED)]

    def needed_when(self, spec: PathSpec, paths: list[PathSpec]) -> str:
        # Without its optimiser tract runs 40-60 s on a real CNN: only where the optimised
        # setting is off its gates does it say whether the optimiser is at fault.
        if spec.optimization == UNOPTIMIZED and len(paths) > 1:
            return NEEDED_WHEN_OFF
        return super().needed_when(spec, paths)

    def supports(self, case: CaseInstance) -> str | None:
        odd = sorted({str(x.dtype) for x in case.inputs.values() if x.dtype.kind in "OUSVc"})
        if odd:
            return f"tract's Python API takes no {', '.join(odd)} tensors"
        return None

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        with _short_errors():
            return self._build(model, settings)

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        with _short_errors():
            if isinstance(session, _Concrete):
                session = session.for_inputs(inputs)
            names, runnable = session
            outputs = runnable.run([_value(inputs[n]) for n in names])
            return [_to_numpy(o) for o in outputs]

    def _build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        pipeline = settings["pipeline"]
        if pipeline not in _PIPELINES.values():
            raise ValueError(f"unknown tract pipeline {pipeline!r}; known: "
                             f"{', '.join(_PIPELINES.values())}")
        try:
            return _runnable(model, pipeline, None)
        except Exception:
            if not _open_inputs(model):
                raise
            return _Concrete(model, pipeline)  # analysed on the first run, from its inputs


def _runnable(model: bytes, pipeline: str, inputs: Arrays | None) -> tuple[list[str], Any]:
    """The input names and a runnable of the graph, its input facts set from ``inputs``
    (shape and element type) when given."""
    import tract

    fd, path = tempfile.mkstemp(suffix=".onnx", prefix="gero-tract-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model if inputs is None else _without_symbolic_facts(model))
        inference = tract.onnx().model_for_path(path)
    finally:
        os.unlink(path)
    names = [inference.input_name(i) for i in range(inference.input_count())]
    if inputs is not None:
        for i, name in enumerate(names):
            x = inputs[name]
            inference.set_input_fact(i, ",".join([*(str(d) for d in x.shape),
                                                  _FACT_TYPES[x.dtype.str[1:]]]))
    typed = getattr(inference, pipeline)()
    return names, typed.into_runnable()


def _without_symbolic_facts(model: bytes) -> bytes:
    """The graph without the shapes its exporter declared for intermediates and outputs,
    for an analysis from concrete input facts: tract does not bind a declared symbol to
    the value it computes ("Impossible to unify Sym(batch) with Val(1)" on nudenet's
    YOLOv8 and on every fp16 file's input Cast of a dynamic width), so those shapes made a
    graph ONNX Runtime runs fail. Element types stay; the shapes follow from the inputs."""
    import onnx

    proto = onnx.load_from_string(model)
    _drop_shapes(proto.graph)
    return bytes(proto.SerializeToString())


def _drop_shapes(graph: Any) -> None:
    """In the graph and its subgraphs (If/Loop/Scan bodies: silero-vad's fp16 file)."""
    import onnx

    del graph.value_info[:]
    for value in graph.output:
        if value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                _drop_shapes(sub)


class _Concrete:
    """A graph tract analyses only with concrete input facts: one runnable per input
    signature (shapes and element types), built on its first run."""

    def __init__(self, model: bytes, pipeline: str) -> None:
        self.model, self.pipeline = model, pipeline
        self.runnables: dict[tuple[Any, ...], tuple[list[str], Any]] = {}

    def for_inputs(self, inputs: Arrays) -> tuple[list[str], Any]:
        key = tuple((k, x.shape, x.dtype.str) for k, x in inputs.items())
        if key not in self.runnables:
            self.runnables[key] = _runnable(self.model, self.pipeline, inputs)
        return self.runnables[key]


def _open_inputs(model: bytes) -> bool:
    """Some graph input (not an initializer) has no shape or a dimension without a value."""
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


# NumPy element types (dtype.str without the byte order) -> tract's fact mnemonics.
_FACT_TYPES = {"b1": "bool", "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64", "i1": "i8",
               "i2": "i16", "i4": "i32", "i8": "i64", "f2": "f16", "f4": "f32", "f8": "f64"}


@contextlib.contextmanager
def _short_errors() -> Iterator[None]:
    """tract's errors carry a Rust stack backtrace after the message: keep the message. A
    Rust panic also prints itself to the process's stderr (with ``RUST_BACKTRACE`` set, some
    150 lines) before Python sees it as an exception, which the path's row records: that copy
    goes to a scratch file, not to the user's terminal."""
    with _stderr_aside():
        try:
            yield
        except Exception as e:
            text = str(e)
            if _BACKTRACE not in text:
                raise
            raise type(e)(text.split(_BACKTRACE, 1)[0].strip()) from None


@contextlib.contextmanager
def _stderr_aside() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep clean
        yield
        return
    try:
        with tempfile.TemporaryFile() as scratch:
            os.dup2(scratch.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


_BACKTRACE = "Stack backtrace:"


# tract's datum type codes (tract/value.py) -> NumPy element types.
_DTYPES = {0x01: np.bool_, 0x11: np.uint8, 0x12: np.uint16, 0x14: np.uint32, 0x18: np.uint64,
           0x21: np.int8, 0x22: np.int16, 0x24: np.int32, 0x28: np.int64, 0x32: np.float16,
           0x34: np.float32, 0x38: np.float64}


def _value(x: np.ndarray) -> Any:
    """A tract value holding a copy of ``x``. tract 0.22's ``Value.from_numpy`` passes the
    array through ``np.ascontiguousarray``, which makes a 0-d array shape [1]: a scalar
    input then fails tract's fact check ("got 1,F32 -1, expected to match fact ,F32")."""
    import ctypes

    from tract.bindings import check, lib
    from tract.value import Value, dt_numpy_to_tract

    x = np.asarray(x, order="C")  # keeps a 0-d array 0-d
    shape = (ctypes.c_size_t * x.ndim)(*x.shape)
    ptr = ctypes.c_void_p()
    check(lib.tract_value_from_bytes(dt_numpy_to_tract(x.dtype), ctypes.c_size_t(x.ndim), shape,
                                     ctypes.c_void_p(x.__array_interface__["data"][0]),
                                     ctypes.byref(ptr)))
    return Value(ptr)


def _to_numpy(value: Any) -> np.ndarray:
    """A copy of a tract value's data in its own element type."""
    import ctypes

    from tract.bindings import check, lib

    datum, rank = ctypes.c_uint32(), ctypes.c_size_t()
    shape = ctypes.POINTER(ctypes.c_size_t)()
    data = ctypes.c_void_p()
    check(lib.tract_value_as_bytes(value.ptr, ctypes.byref(datum), ctypes.byref(rank),
                                   ctypes.byref(shape), ctypes.byref(data)))
    if datum.value not in _DTYPES:
        raise TypeError(f"tract returned an element type gero cannot read (code "
                        f"{datum.value:#x})")
    dtype = np.dtype(_DTYPES[datum.value])
    dims = tuple(int(shape[i]) for i in range(rank.value))
    count = int(np.prod(dims, dtype=np.int64))
    if count == 0 or not data.value:
        return np.zeros(dims, dtype)
    raw = ctypes.string_at(data.value, count * dtype.itemsize)  # a copy of tract's buffer
    return np.frombuffer(raw, dtype=dtype).reshape(dims).copy()


RUNTIME = Tract()
