"""Default comparison tolerances per dtype and the parsing of CLI overrides."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gero_runner.errors import GeroError

# |actual - reference| <= atol + rtol * |reference| (the specification's table).
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (5e-3, 5e-4),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-13),
}
EXACT = (0.0, 0.0)


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


class ToleranceTable:
    """Tolerances by dtype; non-float dtypes compare exactly."""

    def __init__(self, overrides: Mapping[str, tuple[float, float]] | None = None) -> None:
        self._table = dict(DEFAULT_TOLERANCES)
        if overrides:
            self._table.update(overrides)

    def for_dtype(self, dtype: str) -> Tolerance:
        rtol, atol = self._table.get(dtype, EXACT)
        return Tolerance(rtol, atol)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {d: {"rtol": r, "atol": a} for d, (r, a) in self._table.items()}


def parse_overrides(rtol: Iterable[str], atol: Iterable[str]) -> dict[str, tuple[float, float]]:
    """Turn ``--rtol float16=1e-2`` style options into a dtype -> (rtol, atol) table."""
    table = {d: list(v) for d, v in DEFAULT_TOLERANCES.items()}
    for index, items in ((0, rtol), (1, atol)):
        for item in items:
            dtype, sep, value = item.partition("=")
            if not sep or dtype not in table:
                raise GeroError(
                    f"bad tolerance {item!r}: expected DTYPE=VALUE with DTYPE in "
                    f"{', '.join(table)}"
                )
            try:
                number = float(value)
            except ValueError as e:
                raise GeroError(f"bad tolerance value {value!r} in {item!r}") from e
            if not number >= 0:
                raise GeroError(f"tolerance must be a non-negative number, got {item!r}")
            table[dtype][index] = number
    return {d: (v[0], v[1]) for d, v in table.items()}
