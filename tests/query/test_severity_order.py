"""One severity order for every "worst" gero picks (result_classes.SEVERITY): the grouped
table, the findings and an export agree on which row of a set is the worst."""

from __future__ import annotations

import duckdb
import pytest

from gero.query.table import GROUPINGS, GroupedRows
from gero_runner.result_classes import (
    CONTRACT_ISSUE,
    DIVERGENCE,
    EXECUTION,
    PASSED,
    RESULT_CLASSES,
    SEVERITY,
    check_family,
    severity_sql,
)


def test_the_order_is_contract_then_divergence_then_execution_then_passed() -> None:
    assert sorted(RESULT_CLASSES, key=SEVERITY.__getitem__, reverse=True) == [
        CONTRACT_ISSUE, DIVERGENCE, EXECUTION, PASSED]


@pytest.mark.parametrize("result", [*RESULT_CLASSES, "unknown"])
def test_the_sql_expression_gives_the_same_figure(result: str) -> None:
    got = duckdb.connect().execute(f"SELECT {severity_sql('r')} FROM (SELECT ? AS r)",
                                   [result]).fetchall()
    assert got == [(SEVERITY.get(result, 0),)]


@pytest.mark.parametrize(("present", "worst"), [
    ((EXECUTION, CONTRACT_ISSUE), CONTRACT_ISSUE),
    ((EXECUTION, DIVERGENCE), DIVERGENCE),
    ((PASSED, EXECUTION), EXECUTION),
    ((PASSED,), PASSED),
])
def test_a_groups_covers_name_each_values_worst_result(present: tuple[str, ...],
                                                        worst: str) -> None:
    # The bits the grouped query sets: 4 a value, one at each class's severity.
    bits = sum(1 << (4 * 1 + SEVERITY[r]) for r in present)
    groups = GroupedRows("g", GROUPINGS["levels"], 1, 1, domain=("basic", "all"))
    assert groups.covers_text(bits) == f"all={worst}"


@pytest.mark.parametrize(("check", "family"), [
    ("agreement", "comparison"), ("levels", "comparison"), ("analytic", "comparison"),
    ("expected", "comparison"), ("contract:probability", "contract"),
    ("variant:softmax_decomposed", "variant"), ("model:fp16:vs-fp32", "model"),
    ("weird:thing", "other"), ("", "other"),
])
def test_check_families(check: str, family: str) -> None:
    assert check_family(check) == family
