"""A run's comparison tolerances: one frozen value, built once from the defaults and the
user's overrides, carried unchanged from the flag (or the API call) to every comparison.

``|actual - reference| <= atol + rtol * |reference|``. A float dtype takes the run's figures
(the specification's defaults unless overridden), any other dtype compares exactly, and a
case that states a tolerance of its own (an onnx backend test's, a shipped model's) keeps
it for its float outputs, and a model's outputs take ``MODEL_TOLERANCES`` where the user
set nothing: ``Tolerances.for_case`` is that rule, the only one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gero_runner.errors import GeroError

FLOAT_DTYPES = ("float16", "float32", "float64")
"""The float dtypes gero's cases come in (``--dtypes``), each with a tolerance."""
KINDS = ("rtol", "atol")


class Tolerance(NamedTuple):
    rtol: float
    atol: float


EXACT = Tolerance(0.0, 0.0)
# The specification's table.
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "float16": Tolerance(5e-3, 5e-4),
    "float32": Tolerance(1e-5, 1e-6),
    "float64": Tolerance(1e-12, 1e-13),
}


MODEL_TOLERANCES: Mapping[str, Tolerance] = {
    **DEFAULT_TOLERANCES,
    "float32": Tolerance(1e-4, 1e-6),
}
"""A model's outputs (``--model``, ``--suite models``), where each comparison takes the rtol
term at the output's largest magnitude (the scaled error): the fp32 bound of 1e-4
relative to the output's scale (``metrics.model_level.FP32_SCALED_LIMIT``, the model
gate). ONNX Runtime's own levels differ by up to ~2e-5 scaled on real CNNs (a 736×992
text-detection map), so the operator table (1e-5) would blame every path for
float32 reordering. float16 keeps its 5e-3, already above the 4e-3 fp16 gate
(docs/explanation/tolerances.md)."""


def check_value(kind: str, dtype: str, value: object, item: str = "") -> float:
    """A tolerance figure as a float, or one sentence saying why it is not one."""
    shown = item or f"{dtype}={value}"
    if dtype not in FLOAT_DTYPES:
        raise GeroError(f"bad --{kind} {shown!r}: expected DTYPE=VALUE with DTYPE in "
                        f"{', '.join(FLOAT_DTYPES)}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise GeroError(f"bad --{kind} {shown!r}: not a number")
    try:
        number = float(value)
    except ValueError as e:
        raise GeroError(f"bad --{kind} value {value!r} in {shown!r}: not a number") from e
    if not (number >= 0 and math.isfinite(number)):
        raise GeroError(f"bad --{kind} {shown!r}: a tolerance is a finite, non-negative "
                        "number")
    return number


def parse_items(kind: str, items: Iterable[str]) -> dict[str, float]:
    """``--rtol float16=1e-2`` items (repeatable) as dtype -> value; the last one wins."""
    values: dict[str, float] = {}
    for item in items:
        dtype, sep, text = item.partition("=")
        if not sep:
            raise GeroError(f"bad --{kind} {item!r}: expected DTYPE=VALUE with DTYPE in "
                            f"{', '.join(FLOAT_DTYPES)}")
        values[dtype] = check_value(kind, dtype, text, item)
    return values


@dataclass(frozen=True)
class Tolerances:
    """Per float dtype its (rtol, atol). Immutable and picklable: the worker pool and Dask
    carry the very value the run was asked for."""

    table: tuple[tuple[str, Tolerance], ...] = tuple(DEFAULT_TOLERANCES.items())

    @classmethod
    def with_overrides(cls, rtol: Mapping[str, object] | None = None,
                       atol: Mapping[str, object] | None = None) -> Tolerances:
        """The defaults with some figures replaced (each checked: one sentence if bad)."""
        table = dict(DEFAULT_TOLERANCES)
        for kind, given in (("rtol", rtol or {}), ("atol", atol or {})):
            for dtype, value in given.items():
                number = check_value(kind, str(dtype), value)
                table[str(dtype)] = table[str(dtype)]._replace(**{kind: number})
        return cls(tuple((d, table[d]) for d in FLOAT_DTYPES))

    @classmethod
    def parse(cls, rtol: Iterable[str] = (), atol: Iterable[str] = ()) -> Tolerances:
        """From ``--rtol DTYPE=V`` and ``--atol DTYPE=V`` items."""
        return cls.with_overrides(parse_items("rtol", rtol), parse_items("atol", atol))

    def for_dtype(self, dtype: str) -> Tolerance:
        return next((t for d, t in self.table if d == dtype), EXACT)

    def for_case(self, case_tolerance: tuple[float, float] | None, dtype: str, *,
                 model: bool = False) -> Tolerance:
        """The tolerance one output of a case is compared at: the case's own for a float
        output when it states one, else the run's for its dtype; a model case's output
        takes the model table (``MODEL_TOLERANCES``) for a dtype whose figures the user did
        not change (a figure equal to the specification's default is the default)."""
        if case_tolerance is not None and dtype.startswith("float"):
            return Tolerance(*case_tolerance)
        tolerance = self.for_dtype(dtype)
        if model and tolerance == DEFAULT_TOLERANCES.get(dtype):
            return MODEL_TOLERANCES[dtype]
        return tolerance

    def overrides(self) -> dict[str, dict[str, float]]:
        """The figures that differ from the defaults, by dtype and kind."""
        out: dict[str, dict[str, float]] = {}
        for dtype, tol in self.table:
            default = DEFAULT_TOLERANCES.get(dtype)
            changed = {k: v for k, v in tol._asdict().items()
                       if default is None or v != getattr(default, k)}
            if changed:
                out[dtype] = changed
        return out

    def as_dict(self) -> dict[str, dict[str, float]]:
        """As the run record and the stored request keep it: dtype -> {rtol, atol}."""
        return {d: t._asdict() for d, t in self.table}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Tolerances:
        """``as_dict``'s form back (also an older request's dtype -> [rtol, atol])."""
        rtol: dict[str, object] = {}
        atol: dict[str, object] = {}
        for dtype, figures in values.items():
            if isinstance(figures, Mapping):
                rtol[dtype], atol[dtype] = figures["rtol"], figures["atol"]
            else:
                rtol[dtype], atol[dtype] = figures
        return cls.with_overrides(rtol, atol)


DEFAULTS = Tolerances()
"""The specification's table, no override."""
