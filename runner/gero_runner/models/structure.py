"""The structure of ai.onnx.ml nodes where the operator's spec fixes the sizes of its
attributes: a node that breaks them makes a malformed model, which ``onnx.checker`` accepts
and runtimes read each their own way (logreg_iris's LinearClassifier holds 12 coefficients
for 3 classes x 2 features: ONNX Runtime uses the first 6 without a word, the
ReferenceEvaluator refuses it). That is the model's finding, not a runtime's (issue 40).

One rule per operator (``RULES``), each a small function of the node's attributes and the
number of features it is fed (the last dimension of its first input, from static shape
inference with the case's input shapes fixed; None where unknown), returning the sentences
that say what breaks the spec, each rule with the one line of the spec that requires it.
Normalizer and Binarizer fix no size: they have no rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import onnx
from onnx import helper, shape_inference

from gero_runner.facts import MALFORMED_KEY

ML_DOMAIN = "ai.onnx.ml"


@dataclasses.dataclass(frozen=True)
class Violation:
    """A node whose attributes break its operator's spec."""

    op_type: str
    node: str
    facts: str
    """What breaks, with its figures: "holds 12 coefficients for 3 classes × 2 features
    (the spec needs 6)"."""

    @property
    def cause_key(self) -> str:
        return f"{MALFORMED_KEY}{ML_DOMAIN}::{self.op_type}"

    @property
    def sentence(self) -> str:
        """``LinearClassifier 'lc' holds 12 coefficients for …``."""
        return f"{self.op_type} {self.node!r} {self.facts}"


Attrs = Mapping[str, Any]
Rule = Callable[[Attrs, int | None], list[str]]


def _n(values: Sequence[Any], what: str) -> str:
    return f"{len(values)} {what}"


def _classes(a: Attrs) -> int:
    return len(a.get("classlabels_ints") or a.get("classlabels_int64s")
               or a.get("classlabels_strings") or ())


def _rows_of(a: Attrs, classes: int) -> tuple[int, ...]:
    """The weight rows a classifier may hold: one per class, or one for a binary one."""
    return (classes, 1) if classes == 2 else (classes,)


def linear_classifier(a: Attrs, features: int | None) -> list[str]:
    """Spec: the coefficients are one row of weights per class (one for a binary
    classifier) over the input's features, the intercepts one per row."""
    coef, icpt, classes = a.get("coefficients", []), a.get("intercepts", []), _classes(a)
    if not classes:
        return []
    found = []
    allowed = _rows_of(a, classes)
    rows = len(icpt) if icpt else None
    if icpt and len(icpt) not in allowed:
        found.append(f"holds {_n(icpt, 'intercepts')} for {classes} classes "
                     f"(the spec needs {' or '.join(map(str, allowed))})")
        rows = classes
    if features is not None:
        need = [r * features for r in ([rows] if rows else allowed)]
        if len(coef) not in need:
            found.append(f"holds {_n(coef, 'coefficients')} for {need[0] // features} "
                         f"classes × {features} features (the spec needs "
                         f"{' or '.join(map(str, need))})")
    elif not any(r and len(coef) % r == 0 for r in ([rows] if rows else allowed)):
        found.append(f"holds {_n(coef, 'coefficients')}, no whole number of features "
                     f"for {rows or classes} rows")
    return found


def linear_regressor(a: Attrs, features: int | None) -> list[str]:
    """Spec: M targets take M contiguous sets of coefficients, one per feature; intercepts,
    if provided, must match the number of targets."""
    targets = int(a.get("targets", 1))
    coef, icpt = a.get("coefficients", []), a.get("intercepts", [])
    found = []
    if icpt and len(icpt) != targets:
        found.append(f"holds {_n(icpt, 'intercepts')} for {targets} targets "
                     f"(the spec needs {targets})")
    if features is not None and len(coef) != targets * features:
        found.append(f"holds {_n(coef, 'coefficients')} for {targets} targets × {features} "
                     f"features (the spec needs {targets * features})")
    elif features is None and targets > 0 and len(coef) % targets:
        found.append(f"holds {_n(coef, 'coefficients')}, no whole number of features "
                     f"for {targets} targets")
    return found


def scaler(a: Attrs, features: int | None) -> list[str]:
    """Spec: offset and scale are each of length 1 or the number of features of the [N,F]
    input."""
    found = []
    for name in ("offset", "scale"):
        values = a.get(name, [])
        if features is not None and len(values) not in (1, features):
            found.append(f"holds {_n(values, name + ' values')} for {features} features "
                         f"(the spec needs 1 or {features})")
    return found


