"""Helpers that tests in several folders share: small ONNX models written with onnx.helper,
a Ctrl-C'd run, and the stored rows of a run. pytest finds this folder through ``pythonpath`` in
pyproject.toml, mypy through ``mypy_path``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from gero_runner.execution import pool
from gero_runner.storage.reader import open_run
from gero_runner.storage.store import DataRoot


def save(path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
         outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] | None = None,
         opsets: dict[str, int] | None = None) -> str:
    """A checked model (opset 17 unless ``opsets`` says otherwise) at ``path``."""
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or {"": 17}).items()]
    model = helper.make_model(helper.make_graph(nodes, path.stem, inputs, outputs, inits or []),
                              opset_imports=imports)
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def classifier(path: Path, *, mixes_batch: bool = False) -> str:
    """x[batch, 4] -> tanh(x·W1 + b) -> ·W2 -> logits[batch, 3], probs (softmax).

    With ``mixes_batch`` the hidden layer subtracts the batch mean: each example's output
    depends on the others, which the batch partition law catches (a broken model).
    """
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array((rng.standard_normal((4, 4)) * 0.5).astype(np.float32), "W1")
    w2 = numpy_helper.from_array((rng.standard_normal((4, 3)) * 0.5).astype(np.float32), "W2")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["h2"]),
             helper.make_node("Tanh", ["h2"], ["h3"])]
    if mixes_batch:
        nodes += [helper.make_node("ReduceMean", ["h3"], ["m"], axes=[0], keepdims=1),
                  helper.make_node("Sub", ["h3", "m"], ["h4"])]
    else:
        nodes += [helper.make_node("Identity", ["h3"], ["h4"])]
    nodes += [helper.make_node("MatMul", ["h4", "W2"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    return save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["batch", 4])],
                [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
                 helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
                [w1, w2, b])


def dense_softmax(tmp: Path) -> tuple[Path, Path]:
    """``tmp/dense.onnx``, x[2, 8] -> MatMul(8x4) -> Softmax -> y (ONNX Runtime's levels all
    agree on it), and its inputs ``tmp/in.npz``."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]),
                               helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
                              "dense", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp / "dense.onnx")
    np.savez(tmp / "in.npz", x=rng.standard_normal((2, 8)).astype(np.float32))
    return tmp / "dense.onnx", tmp / "in.npz"


def never_ending_model(name: str = "X", dtype: str = "float32",
                       shape: tuple[int, ...] = (2,)) -> bytes:
    """An ONNX model whose Loop never ends (no trip count, the condition stays true); its one
    input ``name`` has ``dtype`` and ``shape``, so a case fed like that runs it for ever."""
    import numpy as np

    h = helper
    elem = h.np_dtype_to_tensor_dtype(np.dtype(dtype))
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["x_in", "one"], ["x_out"])], "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_in", elem, list(shape))],
        [h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("x_out", elem, list(shape))],
        [h.make_tensor("one", elem, [1], np.ones(1, dtype))])
    graph = h.make_graph(
        [h.make_node("Loop", ["", "cond", name], ["Y"], body=body)], "hang",
        [h.make_tensor_value_info(name, elem, list(shape))],
        [h.make_tensor_value_info("Y", elem, list(shape))],
        [h.make_tensor("cond", TensorProto.BOOL, [], [True])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)], ir_version=10)
    return bytes(model.SerializeToString())


def reference_only_hang(path: Path) -> str:
    """A model ``y = x + Loop(...)`` (``x`` of shape [batch, 4]) whose Loop runs for ever
    on the ReferenceEvaluator only: its trip count is ``(max(Softmax(zeros[1,2,2]))·4 − 1)
    · 1e15``, and Softmax-12 softmaxes the 4 coerced values (0.25: no iteration) everywhere
    but on the stock evaluator, which takes the last axis (0.5: 1e15 iterations; the known
    defect softmax-opset12-axis, which the corrected evaluator and so the float64 shadow do
    not have)."""
    h = helper
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["acc_in", "one"], ["acc_out"])], "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1])],
        [h.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1])],
        [h.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    nodes = [h.make_node("Softmax", ["zeros"], ["sm"]),
             h.make_node("ReduceMax", ["sm"], ["mx"], keepdims=0),
             h.make_node("Mul", ["mx", "four"], ["m4"]),
             h.make_node("Sub", ["m4", "onef"], ["m3"]),
             h.make_node("Mul", ["m3", "big"], ["tripf"]),
             h.make_node("Cast", ["tripf"], ["trip"], to=TensorProto.INT64),
             h.make_node("Loop", ["trip", "cond", "acc0"], ["acc"], body=body),
             h.make_node("Add", ["x", "acc"], ["y"])]
    graph = h.make_graph(
        nodes, "reference_only_hang",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [h.make_tensor("zeros", TensorProto.FLOAT, [1, 2, 2], np.zeros(4)),
         h.make_tensor("four", TensorProto.FLOAT, [], [4.0]),
         h.make_tensor("onef", TensorProto.FLOAT, [], [1.0]),
         h.make_tensor("big", TensorProto.FLOAT, [], [1e15]),
         h.make_tensor("acc0", TensorProto.FLOAT, [1], [0.0]),
         h.make_tensor("cond", TensorProto.BOOL, [], [True])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 12)], ir_version=7)
    onnx.save(model, path)
    return str(path)


def interrupted_after(finished: int) -> Callable[..., Iterator[pool.Outcome]]:
    """A stand-in for ``pool.run_cases`` that is Ctrl-C'd (KeyboardInterrupt) once
    ``finished`` cases are done: monkeypatch ``gero_runner.run.run_cases`` with it."""

    def run_cases(*args: Any, **kwargs: Any) -> Iterator[pool.Outcome]:
        for i, outcome in enumerate(pool.run_cases(*args, **kwargs)):
            if i == finished:
                raise KeyboardInterrupt
            yield outcome

    return run_cases


def rows_of(root: Path, run_id: str) -> list[dict[str, Any]]:
    """Every stored observation of the run, as dicts."""
    rel = duckdb.read_parquet(str(DataRoot(root).run_dir(run_id) / "observations.parquet"))
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def obs_rows(root: Path) -> list[dict[str, Any]]:
    """Every row of the newest run's ``obs`` view, as the query layer reads it (its derived
    columns included), as dicts."""
    with open_run(root) as run:
        cursor = run.connection.execute("SELECT * FROM obs")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


DASK_SITE = Path(__file__).with_name("dask_site")
"""Put on a ``dask worker``'s PYTHONPATH: the faults its environment asks for (see its
sitecustomize.py)."""


FORKING = "ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"
"""Python 3.12+ warns when a process with threads forks: the tests that ask for it know."""


def process_gone(pid: int) -> bool:
    """Exited (a zombie waiting for a reaper counts as gone: it holds no memory). Linux."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")
