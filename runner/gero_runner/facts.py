"""What a verdict is about, recorded beside its sentence: the path a failure names, the
words of its cause, the kind of failure, its scope, the key of its cause and the figures a
title needs, so that findings and titles read columns, not the English ``reason``.

Standard library only: the reader names these columns (a file of a gero before schema
version 3 lacks the first two, before 4 the kind, before 5 the rest, and reads them as
NULL) and the findings derive them once for such rows (``gero_runner.storage.derivation``,
and ``cause_of`` for a representative's words), the one place the reason is still read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

FACT_COLUMNS: Final = (
    ("failed_path", "on a failure: the path that failed, as the runner names it "
                    "(tract-unoptimized; not the variant file it ran), else ''"),
    ("cause", "the words a finding's title quotes: a failure's error named by its root "
              "cause, a law's clause with its figures, a model verdict's sentence, else ''"),
    ("failure_kind", "on a non-passed row, what kind of failure it is: 'outside' (finite "
                     "values out of tolerance), 'nonfinite:actual' or 'nonfinite:reference' "
                     "(the side that is non-finite), 'nan' (NaN fed on both sides, nothing "
                     "else), 'defect' (a registered defect, named by cause_key), 'law:NAME' "
                     "(a law or model gate broken; 'law:NAME:nonfinite' by non-finite values "
                     "on its side), 'cannot-run', 'out-of-budget', 'tooling' (gero's own "
                     "builder failed), 'malformed' (the model breaks an operator's spec, "
                     "or a path failed on such a model); '' on a passed row (older rows: "
                     "masked sentences)"),
    ("scope", "what the verdict is about: 'model', a variant file ('fp16', 'int8-dynamic', "
              "'int8-static'), the contract graphs gero derives from a model ('contracts': "
              "its symbolic-batch form, not the model as given), or the case's graph "
              "('graph'); '' when not recorded"),
    ("cause_key", "the machine key of a known cause: 'defect:KEY' (a ReferenceEvaluator "
                  "defect), 'defect:RUNTIME:KEY' (a runtime's, a 1-node probe's), "
                  "'unsupported-op:DOMAIN::OP', 'precision-rewrite', 'model-quantization', "
                  "'tooling:WHAT', 'malformed:DOMAIN::OP'; a failure no known cause "
                  "names: 'error:' and its error "
                  "with names and figures masked (after '[DTYPE DOMAIN::OP] ', the node "
                  "it failed on, where the error names one); '' when none"),
    ("note", "a sentence that changes no verdict (a runtime computing float16 in float32), "
             "else ''"),
    ("figures", "JSON object of the numbers a title needs ({\"mismatches\": 7, ...}), "
                "'' when none"),
)
"""(column, meaning) of each fact, in the schema's order."""
FACT_NAMES: Final = tuple(name for name, _ in FACT_COLUMNS)

SINCE_SCHEMA: Final = 3
"""Schema 3 added failed_path and cause, 4 failure_kind, 5 scope, cause_key, note, figures."""

VARIANT_FILES: Final = ("int8-dynamic", "int8-static", "fp16")
"""The schema's ``MODEL_VARIANTS`` (it loads pyarrow; a test holds the two equal)."""

FAILED_PATH: Final = (r"^(?:variant \S+: )?(?:(?:" + "|".join(VARIANT_FILES)
                      + r"):)?(\S+) failed: ")
"""The path a failure's reason names, without the variant file it ran
(``fp16:tract-optimized failed: …``): how the facts of a row recorded without them are
derived (in SQL by the findings and the Blamed column, in Python by ``cause_of``)."""

_VARIANT_PREFIX = re.compile(r"^variant \S+: ")
_FAILED = re.compile(FAILED_PATH)
_CHAINED = re.compile(r"^([A-Za-z]+: )[\s\S]*\n\s*(?:\d+: )?([^\n]*\S)\s*$")
_LAW = re.compile(r"^[A-Za-z0-9_.-]+: ")


