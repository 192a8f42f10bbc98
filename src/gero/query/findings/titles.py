"""Finding titles as data: one template per kind of finding (``TITLES``), filled from the
finding's fields (``title_fields``); ``title_kind`` says which applies.

A title names the outlier, the operators and dtypes, its scope and its cause, all from the
recorded facts (``gero_runner.facts``): the kind and cause key choose the title, the
operator a runtime lacks is named from the cause key, and the words of the cause are the
representative's recorded ``cause`` (never the ``reason``, never a masked template), said
to be the worst row's where the finding holds more than one.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict

from gero.query.findings.model import (
    GERO_LIMIT,
    NONFINITE,
    OUTSIDE,
    PAIR,
    VARIANT_TOOLING,
    WIDENS_FP16,
    Finding,
)
from gero_runner.backends import title
from gero_runner.facts import (
    CONTRACTS_SCOPE,
    FP16_OVERFLOW,
    GRAPH_SCOPE,
    MALFORMED,
    MODEL_QUANTIZATION,
    OUT_OF_BUDGET,
    PRECISION_REWRITE,
    UNSUPPORTED_OP,
    VARIANT_BUILD,
    node_of_key,
)
from gero_runner.schema import DIVERGENCE, MODEL_VARIANTS

FP32_GATE = "model:fp32"
"""The family of the fp32 model's own gate (a runtime against float64 or the baseline)."""
_NO_ARBITER = "with no float64 arbiter to side with: neither is blamed"

