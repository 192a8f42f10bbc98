"""`gero blame`: the level and the graph rewrite that change an output, confirmed or not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from evidence_helpers import model_rows, row_where
from gero_processes import gero
from onnx import TensorProto, helper, numpy_helper

from gero_cli import main
from gero_runner import backends
from gero_runner.evidence.blame import (
    Blame,
    LevelOutcome,
    Rewrite,
    _cause,
    _Disabling,
    _Levels,
    _summary,
    blame_observation,
    read_blame,
)
from gero_runner.storage.artifacts import resolve_artifact

D = 64


def decomposed_layernorm(path: Path, opset: int = 19) -> Path:
    """The nine-node LayerNorm ORT fuses into one LayerNormalization (/LayerNormFusion/).

    ORT 1.32 fuses it at ``basic`` (LayerNormFusionL1) when the opset has LayerNormalization
    (17 and later), else at ``extended`` (LayerNormFusionL2)."""
    def mean(x: str, y: str) -> onnx.NodeProto:  # axes: an attribute before opset 18
        if opset < 18:
            return helper.make_node("ReduceMean", [x], [y], keepdims=1, axes=[-1])
        return helper.make_node("ReduceMean", [x, "axes"], [y], keepdims=1)

    nodes = [
        mean("X", "m"),
        helper.make_node("Sub", ["X", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["p"]),
        mean("p", "v"),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["s"]),
        helper.make_node("Div", ["d", "s"], ["n"]),
        helper.make_node("Mul", ["n", "G"], ["ng"]),
        helper.make_node("Add", ["ng", "B"], ["Y"]),
    ]
    inits = [numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
             numpy_helper.from_array(np.ones(D, np.float32), "G"),
             numpy_helper.from_array(np.zeros(D, np.float32), "B")]
    graph = helper.make_graph(nodes, "decomposed_layernorm",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, D])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, D])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 19 else 8
    onnx.save(model, path)
    return path


def relu_model(path: Path) -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "relu",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def _ort_row(root: Path, model: Path, **options: tuple[str, ...]) -> dict[str, object]:
    """ONNX Runtime's row at ``all`` against the model's expected outputs (a run on every
    installed runtime)."""
    return row_where(model_rows(root, model, backends=None, **options),
                     backend="onnxruntime", optimization="all", check="expected")


@pytest.fixture(scope="module")
def layernorm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("blame")
    model = decomposed_layernorm(root / "decomposed_layernorm.onnx")
    return root, _ort_row(root, model, input_ranges=("X=29990,30010",))


@pytest.mark.slow
def test_layernorm_fusion_is_named_at_the_level_that_changes_the_output(
        layernorm: tuple[Path, dict[str, object]]) -> None:
    root, row = layernorm
    blame, stored = blame_observation(root, row)
    first = next(o for o in blame.levels if not o.bit_exact_vs_disable_all)
    assert blame.first_level == first.level != "disable_all"
    levels = backends.levels("onnxruntime")
    assert blame.previous_level == levels[levels.index(first.level) - 1]
    assert blame.max_abs_difference > 0
    assert [r.transformer for r in blame.rewrites] == ["LayerNormFusion"]
    assert blame.rewrites[0].nodes == ["LayerNormalization '/LayerNormFusion/'"]
    assert blame.added == {"LayerNormalization": 1} and blame.removed["ReduceMean"] == 2
    assert blame.confirmed_by_running is True
    # Disabled by the name ORT registers it under, which the node name does not say.
    assert blame.rewrites[0].disabled == "confirmed"
    assert blame.rewrites[0].registered in ("LayerNormFusion", "LayerNormFusionL1")
    assert "LayerNormFusion" in blame.summary and f"`{blame.first_level}`" in blame.summary
    directory = resolve_artifact(root, str(row["artifact_path"]))
    assert stored.is_file() and read_blame(directory, str(row["observation_id"])) is not None


@pytest.mark.slow
def test_an_opset_without_layernorm_is_fused_at_extended(tmp_path: Path) -> None:
    """Before opset 17 LayerNormalization is not an ONNX operator: ORT fuses the decomposed
    form at ``extended`` (its LayerNormFusionL2), and blame says so."""
    model = decomposed_layernorm(tmp_path / "opset13.onnx", opset=13)
    row = _ort_row(tmp_path, model, input_ranges=("X=29990,30010",))
    blame, _ = blame_observation(tmp_path, row)
    assert (blame.previous_level, blame.first_level) == ("basic", "extended")
    assert [r.transformer for r in blame.rewrites] == ["LayerNormFusion"]
    # With LayerNormFusionL2 off, SimplifiedLayerNormFusion fuses the same nodes: both off
    # give basic's output again (it was 'partial' when only the first was turned off).
    assert blame.rewrites[0].disabled == "confirmed"
    assert blame.rewrites[0].registered == "LayerNormFusionL2"
    assert blame.rewrites[0].also_disabled == ["SimplifiedLayerNormFusion"]
    assert blame.cause.startswith("cause: LayerNormFusion ")
    assert "`extended`" in blame.summary and "LayerNormFusion" in blame.summary


def layernorm_then(path: Path, tail: str) -> Path:
    """The opset-13 decomposed LayerNorm (fused at ``extended``) followed by Gemm -> Sigmoid
    (ORT fuses it into com.microsoft FusedGemm 'fused …', bit for bit the same) or by the
    decomposed Gelu (fused into com.microsoft Gelu, which changes the output too)."""
    decomposed_layernorm(path, opset=13)
    model = onnx.load(path)
    model.graph.node[-1].output[0] = "L"
    del model.graph.output[:]
    rng = np.random.default_rng(0)
    if tail == "gemm_sigmoid":
        model.graph.node.extend([helper.make_node("Gemm", ["L", "W", "C"], ["Z"], transB=1),
                                 helper.make_node("Sigmoid", ["Z"], ["Y"])])
        model.graph.initializer.extend([
            numpy_helper.from_array((rng.standard_normal((8, D)) * 0.2).astype(np.float32),
                                    "W"),
            numpy_helper.from_array(np.zeros(8, np.float32), "C")])
        shape = [4, 8]
    else:  # x * 0.5 * (1 + erf(x / sqrt 2))
        model.graph.node.extend([helper.make_node("Div", ["L", "sqrt2"], ["g1"]),
                                 helper.make_node("Erf", ["g1"], ["g2"]),
                                 helper.make_node("Add", ["g2", "one"], ["g3"]),
                                 helper.make_node("Mul", ["L", "g3"], ["g4"]),
                                 helper.make_node("Mul", ["g4", "half"], ["Y"])])
        model.graph.initializer.extend([
            numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
            numpy_helper.from_array(np.array(1.0, np.float32), "one"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half")])
        shape = [4, D]
    model.graph.output.append(helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape))
    onnx.save(model, path)
    return path


def _blamed(root: Path, row: dict[str, object]) -> tuple[dict[str, Any], str]:
    """``gero blame`` of the row, run as a process: (its JSON, its text)."""
    prefix = str(row["observation_id"])[:16]
    as_json = gero("blame", prefix, "--data-dir", str(root), "--format", "json", cwd=root)
    as_text = gero("blame", prefix, "--data-dir", str(root), cwd=root)
    assert as_json.returncode == 0 == as_text.returncode, as_json.stderr + as_text.stderr
    found: dict[str, Any] = json.loads(as_json.stdout)
    return found, as_text.stdout


@pytest.mark.slow
def test_a_rewrite_whose_disabling_leaves_the_output_is_not_the_cause(tmp_path: Path) -> None:
    """oww (issue 40, D3): at ``extended`` ORT fuses the LayerNorm and the Gemm -> Sigmoid;
    blame named LayerNormFusion and then said disabling it left the output unchanged (1.32's
    SimplifiedLayerNormFusion fuses the same nodes once LayerNormFusionL2 is off), and did
    not see FusedGemm, whose node name names no transformer."""
    model = layernorm_then(tmp_path / "ln_gemm_sigmoid.onnx", "gemm_sigmoid")
    row = _ort_row(tmp_path, model, input_ranges=("X=29990,30010",))
    blame, text = _blamed(tmp_path, row)
    assert (blame["previous_level"], blame["first_level"]) == ("basic", "extended")
    rewrites = {str(r["transformer"]): r for r in blame["rewrites"]}
    assert sorted(rewrites) == ["GemmActivationFusion", "LayerNormFusion"]
    # FusedGemm, read from what the optimised graph added: its transformer, turned off by
    # the name ORT registers it under, changes nothing, and is said to be no cause.
    gemm = rewrites["GemmActivationFusion"]
    assert gemm["nodes"] == ["FusedGemm 'fused '"] and gemm["disabled"] == "unchanged"
    layernorm = rewrites["LayerNormFusion"]
    assert layernorm["disabled"] == "confirmed" and layernorm["registered"] == "LayerNormFusionL2"
    assert layernorm["also_disabled"] == ["SimplifiedLayerNormFusion"]
    cause = str(blame["cause"])
    assert cause.startswith("cause: LayerNormFusion ") and "Gemm" not in cause
    summary = str(blame["summary"])
    assert "not the cause (with it off the output is unchanged): GemmActivationFusion" in summary
    assert "GemmActivationFusion made" not in summary and "removes its nodes" not in summary
    assert f"  {cause}\n" in text and "unchanged: with disabled_optimizers=" in text


@pytest.mark.slow
def test_two_rewrites_that_each_change_the_output_are_the_cause_together(
        tmp_path: Path) -> None:
    """LayerNorm then Gelu: both fusions at ``extended`` change the output, so turning either
    off changes it but not back to basic's; both off (with the stand-ins that fuse the same
    nodes once LayerNormFusionL2 is off) give it back. The Gelu node is 'Gelu': blame reads
    its transformer from the operator the optimised graph added."""
    model = layernorm_then(tmp_path / "ln_gelu.onnx", "gelu")
    row = _ort_row(tmp_path, model, input_ranges=("X=29990,30010",))
    blame, _ = _blamed(tmp_path, row)
    assert (blame["previous_level"], blame["first_level"]) == ("basic", "extended")
    rewrites = {str(r["transformer"]): r for r in blame["rewrites"]}
    assert sorted(rewrites) == ["GeluFusion", "LayerNormFusion"]
    assert rewrites["GeluFusion"]["registered"] == "GeluFusionL2"
    assert all(r["disabled"] == "partial" for r in rewrites.values())
    cause = str(blame["cause"])
    assert cause.startswith("cause: GeluFusion and LayerNormFusion together ")
    assert "'GeluFusionL2'" in cause and "'SimplifiedLayerNormFusion'" in cause


def test_blame_says_so_when_no_transformer_it_can_disable_restores_the_output(
        tmp_path: Path) -> None:
    """No rewrite restores the earlier level's output (one changes it, not back; one leaves
    it): blame names where the change is, and none of them as the cause."""
    runtime = backends.find("onnxruntime")
    assert runtime is not None
    run = _Disabling(b"", _Levels(runtime, 1), "extended", {}, tmp_path)  # runs nothing
    rewrites = [Rewrite("GemmActivationFusion", ["FusedGemm 'fused Gemm_27'"], "unchanged",
                        "its nodes are gone and the output is unchanged",
                        "GemmActivationFusion"),
                Rewrite("LayerNormFusion", ["LayerNormalization '/LayerNormFusion/'"],
                        "partial", "the output changes, but not back", "LayerNormFusionL2")]
    added = [("FusedGemm", "fused Gemm_27"), ("LayerNormalization", "/LayerNormFusion/")]
    cause = _cause(run, rewrites, added, [np.zeros(1, np.float32)])
    assert cause == ("the change is at FusedGemm 'fused Gemm_27', LayerNormalization "
                     "'/LayerNormFusion/' (the nodes the optimised graph added); no single "
                     "transformer I can disable restores the earlier level's output")
    level = LevelOutcome("extended", 1e-7, False, 2, {})
    blame = Blame("o", "c", "model.onnx", "1.32.0", [level], "extended", "basic", 1e-7,
                  rewrites=rewrites, cause=cause)
    summary = _summary(blame)
    assert "cause: " not in summary and cause in summary
    assert "not the cause (with it off the output is unchanged): GemmActivationFusion" in summary


@pytest.mark.slow
def test_a_graph_no_level_changes_says_so(tmp_path: Path) -> None:
    row = _ort_row(tmp_path, relu_model(tmp_path / "relu.onnx"))
    blame, _ = blame_observation(tmp_path, row)
    assert blame.first_level is None and blame.rewrites == []
    assert all(o.bit_exact_vs_disable_all for o in blame.levels)
    assert blame.summary.startswith("no optimisation level changes the output")


def test_cli_prints_and_stores(layernorm: tuple[Path, dict[str, object]],
                               capsys: pytest.CaptureFixture[str]) -> None:
    root, row = layernorm
    prefix = str(row["observation_id"])[:12]
    assert main(["blame", prefix, "--data-dir", str(root), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rewrites"][0]["transformer"] == "LayerNormFusion"
    assert main(["blame", prefix, "--data-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert "first level that changes the output:" in text and "LayerNormFusion" in text


def test_cli_bad_id_is_one_line(layernorm: tuple[Path, dict[str, object]],
                                capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = layernorm
    assert main(["blame", "zz", "--data-dir", str(root)]) == 2
    assert capsys.readouterr().err.startswith("gero: error: bad observation id")
