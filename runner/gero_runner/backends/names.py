"""How every view names each backend and its paths: one table, importable without NumPy or
any runtime (the explorer's first frame and every query name paths through it).

A backend module's class takes its names from here (``Backend.__init_subclass__``); adding
a runtime adds its line here beside its module and its registry line.
"""

from __future__ import annotations

from typing import NamedTuple


class Names(NamedTuple):
    name: str
    """The rows' backend column, also the name ``gero run --backends`` takes."""
    prefix: str
    """Path names are ``{prefix}-{optimization}`` (evidence folders, failure messages)."""
    title: str
    """How sentences name it ("ONNX Runtime"); its name when empty."""
    short: str
    """Its name where room is short (a column head, a bar's label: "ov"); its name when
    empty."""
    path_label: str = "{short}:{setting}"
    """How tables and lists name one of its paths, a template over ``short`` and the path's
    setting (its ``optimization``): "ov:f32"."""

    def label(self) -> str:
        return self.title or self.name

    def short_name(self) -> str:
        return self.short or self.name


NOT_APPLICABLE = "-"
"""The optimization column of a path that has no setting (the ReferenceEvaluator's)."""

ORT_LEVELS = ("disable_all", "basic", "extended", "all")
"""ONNX Runtime's graph optimisation levels in their natural order, the order every view
sorts paths by."""

CORRECTED = "onnx-reference-corrected"

NAMES: dict[str, Names] = {n.name: n for n in (
    # ONNX Runtime's levels alone: most rows are its own, and a level names no other runtime.
    Names("onnxruntime", "ort", "ONNX Runtime", "ort", "{setting}"),
    Names("openvino", "openvino", "OpenVINO", "ov"),
    Names("tract", "tract", "", ""),
    Names("onnx-reference", "onnx-reference", "the ReferenceEvaluator", "ref",
          "reference"),  # its one path has no setting
    Names(CORRECTED, CORRECTED, "the corrected ReferenceEvaluator", "ref+", CORRECTED),
)}
"""Every backend rows can name: the registry's and the corrected ReferenceEvaluator (the
reference of some comparisons and the float64 shadow's evaluator)."""