TITLES: dict[str, str] = {
    # NaN fed to every path and nothing else
    "nan": "NaN inputs propagate: NaN == NaN cannot be assessed ({ops}, {dtypes})",
    # a registered upstream defect of the ReferenceEvaluator, on any check
    "defect": "Known upstream ReferenceEvaluator defect ({ops_dtypes}){on}: {defect}",
    # a runtime's defect a 1-node probe found (cause_key 'defect:RUNTIME:KEY'), its words
    # the probe's figure and the worst row's file's count of such nodes
    "runtime-defect": "{Who} {probe_cause}: off on {files_of}",
    # failures (family ``execution``)
    "tooling": "gero's variant tooling could not build the {variant_file} file of {ops}: "
               "{cause}",
    # gero's own yardstick (the float64 shadow, the fp16 yardstick) could not run: no path
    # is at fault, and nothing is judged against it
    "tooling-yardstick": "gero's {tool} could not run on {file_of}{ops}, so nothing is "
                         "judged against it: {cause}",
    # an output gero does not compare (a sequence or map): gero's limit, no runtime's failure
    "gero-limit": "gero does not compare an output of {ops}{on} (its limit, not a runtime's "
                  "failure): {cause}",
    # the fp16 file computed as it declares overflows float16 (cause_key 'fp16-overflow'):
    # a finding about the file, whichever path widens it and stays finite
    "fp16-overflow": "The {variant} file of {ops} overflows float16 computed as it declares "
                     "(float16 after every node): {cause}",
    "widens-fp16": "{Who} computes the fp16 file of {ops} in float32 {detail}",
    "no-kernel": "{Who} has no {dtypes} kernel for {n_ops} operator(s): {ops}",
    # a model (or its variant file) holds an operator the runtime does not implement
    "lacks-op": "{Who} cannot run {ops}{on}: it does not implement {operator}",
    # a failure on a model names no dtype: the dtypes are its outputs', not the failing op's
    "cannot-run": "{Who} cannot run {ops_counted}{of_dtypes}{on}: {cause}",
    # a model's failure whose error names the node it failed on (cause_key
    # 'error:[DTYPE DOMAIN::OP] …'): that operator and its dtype, not only a secondary error
    "cannot-run-node": "{Who} cannot run {node_op} on {file_of}{ops}: {cause}",
    # a failure on the contract graphs gero derives from a model (scope 'contracts')
    "contract-graphs": "{Who} fails on a contract graph of {ops}, not on the model as "
                       "given: {cause}",
    # a model node that breaks its operator's spec (cause_key 'malformed:DOMAIN::OP'): the
    # model's finding, naming what each path did with it, never a path's
    "malformed": "{ops} is malformed: {cause}",
    # a time budget spent: gero's limit (a note), the path may well compute it, given the time
    "out-of-budget": "gero's time budget ran out before {who} finished {ops}{on}: {cause}",
    # a runtime whose settings compute in fewer bits (``template``: "computes … in …")
    "precision": "{Who} {template} (its inference precision): {precision_off}",
    # a runtime's non-finite outputs, or its finite ones where the other side is not
    "non-finite": "{Who} {gives} NaN or inf where the compared output is finite ({dtypes}): "
                  "{ops}",
    # a model's: the path's NaN or inf on the model or one file, on every gate it fails
    "non-finite-model": "{Who} {gives} NaN or inf on {file_of}{ops}: {cause}",
    "swallowed": "{Who} {gives} finite values where the compared output is NaN or inf: {ops} "
                 "({dtypes})",
    # outputs off (family ``numeric``)
    # (``{figures}``: its worst row's recorded figures, where it has them)
    "pair-settings": "{A} at {settings} and at {other} disagree on {ops} ({dtypes}) "
                     + _NO_ARBITER + "{figures}",
    "pair": "{A} and {b} disagree on {ops} ({dtypes}) " + _NO_ARBITER + "{figures}",
    "every-path": "{ops} ({dtypes}) differs from float64 beyond tolerance on every "
                  "path{figures}",
    "off-at": "{Who}: {ops} ({dtypes}) is off from float64 {what}{figures}",
    "off": "{owner} {ops} ({dtypes}) is off from float64 {what}{figures}",
    # a divergence its path's precision rewrite explains (cause_key 'precision-rewrite'):
    # the rewrite is named, not the operator's kernel
    "precision-rewrite": "{Who} computes {ops} ({dtypes}) wider than the graph declares, "
                         "not its kernel: {rewrite}",
    # a verdict on a variant file (family ``model:VARIANT:GATE``) names the path and what it
    # was measured against: the fp32 model (vs-model, vs-fp32), the run's baseline on the
    # same file (cosine, decision), a correct computation of the fp16 file (scaled)
    # a variant file's rows a runtime's precision rewrite explains (cause_key
    # 'precision-rewrite'): one finding per file, every runtime and gate of it, no engine blamed
    "file-precision-rewrite": "{Who} {computes} the {variant} file of {ops} in float32, wider "
                              "than it declares: {step}",
    "file-every-path": "The {variant} file of {ops} is off the fp32 model on every path: "
                       "{cause}",
    "file-vs-model": "The {variant} file of {ops} is off the fp32 model on {Who}: {cause}",
    "file-vs-fp32": "{Who} on the {variant} file of {ops} {is} off the fp32 model: {cause}",
    "file-scaled": "{Who} on the {variant} file of {ops} {is} off a correct fp16 computation "
                   "of it: {cause}",
    "file-baseline": "{Who} on the {variant} file of {ops} {disagrees} with {baseline} on "
                     "that file ({gate}): {cause}",
    # the fp32 model off its yardstick (float64, or the run's baseline without one)
    # its sentence says against what (e.g. "9.46x further from the float64 arbiter than
    # ONNX Runtime"), which the figures cannot: both are said
    "model-gate": "{Who} {is} off on {ops} ({dtypes}): {cause}{and_figures}",
    # laws and variants of the synthetic suite, and any other check
    "law": "{ops} ({dtypes}) breaks the {name} law on {who}: {cause}",
    # a batch law the model's own per-tensor dynamic quantisation breaks (its scale spans
    # the batch), whichever runtime runs it
    "model-quantization": "{ops} ({dtypes}) breaks the {name} law by its own per-tensor "
                          "dynamic quantisation, not a runtime's: one scale spans the batch "
                          "({cause})",
    "variant-law": "{ops} ({dtypes}): the {name} variant disagrees on {who}: {cause}",
    "other": "{ops} ({dtypes}) {family} on {who}: {cause}",
}
"""Each kind of finding's title; its ``{fields}`` are ``title_fields``'."""

SEEDED = " [on gero's seeded default inputs, not your data: give --inputs FILE.npz]"
"""After the title of a finding every row of which was fed gero's seeded default inputs."""


