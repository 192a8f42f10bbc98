"""The per-case memo of tensor hashes and comparisons: keyed by content, never by object."""

from __future__ import annotations

import numpy as np
import pytest

from gero_runner.execution.context import CaseContext, RunSettings
from gero_runner.metrics.compare import compare
from gero_runner.run import RunRequest, collect_cases
from gero_runner.storage.artifacts import EvidenceWriter
from gero_runner.storage.hashing import tensor_hash


@pytest.fixture
def ctx() -> CaseContext:
    (case, *_) = collect_cases(RunRequest(ops=["Exp"], dtypes=["float32"]))
    return CaseContext(case, RunSettings(data_root=""), EvidenceWriter(),
                       {}, ["y"], "g", "i")


@pytest.mark.parametrize("values", [[1.0, 2.0], [np.nan, 1.0], [np.inf, -0.0], []])
def test_memoised_compare_equals_a_fresh_one(ctx: CaseContext, values: list[float]) -> None:
    a = np.array(values, dtype=np.float32)
    r = np.nextafter(a, np.float32(np.inf))
    # repr: a NaN figure (the percentiles of no finite pair) never equals itself, and from
    # Python 3.13 a dataclass compares field by field, without the identity shortcut
    assert repr(ctx.compare(a, r, 1e-5, 1e-6)) == repr(compare(a, r, 1e-5, 1e-6))
    # Another array with the same bits is the same question; another tolerance is not.
    assert ctx.compare(a.copy(), r.copy(), 1e-5, 1e-6) is ctx.compare(a, r, 1e-5, 1e-6)
    assert repr(ctx.compare(a, r, 0.0, 0.0)) == repr(compare(a, r, 0.0, 0.0))


def test_same_bits_other_dtype_or_shape_is_another_tensor(ctx: CaseContext) -> None:
    x = np.zeros(4, dtype=np.float32)
    assert ctx.digest(x) == tensor_hash(x) == ctx.digest(x)
    assert ctx.digest(x.view(np.int32)) != ctx.digest(x)
    assert ctx.digest(x.reshape(2, 2)) != ctx.digest(x)
