"""The ai.onnx.ml structure rules (``gero_runner.models.structure``, issue 40 D6): each rule on
the sizes its operator's spec fixes, at and around the edge, and the node's feature count read
from static shape inference with the case's input shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from gero_runner.models import structure as st

LABELS3 = {"classlabels_ints": [0, 1, 2]}
LABELS2 = {"classlabels_ints": [0, 1]}


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    ({**LABELS3, "coefficients": [0.0] * 6, "intercepts": [0.0] * 3}, 2, False),
    # logreg_iris: 12 coefficients for 3 classes x 2 features
    ({**LABELS3, "coefficients": [0.0] * 12, "intercepts": [0.0] * 3}, 2, True),
    ({**LABELS3, "coefficients": [0.0] * 5, "intercepts": [0.0] * 3}, 2, True),
    ({**LABELS3, "coefficients": [0.0] * 6, "intercepts": [0.0] * 2}, 2, True),
    ({**LABELS3, "coefficients": [0.0] * 6}, 2, False),  # intercepts are optional
    ({**LABELS2, "coefficients": [0.0] * 2, "intercepts": [0.0]}, 2, False),  # binary: 1 row
    ({**LABELS2, "coefficients": [0.0] * 4, "intercepts": [0.0] * 2}, 2, False),
    ({**LABELS2, "coefficients": [0.0] * 4, "intercepts": [0.0]}, 2, True),
    ({**LABELS3, "coefficients": [0.0] * 12, "intercepts": [0.0] * 3}, None, False),
    ({**LABELS3, "coefficients": [0.0] * 7, "intercepts": [0.0] * 3}, None, True),
])
def test_linear_classifier(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.linear_classifier(attrs, features)) == broken


def test_linear_classifier_says_the_figures() -> None:
    got = st.linear_classifier({**LABELS3, "coefficients": [0.0] * 12,
                                "intercepts": [0.0] * 3}, 2)
    assert got == ["holds 12 coefficients for 3 classes × 2 features (the spec needs 6)"]


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    ({"coefficients": [0.0] * 3}, 3, False),
    ({"coefficients": [0.0] * 4}, 3, True),
    ({"coefficients": [0.0] * 6, "targets": 2, "intercepts": [0.0] * 2}, 3, False),
    ({"coefficients": [0.0] * 6, "targets": 2, "intercepts": [0.0]}, 3, True),
    ({"coefficients": [0.0] * 6, "targets": 2}, 2, True),
    ({"coefficients": [0.0] * 5, "targets": 2}, None, True),
    ({"coefficients": [0.0] * 6, "targets": 2}, None, False),
])
def test_linear_regressor(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.linear_regressor(attrs, features)) == broken


@pytest.mark.parametrize(("scale", "offset", "features", "broken"), [
    ([2.0], [0.5], 3, False),
    ([2.0] * 3, [0.5] * 3, 3, False),
    ([2.0] * 3, [0.5], 3, False),
    ([2.0] * 2, [0.5] * 3, 3, True),
    ([2.0] * 3, [0.5] * 4, 3, True),
    ([2.0] * 5, [0.5] * 4, None, False),  # features unknown: nothing to hold them to
])
def test_scaler(scale: list[float], offset: list[float], features: int | None,
                broken: bool) -> None:
    assert bool(st.scaler({"scale": scale, "offset": offset}, features)) == broken


def _svc(**over: Any) -> dict[str, Any]:
    """A 3-class one-vs-one SVC over 2 features with 2+1+2 support vectors."""
    base = {**LABELS3, "vectors_per_class": [2, 1, 2], "support_vectors": [0.0] * 10,
            "coefficients": [0.0] * 10, "rho": [0.0] * 3, "prob_a": [], "prob_b": []}
    return {**base, **over}


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    (_svc(), 2, False),
    (_svc(support_vectors=[0.0] * 9), 2, True),
    (_svc(coefficients=[0.0] * 5), 2, True),
    (_svc(rho=[0.0] * 2), 2, True),
    (_svc(vectors_per_class=[2, 3]), None, True),
    (_svc(prob_a=[1.0] * 3, prob_b=[1.0] * 2), 2, True),
    (_svc(prob_a=[1.0] * 3, prob_b=[1.0] * 3), 2, False),
    # binary: one dual coefficient per support vector, one rho
    ({**LABELS2, "vectors_per_class": [1, 2], "support_vectors": [0.0] * 6,
      "coefficients": [0.0] * 3, "rho": [0.0]}, 2, False),
    # linear (no support vectors): a row of coefficients per class
    ({**LABELS3, "coefficients": [0.0] * 6, "rho": [0.0] * 3}, 2, False),
    ({**LABELS3, "coefficients": [0.0] * 8, "rho": [0.0] * 3}, 2, True),
])
def test_svm_classifier(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.svm_classifier(attrs, features)) == broken


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    ({"n_supports": 2, "support_vectors": [0.0] * 6, "coefficients": [0.0] * 2,
      "rho": [0.0]}, 3, False),
    ({"n_supports": 2, "support_vectors": [0.0] * 5, "coefficients": [0.0] * 2,
      "rho": [0.0]}, 3, True),
    ({"n_supports": 2, "support_vectors": [0.0] * 6, "coefficients": [0.0] * 3,
      "rho": [0.0]}, 3, True),
    ({"n_supports": 2, "support_vectors": [0.0] * 6, "coefficients": [0.0] * 2,
      "rho": [0.0] * 2}, 3, True),
    ({"coefficients": [0.0] * 3, "rho": [0.0]}, 3, False),  # linear: one per feature
    ({"coefficients": [0.0] * 4, "rho": [0.0]}, 3, True),
])
def test_svm_regressor(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.svm_regressor(attrs, features)) == broken


def _tree(leaf: str, **over: Any) -> dict[str, Any]:
    """One stump: a root splitting on feature 1, two leaves voting for ids 0 and 1."""
    base = {"nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2],
            "nodes_featureids": [1, 0, 0], "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
            "nodes_values": [0.5, 0.0, 0.0], "nodes_truenodeids": [1, 0, 0],
            "nodes_falsenodeids": [2, 0, 0], f"{leaf}_treeids": [0, 0],
            f"{leaf}_nodeids": [1, 2], f"{leaf}_ids": [0, 1], f"{leaf}_weights": [1.0, 1.0]}
    return {**base, **over}


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    ({**_tree("class"), **LABELS2}, 2, False),
    ({**_tree("class", nodes_values=[0.5, 0.0]), **LABELS2}, 2, True),
    ({**_tree("class", class_weights=[1.0]), **LABELS2}, 2, True),
    ({**_tree("class", class_ids=[0, 2]), **LABELS2}, 2, True),  # 2 is no class of 2
    ({**_tree("class", class_ids=[0, 2]), **LABELS3}, 2, False),
    ({**_tree("class"), **LABELS2}, 1, True),  # splits on feature 1 of 1
    ({**_tree("class"), **LABELS2}, None, False),
])
def test_tree_classifier(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.tree_classifier(attrs, features)) == broken


@pytest.mark.parametrize(("attrs", "features", "broken"), [
    (_tree("target", n_targets=2), 2, False),
    (_tree("target", n_targets=1), 2, True),  # target id 1 of 1 target
    (_tree("target", n_targets=2, nodes_modes=["BRANCH_LEQ", "LEAF"]), 2, True),
    (_tree("target", n_targets=2, target_nodeids=[1]), 2, True),
])
def test_tree_regressor(attrs: dict[str, Any], features: int | None, broken: bool) -> None:
    assert bool(st.tree_regressor(attrs, features)) == broken


@pytest.mark.parametrize(("attrs", "columns", "broken"), [
    ({"classlabels_int64s": [0, 1, 2]}, 3, False),
    ({"classlabels_int64s": [0, 1, 2]}, 2, True),
    ({"classlabels_strings": ["a", "b"]}, 3, True),
    ({"classlabels_strings": ["a", "b"]}, None, False),
])
def test_zip_map(attrs: dict[str, Any], columns: int | None, broken: bool) -> None:
    assert bool(st.zip_map(attrs, columns)) == broken


@pytest.mark.parametrize(("attrs", "broken"), [
    ({"keys_strings": ["a", "b"], "values_int64s": [1, 2]}, False),
    ({"keys_strings": ["a", "b"], "values_int64s": [1]}, True),
    ({"keys_tensor": [1, 2, 3], "values_tensor": [1.0, 2.0, 3.0]}, False),
    ({"keys_tensor": [1, 2, 3], "values_floats": [1.0, 2.0]}, True),
])
def test_label_encoder(attrs: dict[str, Any], broken: bool) -> None:
    assert bool(st.label_encoder(attrs, None)) == broken


def _classifier_then_zipmap(coefficients: int, keys: int) -> onnx.ModelProto:
    """LinearClassifier (3 classes) over a [n, 2] input, then a ZipMap of ``keys`` keys."""
    cls = helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain="ai.onnx.ml",
                           name="lc", classlabels_ints=[0, 1, 2],
                           coefficients=np.linspace(-1, 1, coefficients).tolist(),
                           intercepts=[0.1, 0.2, 0.3])
    zipmap = helper.make_node("ZipMap", ["p"], ["z"], domain="ai.onnx.ml",
                              classlabels_int64s=list(range(keys)))
    seq = helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])))
    graph = helper.make_graph(
        [cls, zipmap], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["n"]),
         helper.make_value_info("z", seq)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", 1)])


def test_violations_read_features_from_the_cases_shapes() -> None:
    """The features come from the input shape (symbolic batch fixed to the case's), a later
    node's from shape inference (the ZipMap's 3 columns); each violation is keyed by its
    operator and names its node."""
    assert st.violations(_classifier_then_zipmap(6, 3), {"x": (4, 2)}) == []
    got = st.violations(_classifier_then_zipmap(12, 2), {"x": (4, 2)})
    assert [(v.cause_key, v.sentence) for v in got] == [
        ("malformed:ai.onnx.ml::LinearClassifier", "LinearClassifier 'lc' holds 12 "
         "coefficients for 3 classes × 2 features (the spec needs 6)"),
        ("malformed:ai.onnx.ml::ZipMap", "ZipMap '#1' has 2 keys for an input of 3 columns "
         "(the spec needs 3)")]