def title_kind(f: Finding) -> str:
    """Which of ``TITLES`` names this finding (its family, kind and cause key)."""
    if f.family == "nan":
        return "nan"
    if f.cause_key == MODEL_QUANTIZATION:
        return "model-quantization"
    if f.kind == MALFORMED:
        return "malformed"
    if f.cause_key.startswith("defect:") and f.cause_key.count(":") == 2:
        return "runtime-defect"
    if f.kind == "defect" or f.cause_key.startswith("defect:"):
        return "defect"
    if f.cause_key == FP16_OVERFLOW:
        return "fp16-overflow"
    if f.family == "execution":
        if f.outlier == VARIANT_TOOLING or f.cause_key == VARIANT_BUILD:
            return "tooling"
        if f.outlier == GERO_LIMIT:
            return "gero-limit"
        if f.kind == "tooling":
            return "tooling-yardstick"
        if f.cause_key == PRECISION_REWRITE:  # a fact about the runtime, like a precision
            return "widens-fp16"
        if f.cause_key.startswith(UNSUPPORTED_OP):
            return "no-kernel" if f.scope == GRAPH_SCOPE else "lacks-op"
        if f.kind == OUT_OF_BUDGET:
            return "out-of-budget"
        if f.scope == CONTRACTS_SCOPE:
            return "contract-graphs"
        return ("cannot-run-node" if node_of_key(f.cause_key) and not _graph_scope(f)
                else "cannot-run")
    if f.family == "precision":
        return "precision"
    if f.family == "non-finite":
        if f.template != NONFINITE:
            return "swallowed"
        return "non-finite" if f.scope in (GRAPH_SCOPE, "") else "non-finite-model"
    if f.family == "numeric":
        return ("precision-rewrite" if f.cause_key == PRECISION_REWRITE
                else _numeric_kind(f))
    if f.family == FP32_GATE:  # the model's own gate: a runtime off its yardstick
        return "model-gate" if PAIR not in f.outlier else _numeric_kind(f)
    if _variant_of(f.family) and f.cause_key == PRECISION_REWRITE:
        return "file-precision-rewrite"
    if _variant_of(f.family):
        gate = f.family.rsplit(":", 1)[-1]
        if gate in ("vs-model", "vs-fp32"):
            return "file-every-path" if f.outlier == "every path" else f"file-{gate}"
        return "file-scaled" if gate == "scaled" else "file-baseline"
    kind = f.family.partition(":")[0]
    return {"contract": "law", "variant": "variant-law"}.get(kind, "other")


def _graph_scope(f: Finding) -> bool:
    """A graph case's (or an unrecorded) scope: its operators are the graph's own."""
    return not set(f.scope.split(",")) - {GRAPH_SCOPE, ""}


def _node_op(f: Finding) -> str:
    """'float16 LayerNormalization' of a cause key naming the node it failed on."""
    dtype, domain, op = node_of_key(f.cause_key) or ("", "", "")
    name = op if domain in ("", "ai.onnx") else f"{domain}.{op}"
    return f"{dtype} {name}".strip()


def _numeric_kind(f: Finding) -> str:
    if PAIR in f.outlier:
        a, _, b = f.outlier.partition(PAIR)
        # two settings of one runtime ("OpenVINO and OpenVINO" said nothing)
        return "pair-settings" if a == b else "pair"
    if f.outlier == "every path":
        return "every-path"
    return "off-at" if f.outlier.partition("@")[2] else "off"


