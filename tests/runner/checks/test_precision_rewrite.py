"""A divergence a precision rewrite explains is named as such (issue 40, item 2): the default
suite's worst divergence, ``MaskedSoftmax.additive 4x12 float16`` (max |a−r| 0.401), is ONNX
Runtime adding x + mask and normalising in float32 where the graph declares float16, not its
Softmax kernel. The rewrite is read from the runtime's optimised graph
(``Backend.widened_nodes``), never from its name, and confirmed against the graph computed
without its float16 roundings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from shared_helpers import obs_rows

from gero_runner.backends import ort
from gero_runner.case import CaseInstance
from gero_runner.checks.task import evaluate_case
from gero_runner.execution.context import RunSettings


def _masked_softmax(n: int = 4, length: int = 12) -> tuple[bytes, dict[str, np.ndarray]]:
    """x + mask → Softmax in float16, example 1 fully masked (the synthetic case's graph)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-6, 6, (n, length)).astype(np.float16)
    keep = rng.random((n, length)) < 0.6
    keep[0], keep[1] = True, False
    bias = np.where(keep, 0.0, -1e4).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "bias"], ["masked"]),
         helper.make_node("Softmax", ["masked"], ["Y"], axis=-1)], "masked_softmax",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT16, [n, length])
         for k in ("X", "bias")],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [n, length])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)],
                              ir_version=10)
    return model.SerializeToString(), {"X": x, "bias": bias}


def test_onnx_runtime_reads_its_precision_rewrite_from_its_optimised_graph() -> None:
    model, _ = _masked_softmax()
    for spec in ort.RUNTIME.paths(1):
        assert ort.RUNTIME.widened_nodes(model, spec.settings) == {
            "masked": "Add", "Y": "Softmax"}, spec.optimization


@pytest.mark.slow
def test_the_masked_softmax_divergence_is_named_as_the_precision_rewrite(
        tmp_path: Path) -> None:
    model, inputs = _masked_softmax()
    case = CaseInstance(suite="synthetic", case_id="synthetic/MaskedSoftmax.additive/4x12/"
                        "float16", op_type="Softmax", case_name="MaskedSoftmax.additive 4x12",
                        dtype="float16", seed=0, model=model, inputs=inputs)
    rows = evaluate_case(case, RunSettings(data_root=str(tmp_path), repeats=1, checks=(),
                                           backends=("onnxruntime",))).rows
    off = [r for r in rows if r.check == "agreement" and r.backend == "onnxruntime"]
    assert len(off) == 4 and all(r.result == "divergence" for r in off)
    for r in off:
        assert r.cause_key == "precision-rewrite", r.reason
        assert r.cause.startswith("ONNX Runtime computes 2 of the graph's 2 float16 node(s) "
                                  "in float32 (Add 'masked', Softmax 'Y')"), r.cause
        # the rewrite accounts for it: the float64 computation without the float16
        # roundings is within tolerance of ORT (1.6e-4), the float16 sum 0.1 away
        assert "the graph computed without them (float64) is within tolerance" in r.reason
    # the levels of one runtime rewrite alike: no cause to name between them
    assert all(r.cause_key == "" for r in rows if r.check == "levels")


def test_a_divergence_the_rewrite_does_not_account_for_keeps_its_own_words(
        tmp_path: Path) -> None:
    """A float16 graph whose runtime widens it but whose divergence is another's (here the
    reference side made off by hand): the unrounded computation is not within tolerance of
    the path, so no cause is named."""
    from gero_runner.checks.precision import explain_rows
    from gero_runner.execution.context import CaseContext, PathResult
    from gero_runner.schema import Observation
    from gero_runner.storage.artifacts import EvidenceWriter

    model, inputs = _masked_softmax()
    case = CaseInstance(suite="synthetic", case_id="synthetic/m/float16", op_type="Softmax",
                        case_name="m", dtype="float16", seed=0, model=model, inputs=inputs)
    spec = ort.RUNTIME.paths(1)[0]
    session = ort.RUNTIME.build(model, spec.settings)
    good = ort.RUNTIME.run(session, inputs)
    path = PathResult("ort-disable_all", "onnxruntime", "1", spec.optimization, 1,
                      dict(spec.settings), outputs=[(good[0] + 0.25).astype(np.float16)])
    ctx = CaseContext(case, RunSettings(data_root=str(tmp_path)), EvidenceWriter(),
                      {path.name: path}, ["Y"], "g", "i")
    row = Observation(suite="synthetic", case_id=case.case_id, op_type="Softmax",
                      case_name="m", check="agreement", dtype="float16", input_shapes="",
                      output_name="Y", backend="onnxruntime", backend_version="1",
                      optimization=spec.optimization, threads=1, reference="onnx-reference",
                      reference_version="1", rtol=5e-3, atol=5e-4, result="divergence",
                      reason="off", graph_hash="g", input_hash="i", seed=0)
    (same,) = explain_rows(ctx, [row])
    assert same.cause_key == "" and same.reason == "off"


@pytest.mark.slow
def test_a_real_run_names_the_rewrite_on_the_default_suites_worst_divergence(
        tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "gero_cli", "run", "--ops",
                           "MaskedSoftmax.additive", "--dtypes", "float16", "--backends",
                           "onnxruntime", "--no-contracts", "--jobs", "1", "--data-dir",
                           str(tmp_path), "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # a divergence is still a divergence
    rows = [r for r in obs_rows(tmp_path) if r["check"] in ("agreement", "analytic")
            and r["backend"] == "onnxruntime" and r["case_id"].endswith("/4x12/float16")]
    assert len(rows) == 8 and {r["result"] for r in rows} == {"divergence"}
    assert {r["cause_key"] for r in rows} == {"precision-rewrite"}
    assert all("(Add 'masked', Softmax 'Y')" in r["reason"] for r in rows)
    assert max(r["max_abs_error"] for r in rows) == pytest.approx(0.401, abs=1e-3)
    found = subprocess.run([sys.executable, "-m", "gero_cli", "findings", "--data-dir",
                            str(tmp_path), "--format", "json"], capture_output=True, text=True,
                           timeout=120)
    titles = [f["title"] for f in json.loads(found.stdout)["findings"]]
    # the finding names the rewrite, not "ONNX Runtime's Softmax (float16) is off"
    assert any(t.startswith("ONNX Runtime computes Softmax (float16) wider than the graph "
                            "declares, not its kernel: 2 of the graph's 2 float16 node(s) in "
                            "float32 (Add 'masked', Softmax 'Y')") for t in titles), titles
