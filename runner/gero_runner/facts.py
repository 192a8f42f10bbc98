"""What a verdict is about, recorded beside its sentence: the path a failure names and the
words of its cause, so that findings and titles read columns, not the English ``reason``.

Standard library only: the reader names these columns (a file of a gero before schema
version 3 lacks them, and reads them as NULL) and the query layer derives them for such
rows with ``FAILED_PATH`` and ``cause_of``, the one place the reason is still read for them.
"""

from __future__ import annotations

import re
from typing import Final

FACT_COLUMNS: Final = (
    ("failed_path", "on a failure: the path that failed, as the runner names it "
                    "(tract-unoptimized; not the variant file it ran), else ''"),
    ("cause", "the words a finding's title quotes: a failure's error named by its root "
              "cause, a law's clause with its figures, a model verdict's sentence, else ''"),
)
"""(column, meaning) of each fact, in the schema's order."""
FACT_NAMES: Final = tuple(name for name, _ in FACT_COLUMNS)

SINCE_SCHEMA: Final = 3

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