def title_fields(f: Finding) -> dict[str, str]:
    """Every field a title may name, filled from the finding's facts (and its
    representative's recorded cause)."""
    r = f.representative
    who = path_name(f.outlier)
    # "every path is", "ONNX Runtime and OpenVINO are", "the outputs shipped … are"
    many = " and " in who or who.startswith("the outputs")
    owner = _cap(_name(f.outlier.partition("@")[0]))
    a, _, b = f.outlier.partition(PAIR)
    files = [s for s in f.scope.split(",") if s in MODEL_VARIANTS]
    variant = (" and ".join(files) if f.family == "execution" or not _variant_of(f.family)
               else _variant_of(f.family))
    domain, _, op = f.cause_key.removeprefix(UNSUPPORTED_OP).partition("::")
    scopes = set(f.scope.split(","))
    graph = not scopes - {GRAPH_SCOPE, ""}  # a graph case's (or an unrecorded) scope
    ops = _list(f.operators)
    on = f" on the {variant} file{'s' if len(files) > 1 else ''}" if variant else ""
    if f.scope == CONTRACTS_SCOPE:  # a time budget spent there, not on the model itself
        on = " on its contract graphs"
    figures = _figures(f)
    return {
        "ops": _list(f.operators), "n_ops": str(len(f.operators)),
        # many operators are counted: the representative's words are one of them
        "ops_counted": (f"{len(f.operators)} operators ({_list(f.operators)})"
                        if len(f.operators) > 1 else _list(f.operators)),
        "dtypes": "/".join(f.dtypes),
        "of_dtypes": f" ({'/'.join(f.dtypes)})" if graph else "",
        "ops_dtypes": f"{_list(f.operators)}, {'/'.join(f.dtypes)}" if graph else ops,
        # a model is no operator to count (its rows on its variant files are its own)
        "precision_off": (f"{len(f.operators)} operator(s) off, {ops}" if graph
                          else f"off on the {variant} file of {ops}" if variant
                          else f"off on {ops}"),
        "family": f.family, "template": f.template,
        "name": f.family.partition(":")[2],
        "who": who, "Who": _cap(who), "owner": owner + ("'" if owner.endswith("s") else "'s"),
        "gives": "give" if many else "gives", "is": "are" if many else "is",
        "computes": "compute" if many else "computes",
        # its figures the worst row's: "one step of QuantizeLinear 'q' (worst 0.0064 vs …)"
        # an older run's note ("X computes the fp16 file in float32 at 147 of its 150
        # float16 nodes …") says the title's own words first: only what follows them
        "step": _short(_PRECISION_NOTE.sub("", _words(r.cause), 1), 110).replace(
            " (", " (worst " if f.observations > 1 else " (", 1),
        "disagrees": "disagree" if many else "disagrees",
        "A": _cap(_name(a)), "b": _name(b),
        "settings": r.optimization, "other": r.reference.partition(":")[2] or r.reference,
        "variant": variant, "variant_file": variant or "variant",
        "on": on,
        "file_of": f"the {variant} file{'s' if len(files) > 1 else ''} of " if variant else "",
        "gate": f.family.rsplit(":", 1)[-1],
        # the representative may be the runtime's own vs-model row (reference fp32:…),
        # which its disagreement's finding holds too
        "baseline": (_baseline(r.reference.split(":", 1)[-1])
                     if variant and r.reference.startswith(f"{variant}:")
                     else "the run's baseline"),
        "defect": f.cause_key.removeprefix("defect:").replace(",", ", "),
        "detail": _short(_words(r.cause).partition(WIDENS_FP16)[2].strip()),
        "operator": f"{domain}.{op}" if domain not in ("", "ai.onnx") else op,
        "node_op": _node_op(f),
        "tool": _TOOLS.get(f.cause_key, "own tooling"),
        "what": "beyond tolerance" if f.template == OUTSIDE else f"({_short(f.template, 50)})",
        # an output off: its recorded figures where it has them, not its sentence again
        "cause": (figures if figures and title_kind(f) in _FIGURE_KINDS
                  else _cause(f, variant)),
        "figures": f": {figures}" if figures else "",
        "and_figures": f"; {figures}" if figures else "",
        "rewrite": _short(r.cause.partition(" computes ")[2], 90),
        "probe_cause": _words(r.cause),
        "files_of": _files_of(ops, files, "model" in scopes),
    }


def _files_of(ops: str, files: list[str], model: bool) -> str:
    """The model and the variant files a finding's rows are about, in words."""
    if not files:
        return ops
    named = f"{' and '.join(files)} file{'s' if len(files) > 1 else ''}"
    return f"{ops} and its {named}" if model else f"the {named} of {ops}"


_PRECISION_NOTE = re.compile(r"^.{0,40}? computes? the \w[\w-]* file in float32 ")
"""The words an fp16 precision note starts with, which its finding's title already says."""

_FIGURE_KINDS = frozenset({"file-every-path", "file-vs-model", "file-vs-fp32", "file-scaled",
                           "file-baseline"})
"""Titles of an output off whose cause is said by the worst row's figures where it has them
(the others append them: ``{figures}``)."""


def _figures(f: Finding) -> str:
    """The worst row's recorded figures in words ('74 of 80 elements off, max |a−r|
    0.0829'), '' where it has none (a failure, a gero before schema 5), none off, or
    non-finite outputs (its cause counts them; the figures hold the finite ones only)."""
    if f.representative.result != DIVERGENCE:
        return ""
    try:
        data = json.loads(f.representative.figures) if f.representative.figures else {}
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    off, elements = data.get("mismatches"), data.get("elements")
    if not isinstance(off, int) or not isinstance(elements, int) or not 0 < off <= elements:
        return ""
    where = " in its worst row" if f.observations > 1 else ""
    text = f"{off} of {elements} elements off{where}"
    worst = data.get("max_abs_error")
    if isinstance(worst, int | float) and math.isfinite(worst):
        text += f", max |a−r| {worst:.3g}"
    return text