def root_cause(error: str) -> str:
    """A path's error as a title quotes it: a chained error (tract's "Caused by:" list) is
    named by its kind and its root cause, the last line (``TractError: Abs does not support
    F64``); another error is itself."""
    return _CHAINED.sub(r"\1\2", error.strip())


def failure_cause(path: str, error: str) -> tuple[str, str]:
    """``(failed_path, cause)`` of a failure of ``path`` (``fp16:tract-optimized`` is
    recorded as ``tract-optimized``: the variant file is the row's scope, in its check)."""
    file, _, rest = path.partition(":")
    return rest if rest and file in VARIANT_FILES else path, root_cause(error)


def law_cause(reason: str) -> str:
    """A law's sentence (or the error that kept it from being checked) without its name or
    its variant's: ``7 non-finite value(s) (NaN 7, inf 0)``."""
    prefix = _VARIANT_PREFIX.match(reason) or _LAW.match(reason)
    return root_cause(reason[prefix.end():] if prefix else reason)


# Deriving the facts of a row a gero before schema version 3 wrote (NULL columns): the
# regular expressions the findings read the reason with before the facts were recorded.

def cause_of(reason: str, check: str) -> str:
    """The cause words of a row recorded without them (after the registered defects'
    labels): a failure's error by its root cause, a law's or variant's clause, a model
    verdict's sentence; '' for another comparison (its kind says it)."""
    text = reason.rpartition(" — ")[2] if "known upstream defect" in reason else reason
    m = _FAILED.match(text)
    if m:
        return root_cause(text[m.end():])
    if check.startswith(("contract:", "variant:")):
        return law_cause(text)
    return root_cause(text) if check.startswith("model:") else ""


# The kind of a failed comparison (``failure_kind``), as ``classify.failure_kind`` names it.

NAN: Final = "nan"
OUTSIDE: Final = "outside"


def nonfinite_kind(side: str) -> str:
    """A mismatch where ``side`` (``actual``, ``reference``) is NaN or ±inf."""
    return f"nonfinite:{side}"


# The masks of a failure's error in its cause key (``error_key``); the derivation for rows of
# a gero before applies the same to their reason (``storage.derivation.template_sql``, in
# DuckDB's RE2, whose ``\b`` is ASCII's): (pattern, replacement, every occurrence or first).
_MASKS = tuple((re.compile(p, re.ASCII), r, g) for p, r, g in (
    (r"^(variant \S+: )?\S+ failed: ", r"\1PATH failed: ", False),
    (r"\b[A-Z][A-Za-z0-9]*\(\d+\)", "OP(#)", True),
    (r"\([A-Z][A-Za-z0-9]*\)", "(OP)", True),
    (r"'[^']*'", "'…'", True),
    (r'"[^"]*"( [A-Z][A-Za-z0-9]*)?', '"…" OP', True),
    (r"\b[A-Z][A-Za-z0-9]* does not support", "OP does not support", True),
    (r"\b[FIU](8|16|32|64)\b", "T", True),
    (r"#?\b\d+(\.\d+)?([eE][-+]?\d+)?\b", "#", True),
    (r"(#, )+#|(#,)+#", "…", True),
    (r"(#,)+", "…,", True),
    (r"^(PATH failed: [A-Za-z]+: )[\s\S]*\n\s*(?:#: )?([^\n]*[^\s])\s*\Z", r"\1\2", False),
))
def masked(sentence: str) -> str:
    """The sentence with the path, operator and node names, quoted names, element types and
    figures masked, as the findings' template reads it."""
    for pattern, replacement, every in _MASKS:
        sentence = pattern.sub(replacement, sentence, count=0 if every else 1)
    return sentence


# Schema 5: the typed facts a row builder records (``CaseContext.row``), the values the
# findings group on and the titles are rendered from.