def svm_classifier(a: Attrs, features: int | None) -> list[str]:
    """Spec (and the one-vs-one SVM it encodes): one support-vector count per class, each
    support vector one value per feature, classes − 1 dual coefficients per support vector,
    one rho per pair of classes; prob_b the same size as prob_a."""
    classes, per_class = _classes(a), list(a.get("vectors_per_class", []))
    coef, sv, rho = a.get("coefficients", []), a.get("support_vectors", []), a.get("rho", [])
    found = []
    if len(a.get("prob_a", [])) != len(a.get("prob_b", [])):
        found.append(f"holds {_n(a.get('prob_a', []), 'prob_a')} and "
                     f"{_n(a.get('prob_b', []), 'prob_b')} (the spec needs the same size)")
    if not classes:
        return found
    if not per_class:  # linear: a row of coefficients per class (one for a binary one)
        if features is not None and len(coef) not in [r * features for r in _rows_of(a, classes)]:
            found.append(f"holds {_n(coef, 'coefficients')} for {classes} classes × "
                         f"{features} features (the spec needs {classes * features})")
        return found
    n_sv = sum(per_class)
    if len(per_class) != classes:
        found.append(f"holds {_n(per_class, 'vectors_per_class counts')} for {classes} "
                     f"classes (the spec needs {classes})")
    if features is not None and len(sv) != n_sv * features:
        found.append(f"holds {_n(sv, 'support vector values')} for {n_sv} support vectors "
                     f"× {features} features (the spec needs {n_sv * features})")
    if len(coef) != (classes - 1) * n_sv:
        found.append(f"holds {_n(coef, 'coefficients')} for {n_sv} support vectors and "
                     f"{classes} classes (the spec needs {(classes - 1) * n_sv})")
    pairs = classes * (classes - 1) // 2
    if len(rho) != pairs:
        found.append(f"holds {_n(rho, 'rho values')} for {classes} classes (the spec needs "
                     f"{pairs}, one per pair)")
    return found


def svm_regressor(a: Attrs, features: int | None) -> list[str]:
    """Spec: n_supports support vectors of one value per feature and a coefficient each
    (without support vectors, one coefficient per feature), and one rho."""
    n_sv = int(a.get("n_supports", 0))
    coef, sv, rho = a.get("coefficients", []), a.get("support_vectors", []), a.get("rho", [])
    found = []
    if n_sv and len(coef) != n_sv:
        found.append(f"holds {_n(coef, 'coefficients')} for {n_sv} support vectors "
                     f"(the spec needs {n_sv})")
    if n_sv and features is not None and len(sv) != n_sv * features:
        found.append(f"holds {_n(sv, 'support vector values')} for {n_sv} support vectors "
                     f"× {features} features (the spec needs {n_sv * features})")
    if not n_sv and features is not None and len(coef) != features:
        found.append(f"holds {_n(coef, 'coefficients')} for {features} features and no "
                     f"support vectors (the spec needs {features})")
    if len(rho) != 1:
        found.append(f"holds {_n(rho, 'rho values')} (the spec needs 1)")
    return found


_NODE_LISTS = ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
               "nodes_values", "nodes_values_as_tensor", "nodes_truenodeids",
               "nodes_falsenodeids", "nodes_missing_value_tracks_true", "nodes_hitrates",
               "nodes_hitrates_as_tensor")


def _same_length(a: Attrs, names: Sequence[str], what: str) -> list[str]:
    sizes = {n: len(a[n]) for n in names if n in a and len(a[n])}
    if len(set(sizes.values())) <= 1:
        return []
    listed = ", ".join(f"{n} {k}" for n, k in sizes.items())
    return [f"has {what} lists of different lengths ({listed}; the spec needs one length)"]


def _tree_lists(a: Attrs, features: int | None, leaf: str, count: int, counted: str
                ) -> list[str]:
    found = _same_length(a, _NODE_LISTS, "per-node")
    found += _same_length(a, [f"{leaf}_{s}" for s in ("treeids", "nodeids", "ids", "weights",
                                                       "weights_as_tensor")], f"{leaf}_*")
    ids = list(a.get(f"{leaf}_ids", []))
    bad = [i for i in ids if not 0 <= i < count]
    if bad:
        found.append(f"has {leaf}_ids {sorted(set(bad))[:5]} outside its {count} {counted}")
    modes = a.get("nodes_modes", [])
    feats = [f for f, m in zip(a.get("nodes_featureids", []), modes, strict=False)
             if m not in ("LEAF", b"LEAF")]
    if features is not None and any(not 0 <= f < features for f in feats):
        out = sorted({f for f in feats if not 0 <= f < features})[:5]
        found.append(f"splits on feature ids {out} of an input with {features} features")
    return found