_TOOLS = {"tooling:shadow": "float64 shadow", "tooling:fp16-yardstick": "fp16 yardstick"}
"""gero's yardsticks by their cause key (``tooling:WHAT``), in words."""


def _words(cause: str) -> str:
    """A recorded cause as a title quotes it: one line, without ONNX Runtime's status prefix
    ("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while
    running ScatterElements node. Name:'n' Status Message: ") that says nothing of the
    cause: its status message is the meaning."""
    return " ".join(_ORT_STATUS.sub("", _ORT_PREFIX.sub("", cause)).split())


_ORT_PREFIX = re.compile(r"\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ")
_ORT_STATUS = re.compile(r"Non-zero status code returned while running \w+ node\. "
                         r"Name:'[^']*' Status Message: ")


def _cause(f: Finding, variant: str) -> str:
    """The cause in words: the representative's recorded cause, said to be the worst row's
    where the finding holds more than one row and its words carry a figure (another row's
    differ), a time budget as it is."""
    own = _words(f.representative.cause)
    if f.kind == MALFORMED:  # the facts and what each path did, every word of them
        return own
    if f.outlier == GERO_LIMIT:  # the title says it is gero's limit
        own = own.partition(": gero compares")[0]
    if f.kind == "tooling" and " could not run" in own:  # the yardstick is the title's
        own = own.partition(" could not run")[2].partition(": ")[2] or own
    if variant and own.startswith("calibrated on "):  # where the ranges came from
        own = own.partition("; ")[2] or own
    if f.family == "execution" and f.kind == "cannot-run" and len(f.operators) > 1:
        return "e.g. " + _short(own, 90)
    if f.family == "execution":  # a contract graph's failure names the graph it ran
        return _short(own, 160 if f.scope == CONTRACTS_SCOPE else 90) or f.kind
    limit = 110 if variant else 60  # a file's verdict says what its figure means
    if f.family != "execution" and f.observations > 1 and _FIGURE.search(own):
        return "worst " + _short(own, limit)
    return _short(own, limit) or f.kind.removeprefix("law:")


_FIGURE = re.compile(r"\d")


def render_title(f: Finding) -> str:
    """The finding's title: its kind's template filled from its fields."""
    text = TITLES[title_kind(f)].format_map(title_fields(f))
    return text + (SEEDED if f.seeded_inputs else "")


def with_title(f: Finding) -> Finding:
    return Finding(**{**asdict(f), "representative": f.representative,
                      "title": render_title(f)})


_OTHER_NAMES = {"numpy-float64": "the float64 formula",
                VARIANT_TOOLING: "gero's variant tooling", GERO_LIMIT: "gero",
                "onnx-shipped": "the outputs shipped with the model",
                MODEL_QUANTIZATION: "the model's own quantisation"}
"""Outliers that are no backend (a case's expected values); a backend is named by its title."""


def _name(outlier: str) -> str:
    return _OTHER_NAMES.get(outlier) or title(outlier)


def _baseline(reference: str) -> str:
    """The run's baseline a file's row was compared with, its setting in parentheses
    (``onnxruntime:all`` -> ONNX Runtime (all): 'ONNX Runtime at all there' misread)."""
    runtime, _, setting = reference.partition(":")
    return f"{_name(runtime)} ({setting})" if setting and setting != "-" else _name(runtime)


def path_name(outlier: str) -> str:
    """An outlier label in words: ``onnxruntime@extended,all`` -> ONNX Runtime at extended, all."""
    if PAIR in outlier:  # two engines no float64 decides between, each by its name
        return " and ".join(path_name(side) for side in outlier.split(PAIR))
    parts = []
    for part in outlier.split("+"):
        runtime, _, settings = part.partition("@")
        name = _name(runtime)
        parts.append(f"{name} at {settings.replace(',', ', ')}" if settings else name)
    return " and ".join(parts)


def _list(values: tuple[str, ...], limit: int = 4) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _short(text: str, limit: int = 70) -> str:
    """``text`` in at most ``limit`` characters, cut at a word's end (never mid-word)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(" ,;:") + "…"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _variant_of(check: str) -> str:
    """The variant file a model row is about (``model:fp16:scaled`` -> fp16), or ''."""
    parts = check.split(":")
    return parts[1] if len(parts) > 1 and parts[0] == "model" and parts[1] in MODEL_VARIANTS \
        else ""
