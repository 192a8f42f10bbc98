"""A path's fault on a model is one finding that says where it is (issue 40, magika):

- a path that gives NaN or inf on the fp16 file where its yardsticks are finite fails three
  gates (vs-model, vs-fp32, scaled): one cause, kind ``nonfinite:actual`` on each row, one
  finding titled with the file and the figures (tract's 214 of 428 elements were two
  findings, their kinds ``law:vs-model``/``law:vs-fp32``/``law:scaled``);
- a worker that crashes on a contract graph (the model with a symbolic batch, run at batch
  1) is a finding of that graph, not "cannot run model" (tract 0.22.4 aborts there and runs
  the model itself).

Real ``gero`` processes; the misbehaving path is a runtime registered from a temporary
module ($GERO_RUNTIME_MODULES): the onnx ReferenceEvaluator that, on demand, puts NaN in its
output on the fp16 file or aborts on a batch-1 input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from gero_processes import gero, runtime_modules_env
from onnx import TensorProto, helper, numpy_helper
from shared_helpers import obs_rows

from gero_runner.classify import nonfinite_where_finite
from gero_runner.metrics.compare import compare

MISBEHAVING = '''
"""The onnx ReferenceEvaluator as a runtime that misbehaves on demand (a test's, outside
gero): $MISBEHAVE 'nan' puts NaN in the first two output elements of a file with float16
weights (the fp16 file); 'abort' aborts the process on a batch-1 input (a contract graph's)."""
from __future__ import annotations

import os
import resource

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from gero_runner.backends import register
from gero_runner.backends.names import Names

register(Names("wobbly", "wobbly", "the wobbly runtime", "wobbly"), __name__)

from gero_runner.backends.base import Backend, as_array  # noqa: E402


class Wobbly(Backend):
    name = "wobbly"
    distribution = "onnx"
    module = "onnx"
    keeps_intermediates = False
    keeps_optimized_graph = False

    def paths(self, threads):
        return [self.spec("-", threads, {})]

    def build(self, model, settings):
        proto = onnx.load_from_string(model)
        half = any(t.data_type == onnx.TensorProto.FLOAT16 for t in proto.graph.initializer)
        return ReferenceEvaluator(proto), half

    def run(self, session, inputs):
        evaluator, half = session
        mode = os.environ["MISBEHAVE"]
        if mode == "abort" and any(x.shape[:1] == (1,) for x in inputs.values()):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left behind
            os.abort()
        with np.errstate(all="ignore"):
            outs = [as_array(o) for o in evaluator.run(None, dict(inputs))]
        if mode == "nan" and half:
            outs[0] = outs[0].copy()
            outs[0].reshape(-1)[:2] = np.nan
        return outs


RUNTIME = Wobbly()
'''


def _model(tmp: Path) -> tuple[Path, Path]:
    """Y = tanh(X·0.5), X with a symbolic batch (its contract graphs run), fed batch 2."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "k"], ["a"]), helper.make_node("Tanh", ["a"], ["Y"])],
        "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    path, inputs = tmp / "tiny.onnx", tmp / "inputs.npz"
    onnx.save(model, str(path))
    np.savez(inputs, X=np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8))
    return path, inputs


def _run(tmp: Path, mode: str, *variants: str) -> tuple[Path, dict[str, str],
                                                         list[dict[str, Any]]]:
    env = runtime_modules_env(tmp, {"wobbly_runtime": MISBEHAVING}, MISBEHAVE=mode)
    model, inputs = _model(tmp)
    root = tmp / "data"
    done = gero("run", "--model", str(model), "--inputs", str(inputs), *variants,
                "--backends", "onnxruntime,wobbly", "--jobs", "1", "--data-dir", str(root),
                "-q", env=env)
    assert done.returncode == 1, done.stderr  # found something
    return root, env, obs_rows(root)


def _findings(root: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    import json

    done = gero("findings", "--data-dir", str(root), "--format", "json", env=env)
    assert done.returncode == 1, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["findings"]
    return found


@pytest.mark.slow
def test_a_paths_nan_on_the_fp16_file_is_one_finding_of_that_file(tmp_path: Path) -> None:
    root, env, rows = _run(tmp_path, "nan", "--variants", "fp16")
    bad = [r for r in rows if r["result"] != "passed"]
    # the three gates it fails, each kind nonfinite:actual, each scoped to the file
    assert sorted(r["check"] for r in bad) == [
        "model:fp16:scaled", "model:fp16:vs-fp32", "model:fp16:vs-model"], bad
    assert {(r["backend"], r["failure_kind"], r["scope"]) for r in bad} == {
        ("wobbly", "nonfinite:actual", "fp16")}
    scaled = next(r for r in bad if r["check"] == "model:fp16:scaled")
    assert scaled["cause"] == ("2 of 16 elements are NaN or inf where float16 computed as "
                               "declared is finite")
    (finding,) = _findings(root, env)
    assert finding["observations"] == 3
    assert finding["title"].startswith(
        "The wobbly runtime gives NaN or inf on the fp16 file of tiny: worst 2 of 16 "
        "elements are NaN or inf where "), finding["title"]


@pytest.mark.slow
def test_a_worker_crash_on_a_contract_graph_is_titled_with_that_graph(tmp_path: Path) -> None:
    root, env, rows = _run(tmp_path, "abort")
    # the model itself ran: batch 2 is fine, only the batch-1 contract graph aborts
    assert {r["result"] for r in rows if r["backend"] == "wobbly"
            and r["check"] in ("agreement", "model:fp32")} == {"passed"}
    (row,) = [r for r in rows if r["result"] != "passed"]
    assert (row["check"], row["backend"], row["failure_kind"], row["scope"]) == (
        "contracts", "wobbly", "cannot-run", "contracts")
    (finding,) = _findings(root, env)
    assert finding["title"] == (
        "The wobbly runtime fails on a contract graph of tiny, not on the model as given: "
        "crashed with SIGABRT while running wobbly - on contract:partition's graph (the "
        "model with a symbolic batch), inputs X float32[1, 8]"), finding["title"]
    assert "cannot run" not in finding["title"]


@pytest.mark.parametrize(("actual", "reference", "count"), [
    ([np.nan, 1.0, np.inf], [0.5, 1.0, 2.0], 2),  # the path's own NaN and inf
    ([0.5, 1.0, 2.0], [np.nan, 1.0, np.inf], 0),  # the reverse: the yardstick's
    ([np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], 0),  # both non-finite: no finite yardstick
])
def test_only_the_actual_sides_nonfinite_values_where_the_reference_is_finite_count(
        actual: list[float], reference: list[float], count: int) -> None:
    a, r = np.array(actual, np.float32), np.array(reference, np.float32)
    assert nonfinite_where_finite(compare(a, r, 1e-4, 1e-6)) == count


@pytest.mark.slow
def test_nan_only_where_the_fp16_file_overflows_as_declared_is_the_files_not_the_paths(
        tmp_path: Path) -> None:
    """X·300·300·2^-10: float16 as declared overflows at 20 of 32 elements. The
    ReferenceEvaluator and the wobbly runtime (the same evaluator, behaving: a baseline, so
    with a vs-model row too) compute the file as declared and are NaN or inf exactly there:
    the file's overflow (its fp16-overflow finding), no 'gives NaN or inf' of their own."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "k"], ["a"]), helper.make_node("Mul", ["a", "k"], ["b"]),
         helper.make_node("Mul", ["b", "s"], ["Y"])], "over",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(np.array(300, np.float32), "k"),
         numpy_helper.from_array(np.array(2.0 ** -10, np.float32), "s")])
    model = tmp_path / "over.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), str(model))
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, X=np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8))
    env = runtime_modules_env(tmp_path, {"wobbly_runtime": MISBEHAVING}, MISBEHAVE="none")
    root = tmp_path / "data"
    done = gero("run", "--model", str(model), "--inputs", str(inputs), "--variants", "fp16",
                "--backends", "onnxruntime,wobbly", "--jobs", "1", "--data-dir", str(root),
                "-q", env=env)
    assert done.returncode == 1, done.stderr
    rows = [r for r in obs_rows(root) if r["backend"] in ("onnx-reference", "wobbly")
            and r["check"] in ("model:fp16:vs-fp32", "model:fp16:vs-model")]
    assert sorted((r["backend"], r["check"], r["failure_kind"]) for r in rows) == [
        ("onnx-reference", "model:fp16:vs-fp32", "law:vs-fp32"),
        ("wobbly", "model:fp16:vs-fp32", "law:vs-fp32"),
        ("wobbly", "model:fp16:vs-model", "law:vs-model")], rows
    for row in rows:
        assert (row["result"], row["nan_actual"] + row["inf_actual"]) == ("contract_issue", 20)
        assert "each where float16 computed as declared overflows too" in row["cause"]
    titles = [f["title"] for f in _findings(root, env)]
    assert any(t.startswith("The fp16 file of over overflows float16") for t in titles)
    assert not any("gives NaN or inf" in t for t in titles), titles
