"""Issue 40 round 2, on hand-made figures: a non-finite origin (khmersm's int8-static mask,
an inf-scale Q/DQ pair making NaN before an Add) is named before the small finite
differences earlier in the graph (the quantised embedding's 0.0049), and a failed row whose
traced tensors all agree is 'not localized', with why, never 'nothing diverges'."""

from __future__ import annotations

import math

from gero_runner.evidence.localization import Localization, NodeFinding, TensorFigure
from gero_runner.evidence.localize import summary
from gero_runner.evidence.localize.judge import _sharp_first


def _origin(node: str, local: float, share: float | None) -> NodeFinding:
    return NodeFinding(node, "Add", node, [node], {"x": 0.0}, 0.0, local, local, 1e-7,
                       math.inf, share=share)


def test_a_non_finite_origin_comes_before_small_finite_ones() -> None:
    embedding = _origin("node_embedding", 0.0049, 0.01)
    jump = _origin("node_add_154", 0.36, 0.47)
    mask = _origin("node_Add_219", math.inf, None)
    assert [o.node for o in _sharp_first([embedding, jump, mask])] == [
        "node_Add_219", "node_add_154", "node_embedding"]
    # One that alone explains most of the final error comes before one that explains little.
    most = _origin("node_attention", 1.0, 0.52)
    assert [o.node for o in _sharp_first([embedding, most])] == ["node_attention",
                                                                  "node_embedding"]
    # Without a share that large, one 10 times the first's own difference: tract's int8
    # MatMul (0.24 alone, 11 % of the final) before the embedding (0.0049, 1 %).
    add = _origin("node_add_7", 0.0049, 0.02)
    matmul = _origin("node_MatMul_20", 0.24, 0.11)
    assert [o.node for o in _sharp_first([embedding, add, matmul])] == [
        "node_MatMul_20", "node_embedding", "node_add_7"]
    loc = Localization("id", "case", "model:int8-static:vs-model", "y", "ort", "fp32", "", "",
                       0.81, 1e-7, 2, 2, [], [], origins=_sharp_first([embedding, mask]),
                       amplifiers=[], instrumented={}, summary="")
    text = summary(loc)
    assert text.startswith("the error enters at node_Add_219 (Add)")
    assert "output is NaN or inf where the reference's is finite" in text


def _agreeing(final: float) -> Localization:
    tensors = [TensorFigure("y", 0, "MatMul_20", "MatMul", final, 1e-8, 0.031, False)]
    return Localization("id", "case", "model:fp32", "y", "openvino:bf16-default",
                        "float64-shadow", "", "", final, 0.031, 1, 1, [], tensors,
                        origins=[], amplifiers=[], instrumented={}, summary="")


def test_a_failed_row_is_never_nothing_diverges() -> None:
    text = summary(_agreeing(0.0038), "scaled error 0.00946 > 0.0001", 0.00946)
    assert "nothing diverges" not in text
    assert text.startswith("not localized: the row failed (scaled error 0.00946 > 0.0001)")
    assert "the traced run does not give the stored run again" in text and "0.0095" in text
    same = summary(_agreeing(0.009), "scaled error 0.00946 > 0.0001", 0.00946)
    assert "not localized" in same and "stored run again" not in same
