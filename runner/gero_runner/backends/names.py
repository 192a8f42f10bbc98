"""How every view names each backend and its paths, and which have rewrite levels: one
table, importable without NumPy or any runtime (the explorer's first frame and every query
name paths through it).

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
    levels: tuple[str, ...] = ()
    """Its settings that rewrite the graph more and more, from the unoptimised base to the
    most rewritten (ONNX Runtime's levels), as its paths' ``optimization``; empty when it
    has none (``gero blame`` compares a runtime's levels). Here, not only on its
    ``Backend``, so that a view offers blame without loading a backend's module."""

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
    Names("onnxruntime", "ort", "ONNX Runtime", "ort", "{setting}", ORT_LEVELS),
    Names("openvino", "openvino", "OpenVINO", "ov"),
    Names("tract", "tract", "", ""),
    Names("onnx-reference", "onnx-reference", "the ReferenceEvaluator", "ref",
          "reference"),  # its one path has no setting
    Names(CORRECTED, CORRECTED, "the corrected ReferenceEvaluator", "ref+", CORRECTED),
)}
"""Every backend rows can name: the registry's and the corrected ReferenceEvaluator (the
reference of some comparisons and the float64 shadow's evaluator)."""


RELEASE = "=="
"""A runtime's release is named ``RUNTIME==VERSION`` ("onnxruntime==1.20.1"): a backend of
its own, run in its own interpreter (``backends.release``)."""


def release_of(backend: str) -> tuple[str, str] | None:
    """(runtime, version) of a release's name, None for any other name."""
    runtime, sep, version = backend.partition(RELEASE)
    return (runtime, version) if sep and runtime in NAMES and version else None


def line(backend: str) -> Names | None:
    """The names' line of a backend: its own, or for a release its runtime's, renamed
    ("ONNX Runtime 1.20.1", "ort==1.20.1", paths "ort==1.20.1:all" and named
    "onnxruntime==1.20.1-all"); None for a name gero does not know."""
    known = NAMES.get(backend)
    release = release_of(backend) if known is None else None
    if release is None:
        return known
    base = NAMES[release[0]]
    return Names(backend, backend, f"{base.label()} {release[1]}",
                 f"{base.short_name()}{RELEASE}{release[1]}", "{short}:{setting}",
                 base.levels)


# How views name a backend and a path, from the table alone: the explorer imports this
# module and no other of the runner's backends.
def title(backend: str) -> str:
    """How a sentence names a backend ("ONNX Runtime", "the ReferenceEvaluator"); a name
    gero does not know as itself."""
    known = line(backend)
    return known.label() if known else backend


def short_name(backend: str) -> str:
    """A backend's name where room is short ("ort", "ov"); a name gero does not know as
    itself."""
    known = line(backend)
    return known.short_name() if known else backend


def label_template(known: Names) -> str:
    """``Names.path_label`` with the short name filled in: "ov:{setting}"."""
    return known.path_label.replace("{short}", known.short_name())


def path_label(backend: str, optimization: str) -> str:
    """How every table and list names a path (``Names.path_label``): ONNX Runtime's
    levels alone ("all"), "reference", another runtime's setting after its short name
    ("ov:f32", "tract:optimized"). A backend gero does not know: its name, with its
    setting when it has one."""
    known = line(backend)
    if known is None:
        return backend if optimization == NOT_APPLICABLE else f"{backend}:{optimization}"
    return label_template(known).replace("{setting}", optimization)


def levels(backend: str) -> tuple[str, ...]:
    """A backend's rewrite levels, base first (``Names.levels``): empty for one that has
    none or that gero does not know."""
    known = line(backend)
    return known.levels if known else ()


def with_levels() -> tuple[str, ...]:
    """The backends that have rewrite levels (the ones ``gero blame`` compares)."""
    return tuple(n.name for n in NAMES.values() if n.levels)
