"""Every runtime behind the one backend interface: each check family runs on each selected
runtime, its settings are its own paths, and a runtime that is absent or crashes is said so.

OpenVINO and tract are optional extras: their tests skip with the pip command when absent.
OpenVINO does not survive a fork of a process that has run it, so this module runs every
runtime in a child process (as gero run does) and the test process stays clean.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gero_runner import backends, schema
from gero_runner.backends.base import Backend
from gero_runner.cases import onnx_backend
from gero_runner.checks.task import case_task
from gero_runner.errors import GeroError
from gero_runner.evidence.replay import replay_artifact
from gero_runner.execution import pool
from gero_runner.execution.context import RunSettings
from gero_runner.process import start_method
from gero_runner.request import PATHS_ALL
from gero_runner.run import ModelOptions, RunRequest, collect_cases, execute
from gero_runner.schema import EXECUTION, PASSED
from gero_runner.storage.store import DataRoot, batch_from_bytes

# OpenVINO's and tract's calls here run in children forked from the test process (_in_child):
# each test may be run once more (tests/conftest.py).
pytestmark = pytest.mark.forks

RUNTIMES = list(backends.RUNTIMES)


def _require(name: str) -> Backend:
    backend = backends.get(name)
    if not backend.installed():
        pytest.skip(f"{name} is not installed ({backend.install_hint()})")
    return backend


def _synthetic(op: str, dtype: str = "float32") -> Any:
    (case, *_) = collect_cases(RunRequest(ops=[op], dtypes=[dtype]))
    return case


def _rows(case: Any, tmp_path: Path, name: str, checks: tuple[str, ...] = ()
          ) -> list[dict[str, Any]]:
    settings = RunSettings(data_root=str(tmp_path), backends=(name,), repeats=2, checks=checks)
    (outcome,) = pool.run_cases([case], settings, jobs=1, timeout_s=60,
                                  task=case_task())
    if outcome.result.batch is None:  # the parent's own fallback rows are typed
        return [r.as_dict() for r in outcome.result.rows]
    rows: list[dict[str, Any]] = batch_from_bytes(outcome.result.batch).to_pylist()
    return rows


def _paths(name: str) -> dict[str, dict[str, Any]]:
    """A runtime's settings by label (asked in a child: OpenVINO's loads its plugin)."""
    return dict(_in_child(_settings_of, name))


def _settings_of(name: str) -> dict[str, dict[str, Any]]:
    return {p.optimization: dict(p.settings) for p in backends.get(name).paths(1)}


def _in_child(function: Any, *args: Any) -> Any:
    """``function(*args)`` in a forked child, its result sent back (see the docstring)."""
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def target() -> None:
        send.send(function(*args))

    process = ctx.Process(target=target)
    process.start()
    try:
        assert receive.poll(120), "the child gave no result"
        return receive.recv()
    finally:
        process.join(5)


@pytest.mark.parametrize("name", RUNTIMES)
@pytest.mark.slow
def test_agreement_and_analytic_on_every_setting(name: str, tmp_path: Path) -> None:
    _require(name)
    rows = _rows(_synthetic("Relu"), tmp_path, name)
    settings = _paths(name)
    for check in ("agreement", "analytic"):
        mine = [r for r in rows if r["check"] == check and r["backend"] == name]
        assert sorted(r["optimization"] for r in mine) == sorted(settings)
        assert all(r["result"] == PASSED for r in mine), [r["reason"] for r in mine]
    # levels: each setting against the runtime's first, on the same inputs
    levels = [r for r in rows if r["check"] == "levels" and r["backend"] == name]
    assert sorted(r["optimization"] for r in levels) == sorted(list(settings)[1:])
    for r in rows:  # every observation records its runtime's settings
        if r["backend"] == name:
            assert json.loads(r["session_settings"]) == settings[r["optimization"]]
    assert {r["reference"] for r in rows if r["check"] == "agreement"} == {backends.REFERENCE}


@pytest.mark.parametrize("name", RUNTIMES)
def test_contracts_and_variants_run_on_the_runtime(name: str, tmp_path: Path) -> None:
    _require(name)
    rows = _rows(_synthetic("Softmax"), tmp_path, name, checks=("contracts", "variants"))
    mine = {r["check"] for r in rows if r["backend"] == name}
    assert "contract:partition" in mine and "contract:determinism" in mine
    assert any(c.startswith("variant:") for c in mine)
    assert any(c.startswith("contract:prob") for c in mine)


@pytest.mark.parametrize("name", RUNTIMES)
@pytest.mark.slow
def test_expected_outputs_of_an_onnx_node_case(name: str, tmp_path: Path) -> None:
    _require(name)
    (tc,) = [t for t in onnx_backend.collect() if t.name == "test_relu"]
    case = onnx_backend.to_case(tc, "Relu")
    rows = [r for r in _rows(case, tmp_path, name) if r["backend"] == name]
    expected = [r for r in rows if r["check"] == "expected"]
    assert expected and all(r["result"] == PASSED for r in expected)


@pytest.mark.parametrize("name", RUNTIMES)
@pytest.mark.slow
def test_model_family_on_a_user_model(name: str, tmp_path: Path) -> None:
    _require(name)
    path = tmp_path / "tiny.onnx"
    onnx.save(_conv_model(), path)
    # Every setting (--paths all): each goes through the backend interface.
    request = RunRequest(models=[str(path)], data_root=tmp_path / "data", repeats=1,
                         backends=("onnxruntime", name), paths=PATHS_ALL,
                         model_options=ModelOptions(variants=("fp16",)))
    record = execute(request)
    rows = _stored(tmp_path / "data", record.run_id)
    fp32 = {r["optimization"] for r in rows if r["check"] == "model:fp32"
            and r["backend"] == name}
    assert fp32 == set(_paths(name))
    _has_its_own_floor_and_fp16_rows(rows, name, "fp16:onnxruntime:all")


def _has_its_own_floor_and_fp16_rows(rows: list[dict[str, Any]], name: str,
                                     fp16_baseline: str) -> None:
    """The runtime's own noise floor and fp16 verdict, through the backend interface; its
    settings run the float16 variant (OpenVINO once failed to feed it: the graph input that
    feeds a Cast also takes the Cast's name)."""
    mine = [r for r in rows if r["backend"] == name]
    (floor,) = [r for r in mine if r["check"] == "model:noise-floor"]
    assert floor["result"] == PASSED and floor["reference"].startswith(f"{name}:")
    (vs_model,) = [r for r in mine if r["check"] == "model:fp16:vs-model"]
    assert vs_model["reference"].startswith(f"fp32:{name}:"), vs_model["reason"]
    fp16 = [r for r in mine if r["check"].startswith("model:fp16")]
    # The precision row names a runtime that widens the fp16 file to float32 (its class is
    # execution: the file is not computed as given); every other fp16 row ran.
    judged = [r for r in fp16 if r["check"] != "model:fp16:precision"]
    assert judged and all(r["result"] != EXECUTION for r in judged), [
        r["reason"] for r in judged]
    # Every setting of the runtime is gated against the file's float64 shadow (rounded to
    # float16 at each node, or exact for a setting that computes in float32), never against
    # another runtime (issue 28: the fp16 yardstick).
    gated = {r["optimization"] for r in fp16 if r["check"] == "model:fp16:scaled"}
    assert gated == set(_paths(name))
    assert {r["reference"] for r in fp16 if r["check"] == "model:fp16:scaled"} <= {
        "fp16-exact-shadow", "fp16-rounded-shadow"}


@pytest.mark.parametrize("name", [n for n in RUNTIMES if n != "onnxruntime"])
@pytest.mark.slow
def test_model_family_without_onnxruntime(name: str, tmp_path: Path) -> None:
    _require(name)
    path = tmp_path / "tiny.onnx"
    onnx.save(_conv_model(), path)
    record = execute(RunRequest(models=[str(path)], data_root=tmp_path / "data", repeats=1,
                                backends=(name,), paths=PATHS_ALL,
                                model_options=ModelOptions(variants=("fp16",))))
    rows = _stored(tmp_path / "data", record.run_id)
    fp32 = {r["optimization"] for r in rows if r["check"] == "model:fp32"
            and r["backend"] == name}
    assert fp32 == set(_paths(name))
    # Without ONNX Runtime, this runtime's baseline is the run's: the fp16 gates judge the
    # variant against it.
    baseline = {"openvino": "f32", "tract": "optimized"}[name]
    _has_its_own_floor_and_fp16_rows(rows, name, f"fp16:{name}:{baseline}")


def _stored(root: Path, run_id: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    table = pq.read_table(DataRoot(root).run_dir(run_id) / "observations.parquet")
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _conv_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weight = onnx.numpy_helper.from_array(
        rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 8, 8])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    return model


def _openvino_paths() -> tuple[str, dict[str, dict[str, Any]], float]:
    from gero_runner.backends import openvino

    backend = backends.get("openvino")
    paths = {p.optimization: dict(p.settings) for p in backend.paths(1)}
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (y,) = backend.run(backend.build(_conv_model().SerializeToString(), paths["f32"]), {"x": x})
    reference = backends.get(backends.REFERENCE)
    (ref,) = reference.run(reference.build(_conv_model().SerializeToString(), {}), {"x": x})
    return openvino.default_precision(), paths, float(np.abs(y - ref).max())


def test_openvino_default_precision_is_its_own_labelled_path() -> None:
    _require("openvino")
    precision, paths, f32_error = _in_child(_openvino_paths)
    assert paths["f32"]["inference_precision"] == "f32"
    if precision == "f32":  # the default is the f32 path again: recorded on it, not rerun
        assert set(paths) == {"f32"} and paths["f32"]["plugin_default"] == "f32"
    else:
        assert set(paths) == {"f32", f"{precision}-default"}
        assert paths[f"{precision}-default"]["inference_precision"] == precision
    assert f32_error < 1e-4  # the f32 path computes a float32 Conv to float32 accuracy


def _int8_weight_matmul() -> onnx.ModelProto:
    """x @ DequantizeLinear(W int8): the plugin quantizes such a MatMul's activations to
    int8 on the fly by default (5e-3 of the output's scale off here)."""
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (256, 64)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
         helper.make_node("MatMul", ["x", "wf"], ["y"])], "int8-weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])],
        [onnx.numpy_helper.from_array(weight, "w"),
         onnx.numpy_helper.from_array(np.array(0.01, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _openvino_int8_weight_errors() -> dict[str, float]:
    """Each OpenVINO path's scaled error on the int8-weight MatMul against float64."""
    backend = backends.get("openvino")
    model = _int8_weight_matmul()
    x = np.random.default_rng(1).standard_normal((8, 256)).astype(np.float32)
    w = onnx.numpy_helper.to_array(model.graph.initializer[0]).astype(np.float64) * 0.01
    exact = x.astype(np.float64) @ w
    errors = {}
    for p in backend.paths(1):
        (y,) = backend.run(backend.build(model.SerializeToString(), p.settings), {"x": x})
        errors[p.optimization] = float(np.abs(y - exact).max() / np.abs(exact).max())
    return errors


def test_openvinos_f32_path_computes_int8_weight_matmuls_in_float32() -> None:
    """Beside a default path, f32 turns the plugin's dynamic activation quantization off
    (an int8-weight MiniLM was 4.5e-2 off float64 at 'f32', 2e-6 with it off): the
    default path keeps it and is named for it."""
    _require("openvino")
    errors = _in_child(_openvino_int8_weight_errors)
    if set(errors) == {"f32"}:
        pytest.skip("this CPU's OpenVINO default is f32: one path, the plugin's defaults")
    assert errors["f32"] < 1e-5, errors
    default = next(e for name, e in errors.items() if name.endswith("-default"))
    assert default > 1e-3, errors


def _openvino_paths_through_one_cache(cache: str) -> dict[str, list[float]]:
    """The int8-weight MatMul compiled at every OpenVINO path, twice, with the cache in
    ``cache``: each path's scaled errors against float64 (the second compile a hit)."""
    import os

    os.environ["GERO_CACHE_DIR"] = cache
    from gero_runner.backends import openvino

    openvino.cache_dir.cache_clear()
    errors: dict[str, list[float]] = {}
    for _ in range(2):
        for name, error in _openvino_int8_weight_errors().items():
            errors.setdefault(name, []).append(error)
    return errors


def test_openvinos_paths_never_share_a_cached_blob(tmp_path: Path) -> None:
    """OpenVINO names a cached blob after the graph: without a folder per configuration the
    second path loaded the first one's compile (PP-OCRv4's int8 recogniser: a wrong output,
    then SIGSEGV)."""
    _require("openvino")
    errors = _in_child(_openvino_paths_through_one_cache, str(tmp_path / "cache"))
    if set(errors) == {"f32"}:
        pytest.skip("this CPU's OpenVINO default is f32: one path")
    for name, (first, hit) in errors.items():
        assert first == hit, (name, errors)  # a cache hit computes what the compile did
    assert errors["f32"][1] < 1e-5, errors  # not the default path's blob
    assert len(list((tmp_path / "cache").glob("openvino-*/*"))) >= len(errors)


def _openvino_cached(cache: str) -> tuple[list[str], list[bytes]]:
    """The Conv model compiled with the cache in ``cache`` twice (a miss, then a hit) and once
    with the cache off, each run on the same input: the cache's files and the outputs."""
    from gero_runner.backends import openvino

    backend = backends.get("openvino")
    spec = backend.paths(1)[0]
    model = _conv_model().SerializeToString()
    x = {"x": np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    outputs = []
    for setting in (cache, cache, "off"):
        os.environ["GERO_CACHE_DIR"] = setting
        openvino.cache_dir.cache_clear()
        (y,) = backend.run(backend.build(model, spec.settings), x)
        outputs.append(y.tobytes())
    folder = Path(cache)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()), outputs


def test_openvino_reuses_a_compiled_graph_from_its_cache(tmp_path: Path) -> None:
    _require("openvino")
    files, outputs = _in_child(_openvino_cached, str(tmp_path))
    assert files and all(f.startswith("openvino-") for f in files)
    assert outputs[0] == outputs[1] == outputs[2]  # a hit computes what a compile does


def test_tract_reads_outputs_in_their_own_element_type() -> None:
    backend = _require("tract")  # tract survives a fork: it runs in this process
    for dtype, proto in ((np.float16, TensorProto.FLOAT16), (np.float64, TensorProto.DOUBLE),
                         (np.int64, TensorProto.INT64)):
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])], "id",
            [helper.make_tensor_value_info("x", proto, [2, 3])],
            [helper.make_tensor_value_info("y", proto, [2, 3])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        x = (np.arange(6).reshape(2, 3) - 2).astype(dtype)
        for spec in backend.paths(1):
            (y,) = backend.run(backend.build(model.SerializeToString(), spec.settings),
                               {"x": x})
            assert y.dtype == x.dtype and np.array_equal(y, x)


@pytest.mark.slow
def test_tract_takes_the_inputs_shapes_where_it_cannot_analyse_symbolic_ones() -> None:
    backend = _require("tract")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12
    flags = np.array([[True, False], [False, True]])
    graphs = [  # tract: "Can not compute a shape with square of symbols"
        ([helper.make_node("Flatten", ["x"], ["y"], axis=1)],
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "L"]), x,
         x.reshape(2, 12)),
        # no declared shape at all: "Source node without a determined fact"
        ([helper.make_node("Relu", ["x"], ["y"])],
         helper.make_tensor_value_info("x", TensorProto.FLOAT, None), x, np.maximum(x, 0)),
        ([helper.make_node("Not", ["x"], ["y"])],
         helper.make_tensor_value_info("x", TensorProto.BOOL, None), flags, ~flags)]
    for nodes, declared, feed, expected in graphs:
        graph = helper.make_graph(nodes, "g", [declared],
                                  [helper.make_tensor_value_info("y", declared.type.tensor_type
                                                                 .elem_type, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 9
        for spec in backend.paths(1):
            assert "input_facts" in spec.settings
            session = backend.build(model.SerializeToString(), spec.settings)
            for batch in (feed, feed[:1]):  # a second input signature: analysed again
                (y,) = backend.run(session, {"x": batch})
                assert np.array_equal(y, expected[:len(batch)]), (nodes[0].op_type, spec)


def test_tract_analysed_from_concrete_inputs_drops_the_declared_symbolic_shapes() -> None:
    """nudenet's YOLOv8 (and every fp16 file's input Cast of a dynamic width): the exporter
    declared intermediate shapes over symbols, which tract, analysing from the inputs'
    concrete shapes, would not bind ("Impossible to unify Sym(N) with Val(2)"): tract was
    said not to run a graph ONNX Runtime runs."""
    backend = _require("tract")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Flatten", ["h"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "C", "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "CL"])],
        value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, ["N", "C", "L"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    for spec in backend.paths(1):
        (y,) = backend.run(backend.build(model.SerializeToString(), spec.settings), {"x": x})
        assert np.array_equal(y, np.maximum(x, 0).reshape(2, 12)), spec


def _scalar_and_passthrough(name: str) -> list[tuple[list[int], list[int]]]:
    """A 0-d input (tract's own from_numpy made it shape [1]) and an input the graph passes
    straight to an output (OpenVINO's port then carries only the output's name), run on
    every setting: the shapes of what came out and what was expected."""
    backend = backends.get(name)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "s"], ["y"]), helper.make_node("Dropout", ["x"], ["z"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    x, scalar = np.arange(6, dtype=np.float32).reshape(2, 3), np.array(0.5, np.float32)
    wrong = []
    for spec in backend.paths(1):
        y, z = backend.run(backend.build(model.SerializeToString(), spec.settings),
                           {"x": x, "s": scalar})
        if not (np.array_equal(y, x + scalar) and np.array_equal(z, x)):
            wrong.append((list(y.shape), list(z.shape)))
    return wrong


@pytest.mark.parametrize("name", RUNTIMES)
def test_scalar_inputs_and_passed_through_inputs(name: str) -> None:
    _require(name)
    assert _in_child(_scalar_and_passthrough, name) == []


def test_unknown_or_missing_runtime_is_named_with_its_pip_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(GeroError, match="unknown backend 'nosuch'; choose from onnxruntime"):
        backends.select(["nosuch"])
    monkeypatch.setattr(type(backends.get("tract")), "installed", lambda self: False)
    with pytest.raises(GeroError, match=r"pip install 'gero\[tract\]'"):
        backends.select(["onnxruntime", "tract"])
    assert "tract" not in backends.select(None)


@pytest.mark.usefixtures("fork_workers")
def test_unsupported_case_is_an_execution_row_with_the_reason(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runtime = backends.get("onnxruntime")
    monkeypatch.setattr(type(runtime), "supports", lambda self, case: "no Relu today")
    rows = _rows(_synthetic("Relu"), tmp_path, "onnxruntime")
    agreement = [r for r in rows if r["check"] == "agreement"]
    assert agreement and all(r["result"] == EXECUTION and "not supported: no Relu today"
                             in r["reason"] for r in agreement)


def _segfault(self: Any, session: Any, inputs: Any) -> Any:
    os.kill(os.getpid(), signal.SIGSEGV)


@pytest.mark.usefixtures("fork_workers")
def test_a_runtime_that_kills_its_worker_is_named_on_the_execution_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Forked workers (fork_workers) inherit the crashing runtime.
    monkeypatch.setattr(type(backends.get("onnxruntime")), "run", _segfault)
    case = _synthetic("Relu")
    (outcome,) = pool.run_cases([case], RunSettings(data_root=""), jobs=1, timeout_s=30,
                                  task=case_task())
    rows = outcome.result.rows or batch_from_bytes(outcome.result.batch or b"").to_pylist()
    (row,) = rows
    assert (row["result"], row["backend"], row["optimization"]) == (
        EXECUTION, "onnxruntime", "disable_all")
    assert "SIGSEGV" in row["reason"]


@pytest.mark.parametrize("name", [n for n in RUNTIMES if n != "onnxruntime"])
@pytest.mark.slow
def test_replay_reruns_every_runtime_of_the_case(name: str, tmp_path: Path) -> None:
    _require(name)
    rows = _rows(_synthetic("Relu"), tmp_path, name)
    artifact = tmp_path / rows[0]["artifact_path"]
    report = _in_child(replay_artifact, artifact, None,
                       [schema.observation_from_row(r) for r in rows])
    replayed = [o for o in report.observations if o.backend == name]
    assert replayed and all(o.reproduced for o in replayed), report.to_dict()


def _pool_after_openvino_ran_here(data_root: str) -> list[str]:
    # As in the gero command (which forks its workers), but OpenVINO has now run here: a
    # forked child would hang.
    start_method.fresh_process()
    _openvino_paths()
    settings = RunSettings(data_root=data_root, backends=("openvino",), repeats=1)
    (outcome,) = pool.run_cases([_synthetic("Relu")], settings, jobs=1, timeout_s=60,
                                  task=case_task())
    rows = outcome.result.rows or batch_from_bytes(outcome.result.batch or b"").to_pylist()
    return [str(r["result"]) for r in rows if r["backend"] == "openvino"]


@pytest.mark.slow
def test_workers_start_fresh_once_openvino_ran_in_the_parent(tmp_path: Path) -> None:
    _require("openvino")
    results = _in_child(_pool_after_openvino_ran_here, str(tmp_path))
    assert results and EXECUTION not in results


def test_a_case_no_path_can_be_fed_is_not_blamed_on_a_runtime(tmp_path: Path) -> None:
    import dataclasses

    case = dataclasses.replace(_synthetic("Relu"),
                               unsupported="input 'x' has element type int4")
    (row,) = _rows(case, tmp_path, "onnxruntime")
    assert (row["result"], row["backend"]) == (EXECUTION, "-")
    assert "int4" in row["reason"]


def test_what_tract_prints_to_stderr_stays_off_the_terminal(
        capfd: pytest.CaptureFixture[str]) -> None:
    """A Rust panic in tract prints itself (a 150-line backtrace with RUST_BACKTRACE=1)
    before Python sees the exception its row records: that copy is set aside, the message
    of an error still comes through, and stderr works again afterwards."""
    from gero_runner.backends.tract import _short_errors

    with pytest.raises(RuntimeError, match=r"^tract failed$"), _short_errors():
        os.write(2, b"thread '<unnamed>' panicked at unicast.rs\n")
        raise RuntimeError("tract failed\n\nStack backtrace:\n  0: frame")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_tract_concrete_facts_drop_declared_shapes_in_subgraphs_too() -> None:
    """silero-vad's fp16 file declares symbolic shapes ('batch') inside its If bodies: tract
    analysed from concrete inputs could not unify them ("Impossible to unify Sym(batch) with
    OP(n)"), a graph ONNX Runtime runs."""
    from gero_runner.backends.tract import _without_symbolic_facts

    body = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Abs", ["t"], ["u"])], "b",
        [], [helper.make_tensor_value_info("u", TensorProto.FLOAT, ["batch", 4])],
        value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 4])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=body)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    out = onnx.load_from_string(_without_symbolic_facts(model.SerializeToString()))
    for attr in out.graph.node[0].attribute:
        assert not attr.g.value_info
        assert not attr.g.output[0].type.tensor_type.HasField("shape")
        assert attr.g.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert out.graph.input[0].type.tensor_type.HasField("shape")  # inputs keep theirs
