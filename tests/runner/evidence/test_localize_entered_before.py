"""The localization's sentence where an "origin" reads inputs already further off than its own
difference (frspell on OpenVINO bf16: inputs 0.0091, its own 0.0026: the error entered before
it), and where the origins' shares, each measured alone, add past 100 % (52 % + 80 %)."""

from __future__ import annotations

from gero_runner.evidence.localization import Localization, NodeFinding, Side, TensorFigure
from gero_runner.evidence.localize import summary
from gero_runner.evidence.localize.observation import precision_before


def _origin(name: str, inputs: float, local: float, share: float) -> NodeFinding:
    return NodeFinding(name, "MatMulInteger", name, [name], {"x": inputs}, inputs, local,
                       local, 1e-3, 1.0, share=share)


def _localization(origins: list[NodeFinding]) -> Localization:
    tensors = [TensorFigure(o.tensor, i, o.node, o.op_type, o.local_scaled_error, 0.0, 1e-3,
                            True) for i, o in enumerate(origins)]
    tensors.append(TensorFigure("y", len(origins), "y", "Add", 0.0069, 0.0, 1e-3, True))
    return Localization("id", "case", "model:fp32", "y", "openvino:bf16-default",
                        "float64-shadow", "", "", 0.0069, 1e-3, 3, 3, [], tensors,
                        origins=origins, amplifiers=[], instrumented={}, summary="")


def test_an_origin_whose_inputs_are_further_off_is_not_where_the_error_enters() -> None:
    text = summary(_localization([_origin("bridge", 0.0091, 0.0026, 0.5)]))
    assert "the error enters at" not in text
    assert "the error enters before the tensors compared" in text
    assert "reads inputs already 0.0091 scaled off" in text and "(0.0026)" in text


def test_an_origin_with_agreeing_inputs_still_is_where_it_enters() -> None:
    text = summary(_localization([_origin("gru", 1.4e-7, 0.017, 0.9)]))
    assert text.startswith("the error enters at gru (MatMulInteger): its inputs agree to 1.4e-07")


def test_shares_measured_alone_that_add_past_the_whole_say_they_overlap() -> None:
    text = summary(_localization([_origin("a", 0.0, 0.006, 0.52), _origin("b", 0.0, 0.003, 0.80)]))
    assert "the shares overlap (added, 132%)" in text
    assert "fed to float64-shadow and run to the output" in text
    alone = summary(_localization([_origin("a", 0.0, 0.006, 0.52), _origin("b", 0.0, 0.003, 0.3)]))
    assert "overlap" not in alone


def test_a_reduced_inference_precision_is_the_cause_of_an_error_entered_before() -> None:
    """frspell on OpenVINO's default path: bf16 computes the encoder GRU too, which is
    fused away and not compared; the bf16 precision is named (it was named nowhere)."""
    bf16 = Side("openvino:bf16-default", "runtime", "openvino",
                {"inference_precision": "bf16", "inference_precision_hint": "bf16"}, "model.onnx")
    assert precision_before(bf16).startswith("openvino:bf16-default computes float32 in bf16")
    f32 = Side("openvino:f32", "runtime", "openvino",
               {"inference_precision": "f32", "inference_precision_hint": "f32"}, "model.onnx")
    assert precision_before(f32) == ""
    shadow = Side("float64-shadow", "shadow", "float64-shadow", {}, "model.onnx")
    assert precision_before(shadow) == ""
