"""`gero localize`: the node where an observation's error enters, on graphs built so that
the origin is known, and a repro of it that `gero replay` runs again."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from evidence_helpers import model_rows, row_where
from localize_models import clean_chain, fp16_overflow, one_pass_variance, shifted_layernorm

from gero_cli import main
from gero_runner.evidence.localize import localize_observation, read_localization
from gero_runner.evidence.replay import replay_artifact
from gero_runner.storage.artifacts import resolve_artifact, verify_manifest

Run = tuple[Path, list[dict[str, Any]]]
"""A data root and the rows of its one run."""


def _run_of(build: Callable[[Path], Path], **options: Any) -> Any:
    """A module fixture: a run of the model ``build`` writes, with these ModelOptions."""
    @pytest.fixture(scope="module")
    def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
        root = tmp_path_factory.mktemp(build.__name__)
        return root, model_rows(root, build(root / f"{build.__name__}.onnx"), **options)

    return run


cancellation = _run_of(one_pass_variance, input_ranges=("X=29990,30010",))
overflow = _run_of(fp16_overflow, variants=("fp16",), input_ranges=("X=1,2",))
fused = _run_of(shifted_layernorm, input_ranges=("X=-0.1,0.1",))


@pytest.mark.slow
def test_a_cancellation_against_the_float64_shadow_names_the_sub(
        cancellation: Run, tmp_path: Path) -> None:
    root, rows = cancellation
    row = row_where(rows, check="model:fp32", backend="onnxruntime", optimization="disable_all")
    assert row["result"] == "divergence"
    loc, stored = localize_observation(root, row, tmp_path / "repro")
    assert [o.node for o in loc.origins] == ["LayerNorm_0/Sub"]
    origin = loc.origins[0]
    assert origin.op_type == "Sub" and origin.nodes == ["Sub 'LayerNorm_0/Sub'"]
    assert origin.inputs_scaled_error < 1e-6 < 0.1 < origin.local_scaled_error
    assert origin.share is not None and 0.5 < origin.share < 2
    # What comes after it carries or magnifies it; what runs beside it is clean.
    amplifiers = {a.node for a in loc.amplifiers}
    assert {"LayerNorm_0/Sqrt", "LayerNorm_0/Reciprocal", "LayerNorm_0/Scale"} <= amplifiers
    assert not any(t.diverges for t in loc.tensors if t.name in ("m", "ex2", "m2", "centred"))
    assert loc.summary.startswith("the error enters at LayerNorm_0/Sub (Sub): its inputs agree")
    directory = resolve_artifact(root, str(row["artifact_path"]))
    assert stored == directory / "localize" / f"{row['observation_id']}.json"
    kept = read_localization(directory, str(row["observation_id"]))
    assert kept is not None and kept["origins"][0]["node"] == "LayerNorm_0/Sub"
    verify_manifest(directory)  # the stored result is not evidence: the manifest still holds
    # The repro: the Sub alone with its real inputs, that reproduces on replay.
    repro = tmp_path / "repro"
    graph = onnx.load(str(repro / "model.onnx")).graph
    assert [n.name for n in graph.node] == ["LayerNorm_0/Sub"]
    assert sorted(p.name for p in (repro / "test_data_set_0").iterdir()) == [
        "input_0.pb", "input_1.pb", "output_0.pb"]
    info = json.loads((repro / "localize.json").read_text())
    assert info["origin"] == "LayerNorm_0/Sub" and info["repro_result"] == "divergence"
    report = replay_artifact(repro)
    assert report.reproduced
    shown = next(o for o in report.observations if o.observation_id == info["repro_observation"])
    assert shown.stored_result == "divergence"


def test_a_float16_overflow_is_named_on_the_path_that_computes_float16(
        overflow: Run, tmp_path: Path) -> None:
    """The ReferenceEvaluator computes the fp16 file in float16: the second Mul overflows.
    ONNX Runtime at ``all`` computes the chain in float32 (its Cast elimination): nothing
    diverges there."""
    root, rows = overflow
    row = row_where(rows, check="model:fp16:vs-fp32", backend="onnx-reference")
    assert row["result"] == "contract_issue"
    loc, _ = localize_observation(root, row, tmp_path / "repro")
    assert [o.node for o in loc.origins] == ["Scale/Up"]
    assert loc.origins[0].local_scaled_error == float("inf")
    assert loc.origins[0].inputs_scaled_error < 4e-3
    # What comes after only carries the inf (the fp16 file ends in its output Cast).
    assert [a.nodes[0] for a in loc.amplifiers] == ["Mul 'Scale/Down'", "Add 'Shift'"]
    assert {a.role for a in loc.amplifiers} == {"carrier"}
    assert "the error enters at Scale/Up (Mul)" in loc.summary
    graph = onnx.load(str(tmp_path / "repro" / "model.onnx")).graph
    assert [n.name for n in graph.node] == ["Scale/Up"]
    assert replay_artifact(tmp_path / "repro").reproduced
    ort = row_where(rows, check="model:fp16:vs-model", backend="onnxruntime")
    clean, _ = localize_observation(root, ort)
    assert ort["result"] == "passed" and clean.origins == [] and clean.within_gate


def test_a_level_made_wrong_by_a_fusion_names_the_fused_nodes(
        fused: Run, tmp_path: Path) -> None:
    root, rows = fused
    row = row_where(rows, check="levels", backend="onnxruntime", optimization="basic")
    assert row["result"] == "divergence"
    loc, _ = localize_observation(root, row, tmp_path / "repro")
    assert len(loc.origins) == 1
    origin = loc.origins[0]
    assert origin.op_type == "LayerNormalization" and "LayerNormFusion" in origin.node
    assert len(origin.nodes) == 9 and "Add 'Shift'" not in origin.nodes
    assert origin.inputs_scaled_error == 0 and origin.share == pytest.approx(1.0)
    # Only what survives the fusion is compared: the shift before it, and the output.
    assert [t.name for t in loc.tensors] == ["shifted", "Y"]
    assert not loc.tensors[0].diverges and loc.tensors[1].diverges
    assert "fuses 9 nodes" in loc.summary
    graph = onnx.load(str(tmp_path / "repro" / "model.onnx")).graph
    assert len(graph.node) == 9 and [i.name for i in graph.input] == ["shifted"]
    report = replay_artifact(tmp_path / "repro")
    assert report.reproduced
    levels = [o for o in report.observations if o.check == "levels"
              and o.optimization == "basic"]
    assert levels and levels[0].stored_result == "divergence"


def test_a_clean_model_names_no_origin(tmp_path: Path) -> None:
    rows = model_rows(tmp_path, clean_chain(tmp_path / "clean.onnx"))
    row = row_where(rows, check="model:fp32", backend="onnxruntime", optimization="all")
    assert row["result"] == "passed"
    loc, _ = localize_observation(tmp_path, row)
    assert loc.origins == [] and loc.amplifiers == []
    assert not any(t.diverges for t in loc.tensors)
    assert loc.within_gate and loc.summary.startswith("within its gate: the row passed")
    with pytest.raises(Exception, match="no origin was found"):
        localize_observation(tmp_path, row, tmp_path / "repro")


def test_cli_text_json_and_bad_input(cancellation: Run,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    root, rows = cancellation
    row = row_where(rows, check="model:fp32", backend="onnxruntime", optimization="all")
    prefix = str(row["observation_id"])[:12]
    assert main(["localize", prefix, "--data-dir", str(root), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["origins"][0]["node"] == "LayerNorm_0/Sub" and out["stored"].endswith(".json")
    assert main(["localize", prefix, "--data-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert "origin     LayerNorm_0/Sub (Sub)" in text and "the error enters at" in text
    law = row_where(rows, check="model:noise-floor")
    assert main(["localize", str(law["observation_id"])[:12], "--data-dir", str(root)]) == 2
    assert "not a path gero can run again" in capsys.readouterr().err
    assert main(["localize", "zz", "--data-dir", str(root)]) == 2
    assert capsys.readouterr().err.startswith("gero: error: bad observation id")


def test_the_findings_report_shows_the_origin_and_the_repro(
        cancellation: Run, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    root, rows = cancellation
    row = row_where(rows, check="model:fp32", backend="onnxruntime", optimization="disable_all")
    localize_observation(root, row, tmp_path / "repro")
    assert main(["findings", "--data-dir", str(root), "--format", "md"]) == 1
    report = capsys.readouterr().out
    assert "Localized (`gero localize" in report
    assert "- origin: `LayerNorm_0/Sub` (Sub; 1 node(s))" in report
    # The repro of this test's localization, or of an earlier test's on the same run: the
    # report prefers a stored localization that wrote one.
    repro = re.search(r"`gero replay (\S+/repro)`", report)
    assert repro and (Path(repro.group(1)) / "model.onnx").is_file(), report
    assert "gero localize " in report.split("```sh", 1)[1]


# The captcha its figures come from (/work/models' copy, rebuilt from the manifest, feeds
# another captcha, on which OpenVINO's bf16 row passes its gate).
REAL = Path("/tmp/verify/models/ddddocr_old_int8")


@pytest.mark.slow
@pytest.mark.skipif(not (REAL / "model.onnx").is_file(), reason="needs the ddddocr model")
def test_a_real_int8_recogniser_within_its_gate_names_no_origin(tmp_path: Path) -> None:
    """ddddocr 1.6.1's dynamic-int8 recogniser against its float64 shadow (com.microsoft
    operators dequantized): OpenVINO f32 passes its gate (0.0125 within the noise floor's
    0.014), so localize names no origin although the sides part; at bf16 it diverges, and
    where marking tensors changes what OpenVINO computes localize says it cannot localize
    rather than that the error 'builds up from many small ones'."""
    pytest.importorskip("openvino")
    rows = model_rows(tmp_path, REAL / "model.onnx", backends=("onnxruntime", "openvino"),
                      inputs_file=str(REAL / "inputs.npz"))
    row = row_where(rows, check="model:fp32", backend="openvino", optimization="f32")
    assert row["reference"] == "float64-shadow" and row["result"] == "passed"
    loc, _ = localize_observation(tmp_path, row)
    assert loc.within_gate and loc.origins == [] and loc.final_scaled_error > 1e-3
    bf16 = row_where(rows, check="model:fp32", backend="openvino", optimization="bf16-default")
    assert bf16["result"] == "divergence"
    loc, _ = localize_observation(tmp_path, bf16)
    assert not loc.within_gate and "builds up" not in loc.summary


def test_the_python_api_localizes_by_prefix(
        fused: Run) -> None:
    import gero

    root, rows = fused
    row = row_where(rows, check="levels", backend="onnxruntime", optimization="all")
    result = gero.localize(str(row["observation_id"])[:10], data_dir=root)
    assert result["origins"][0]["op_type"] == "LayerNormalization"
    assert Path(result["stored"]).is_file()


def test_a_row_against_the_fp16_files_own_shadow_is_localized(overflow: Run) -> None:
    """The ReferenceEvaluator's fp16 row is judged against the fp16 file computed as a
    correct float16 engine would (float64, rounded to float16 at each node): that yardstick
    runs again as a side (it was 'not a path gero can run again'). Both overflow at the
    same Mul, so nothing parts: the file itself overflows, not the engine."""
    root, rows = overflow
    row = row_where(rows, check="model:fp16:scaled", backend="onnx-reference")
    # The judge now passes an engine that overflows exactly as its yardstick does (it was
    # a contract_issue): either way the yardstick runs again and nothing parts.
    assert row["reference"] == "fp16-rounded-shadow"
    assert row["result"] in ("passed", "contract_issue")
    loc, _ = localize_observation(root, row)
    assert loc.reference == "fp16-rounded-shadow" and loc.origins == []
    up = next(t for t in loc.tensors if t.name == "b")
    assert up.nonfinite == 0 and not up.diverges  # inf on both sides, the same
    # A failed row is never 'nothing diverges': it says the row failed and that both
    # sides agree at every tensor (the file itself overflows, not the engine).
    expected = ("within its gate" if row["result"] == "passed"
                else "not localized: the row failed")
    assert loc.summary.startswith(expected) and "nothing diverges" not in loc.summary