def tree_classifier(a: Attrs, features: int | None) -> list[str]:
    """Spec: the nodes_* fields are one tuple per node (the same length), the class_*
    fields one tuple per vote, and a vote's class id indexes classlabels."""
    return _tree_lists(a, features, "class", _classes(a), "classlabels")


def tree_regressor(a: Attrs, features: int | None) -> list[str]:
    """Spec: the nodes_* fields are one tuple per node (the same length), the target_*
    fields one tuple per vote, and a vote's target id is below n_targets."""
    return _tree_lists(a, features, "target", int(a.get("n_targets", 1)), "targets")


def zip_map(a: Attrs, features: int | None) -> list[str]:
    """Spec: the columns of the tensor correspond one-by-one to the keys: there must be as
    many columns as keys."""
    keys = a.get("classlabels_int64s") or a.get("classlabels_strings") or []
    if features is not None and len(keys) != features:
        return [f"has {_n(keys, 'keys')} for an input of {features} columns "
                f"(the spec needs {features})"]
    return []


def label_encoder(a: Attrs, features: int | None) -> list[str]:
    """Spec: the keys_* and values_* attributes must have the same length."""
    keys = next((a[k] for k in ("keys_int64s", "keys_strings", "keys_floats", "keys_tensor")
                 if k in a), None)
    values = next((a[k] for k in ("values_int64s", "values_strings", "values_floats",
                                  "values_tensor") if k in a), None)
    if keys is not None and values is not None and len(keys) != len(values):
        return [f"has {_n(keys, 'keys')} and {_n(values, 'values')} "
                "(the spec needs the same length)"]
    return []


RULES: dict[str, Rule] = {
    "LinearClassifier": linear_classifier,
    "LinearRegressor": linear_regressor,
    "Scaler": scaler,
    "SVMClassifier": svm_classifier,
    "SVMRegressor": svm_regressor,
    "TreeEnsembleClassifier": tree_classifier,
    "TreeEnsembleRegressor": tree_regressor,
    "ZipMap": zip_map,
    "LabelEncoder": label_encoder,
}
"""The ai.onnx.ml operators whose spec fixes attribute sizes, and the rule of each."""


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    out = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, onnx.TensorProto):
            value = onnx.numpy_helper.to_array(value).reshape(-1).tolist()
        out[attr.name] = value
    return out


def _last_dims(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]
               ) -> dict[str, int]:
    """Each tensor's last dimension where static shape inference knows it, with the graph
    inputs' shapes fixed to the case's."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for value in fixed.graph.input:
        shape = shapes.get(value.name)
        if shape is None or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape
        del dims.dim[:]
        for size in shape:
            dims.dim.add().dim_value = int(size)
    try:
        inferred = shape_inference.infer_shapes(fixed, strict_mode=False)
    except Exception:  # a graph onnx cannot infer: the graph inputs' shapes are all we know
        inferred = fixed
    last = {}
    graph = inferred.graph
    for value in [*graph.input, *graph.value_info, *graph.output]:
        t = value.type.tensor_type
        if value.type.HasField("tensor_type") and t.HasField("shape") and t.shape.dim:
            d = t.shape.dim[-1]
            if d.HasField("dim_value") and d.dim_value > 0:
                last[value.name] = d.dim_value
    return last


def violations(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]
               ) -> list[Violation]:
    """The main graph's ai.onnx.ml nodes whose attributes break their operator's spec,
    fed the case's input ``shapes``; a sentence per node (its rule's findings joined)."""
    nodes = [(i, n) for i, n in enumerate(model.graph.node)
             if n.domain == ML_DOMAIN and n.op_type in RULES]
    if not nodes:
        return []
    last = _last_dims(model, shapes)
    found = []
    for i, node in nodes:
        features = last.get(node.input[0]) if node.input else None
        facts = RULES[node.op_type](_attributes(node), features)
        if facts:
            found.append(Violation(node.op_type, node.name or f"#{i}", "; ".join(facts)))
    return found