DEFECT: Final = "defect"
CANNOT_RUN: Final = "cannot-run"
OUT_OF_BUDGET: Final = "out-of-budget"
TOOLING: Final = "tooling"
MODEL_SCOPE: Final = "model"
GRAPH_SCOPE: Final = "graph"
CONTRACTS_SCOPE: Final = "contracts"
"""A path that failed on the contract graphs gero derives from a model (its symbolic-batch
form, run at batch 1), not on the model as given (magika: tract aborts there and runs the
model itself): the row's scope, so that its title says where it failed."""
MODEL_QUANTIZATION: Final = "model-quantization"
PRECISION_REWRITE: Final = "precision-rewrite"
FP16_OVERFLOW: Final = "fp16-overflow"
"""The fp16 file computed as it declares (float16 after every node) overflows float16 where
the fp32 model is finite: a contract issue of the file, not of a path (``checks.model``)."""
VARIANT_BUILD: Final = "tooling:variant-build"
TIME_BUDGET: Final = "tooling:budget"
"""A path that ran out of its time budget (kind ``out-of-budget``): gero's limit, no
runtime's failure (tract runs magika in 15 s, its 60 s budget ran out under load): a note."""
TENSOR_OUTPUTS: Final = "tooling:tensor-outputs"
"""A model output gero does not compare (a sequence or map, not a tensor): gero's own limit,
no runtime's failure (the runtime computed it)."""
OUTPUTS_CHECK: Final = "model:outputs"
YARDSTICKS: Final = ("tooling:shadow", "tooling:fp16-yardstick")
"""The cause keys of gero's yardsticks that could not run (the float64 shadow, the fp16
yardstick): the ReferenceEvaluator computes both, so its own failure is theirs."""
MALFORMED: Final = "malformed"
"""A model node whose attributes break its operator's spec (``models.structure``): the
model's own finding (cause key ``malformed:DOMAIN::OP``), which also keys a path's failure on
that model and gero's yardsticks that could not run for the same error (issue 40)."""
MALFORMED_KEY: Final = "malformed:"
STRUCTURE_CHECK: Final = "model:structure"
"""The check of a model's nodes against their operators' specs (``checks.model``): the
family a malformed model's finding is of, its rows and its paths' failures on it."""
UNSUPPORTED_OP: Final = "unsupported-op:"
ERROR_KEY: Final = "error:"
"""A cause key of a failure no known cause names: its error with names and figures masked
(``error:TractError: OP does not support T``): what groups one runtime's same failure
across operators."""

_MODEL_SUITES = ("model", "models")
_BUDGET_WORDS = re.compile(r"ran out of its \d+(?:\.\d+)? s budget")
# How each runtime says it lacks an operator, on a tiny graph with an op it has not:
# OpenVINO "No conversion rule found for operations: ai.onnx.ml.Scaler" (older releases:
# "... for ONNX op 'ai.onnx.ml.Scaler'"), ONNX Runtime "Could not find an implementation
# for Abs(13) node" and "com.microsoft:FooBar(-1) is not a registered function/op", tract
# "Unimplemented(Scaler)", the ReferenceEvaluator "Node type 'X' from domain 'D' is
# unknown", "No registered schema for operator 'X' and domain 'D'" and, for an opset it has
# no version of, "No implementation for operator 'DequantizeLinear' domain '' and version 17".
_UNSUPPORTED = tuple(re.compile(p) for p in (
    r"No conversion rule found for operations: (?:(?P<domain>[a-z][\w.]*)\.)?(?P<op>[A-Z]\w*)",
    r"for ONNX op '(?:(?P<domain>[a-z][\w.]*)\.)?(?P<op>[A-Z]\w*)'",
    r"Could not find an implementation for (?P<op>[A-Z]\w*)\(\d+\) node",
    r"(?P<domain>[a-z][\w.]*):(?P<op>[A-Z]\w*)\(-?\d+\) is not a registered function/op",
    r"Unimplemented\((?P<op>[A-Z]\w*)\)",
    r"Node type '(?P<op>\w+)' from domain '(?P<domain>[\w.]*)' is unknown",
    r"No registered schema for operator '(?P<op>\w+)' and domain '(?P<domain>[\w.]*)'",
    r"(?:Unable to find operator|No implementation for(?: operator)?) '?(?P<op>[A-Z]\w*)'?"
    r"(?: (?:from |and )?domain '(?P<domain>[\w.]*)')?",
))


def unsupported_op(error: str, domains: Mapping[str, str] | None = None) -> str:
    """``unsupported-op:DOMAIN::OP`` when a runtime's error says it lacks an operator
    (``ai.onnx`` for the default domain; a message that names no domain takes the graph's,
    ``domains``: op type -> domain), else ''."""
    for pattern in _UNSUPPORTED:
        m = pattern.search(error)
        if m:
            op = m.group("op")
            domain = (m.groupdict().get("domain") or (domains or {}).get(op, "")
                      or "ai.onnx")
            return f"{UNSUPPORTED_OP}{domain}::{op}"
    return ""


def error_key(cause: str, node: tuple[str, str, str] | None = None) -> str:
    """The cause key of a failure no known cause names: its root cause with the names and
    figures masked (``masked``), so that one runtime's same failure across operators and
    dtypes is one finding; where its error names the node it failed on (``failing_node``),
    that node's ``(dtype, domain, op)`` leads it (``error:[float16 ai.onnx::Gemm] …``): the
    same masked words on another operator are another cause (issue 40)."""
    words = masked("PATH failed: " + root_cause(cause)).removeprefix("PATH failed: ")
    return ERROR_KEY + (f"[{node[0]} {node[1]}::{node[2]}] " if node else "") + words


_TRANSLATING = re.compile(r'Translating node #\d+ "(?P<name>[^"\n]*)"')
_NODE_KEY = re.compile(r"^" + ERROR_KEY + r"\[(?P<dtype>\S*) (?P<domain>[^\s:]+)::(?P<op>\w+)\] ")


def failing_node(error: str) -> str:
    """The name of the node a path's error says it could not take in, '' when it names
    none: tract's ``Translating node #48 "NAME" LayerNorm ToTypedTranslator``, whose root
    cause below it ("Output mismatch after rewiring expansion") names no operator, and
    whose own op name is not the ONNX operator's (the graph says which that is)."""
    m = _TRANSLATING.search(error)
    return m.group("name") if m else ""


def node_of_key(cause_key: str) -> tuple[str, str, str] | None:
    """``(dtype, domain, op)`` of the node a cause key names (``error_key``), else None."""
    m = _NODE_KEY.match(cause_key)
    return (m.group("dtype"), m.group("domain"), m.group("op")) if m else None


def scope_of(suite: str, check: str) -> str:
    """What a row's verdict is about: the variant file a model row names
    (``model:fp16:scaled`` -> ``fp16``), the model for another model row, else the case's
    graph."""
    parts = check.split(":")
    if parts[0] == "model" and len(parts) > 1 and parts[1] in VARIANT_FILES:
        return parts[1]
    return MODEL_SCOPE if suite in _MODEL_SUITES else GRAPH_SCOPE


def law_name(check: str) -> str:
    """``law:NAME`` of a law's or variant's check (``contract:masked_rows``), a model
    gate's (``model:fp16:scaled`` -> ``law:scaled``), another check's name."""
    kind, _, rest = check.partition(":")
    return "law:" + (rest.rsplit(":", 1)[-1] if kind == "model" and rest else rest or kind)


def failure_facts(cause: str, full_error: str = "",
                  domains: Mapping[str, str] | None = None,
                  node: tuple[str, str, str] | None = None) -> tuple[str, str]:
    """``(failure_kind, cause_key)`` of a path that failed: out of its time budget, or
    cannot run, keyed by the operator it lacks where its error names one, else by its
    masked error (led by the node it failed on, ``node``: ``(dtype, domain, op)``, where
    its error names one)."""
    if _BUDGET_WORDS.search(cause):
        return OUT_OF_BUDGET, ""
    return CANNOT_RUN, unsupported_op(full_error or cause, domains) or error_key(cause, node)


def figures_json(figures: Mapping[str, Any]) -> str:
    """The figures a title needs as the column stores them ('' when none)."""
    kept = {k: v for k, v in figures.items() if v is not None and v != ""}
    return json.dumps(kept, sort_keys=True, separators=(",", ":")) if kept else ""
