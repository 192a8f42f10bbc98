"""The ONNX backend node suite: every node test case the installed onnx package generates.

onnx >= 1.23 no longer ships frozen node data; ``collect_testcases`` builds each case in
memory (a one-node model, its inputs and the outputs onnx computed for them). Nothing is
downloaded. Collection takes a few seconds, so it happens once, in the parent process.

Each case keeps its own tolerance (``TestCase.rtol``/``atol``, 1e-3/1e-7 at onnx 1.23),
applied as onnx's runner does: ``numpy.testing.assert_allclose(actual, expected, rtol,
atol)``, i.e. ``|a − e| ≤ atol + rtol·|e|`` element-wise. Cases whose tensors gero cannot
feed or compare (sequences, optionals, strings, bfloat16/float8/int4) become ``execution``
observations with the reason, so the counts stay honest.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from gero_runner.cases.base import CaseInstance
from gero_runner.request import RunRequest

SUITE = "onnx-backend"
EXPECTED_LABEL = "onnx-expected"

# Element types that ONNX Runtime's Python API takes as NumPy arrays and that gero compares.
_PLAIN_DTYPES = frozenset(
    np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                          np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
)
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


@dataclass(frozen=True)
class _Value:
    """A test value normalised: an array, or the reason it is not one gero can handle."""

    array: np.ndarray | None
    problem: str = ""


def _normalise(value: Any, what: str) -> _Value:
    import onnx
    from onnx import numpy_helper

    if value is None:
        return _Value(None, f"{what} is an empty optional (gero feeds and compares tensors only)")
    if isinstance(value, list | tuple):
        return _Value(None, f"{what} is a sequence of {len(value)} tensor(s) (gero feeds and "
                            "compares tensors only)")
    if isinstance(value, onnx.TensorProto):
        value = numpy_helper.to_array(value)
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind in "USO":
        return _Value(None, f"{what} is a string tensor (gero compares numeric tensors only)")
    if array.dtype not in _PLAIN_DTYPES:
        return _Value(None, f"{what} has element type {array.dtype.name}, which ONNX Runtime's "
                            "Python API cannot take as a NumPy array")
    return _Value(array)


def _type_problem(value_info: Any, what: str) -> str:
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        return f"{what} has ONNX type {kind} (gero feeds and compares tensors only)"
    return ""


def collect() -> list[Any]:
    """onnx's node TestCases, with its generator noise (warnings, prints) silenced."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(collect_testcases(None))


def op_types(testcases: list[Any]) -> dict[str, str]:
    """Operator of every case; an ``_expanded`` case is named after the operator it expands."""
    ops: dict[str, str] = {}
    for tc in testcases:
        nodes = tc.model.graph.node
        if len(nodes) == 1:
            ops[tc.name] = nodes[0].op_type
    for tc in testcases:
        if tc.name not in ops:
            base = _EXPANDED.sub("", tc.name)
            ops[tc.name] = ops.get(base, tc.model.graph.node[0].op_type
                                   if tc.model.graph.node else "?")
    return ops


def to_case(tc: Any, op_type: str) -> CaseInstance:
    """One onnx TestCase as a CaseInstance (or an unsupported one carrying the reason)."""
    import onnx

    model = tc.model
    inputs_data, outputs_data = tc.data_sets[0]
    graph_inputs = list(model.graph.input)
    graph_outputs = list(model.graph.output)
    problems: list[str] = []
    inputs = _tensors(graph_inputs, inputs_data, "input", problems)
    expected = _tensors(graph_outputs, outputs_data, "output", problems)
    dtype = _case_dtype(list(expected.values()) or list(inputs.values()))
    metadata: dict[str, Any] = {"opset": _opset(model), "onnx_rtol": tc.rtol,
                                "onnx_atol": tc.atol}
    if problems:
        metadata["unsupported"] = "; ".join(dict.fromkeys(problems))
    return CaseInstance(
        suite=SUITE, case_id=f"{SUITE}/{op_type}/{tc.name}", op_type=op_type,
        case_name=tc.name, dtype=dtype, seed=-1, model=model.SerializeToString(),
        inputs=inputs, expected=expected if not problems else None,
        expected_label=EXPECTED_LABEL, expected_version=onnx.__version__,
        tolerance=(float(tc.rtol), float(tc.atol)), metadata=metadata,
    )


def _case_dtype(arrays: list[np.ndarray]) -> str:
    for x in arrays:
        if x.dtype.kind == "f":
            return str(x.dtype)
    return str(arrays[0].dtype) if arrays else "-"


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def cases_for_request(request: RunRequest) -> list[CaseInstance]:
    """The suite, filtered by ``--ops`` (operator names) and ``--dtypes`` (case dtype)."""
    testcases = collect()
    ops = op_types(testcases)
    wanted_ops = {o.lower() for o in request.ops}
    cases = []
    for tc in sorted(testcases, key=lambda t: t.name):
        op = ops[tc.name]
        if wanted_ops and op.lower() not in wanted_ops and tc.name.lower() not in wanted_ops:
            continue
        case = to_case(tc, op)
        if request.dtypes and case.dtype not in request.dtypes:
            continue
        cases.append(case)
    return cases


def _tensors(infos: list[Any], values: list[Any], kind: str,
             problems: list[str]) -> dict[str, np.ndarray]:
    """The case's tensors by name; what gero cannot feed or compare goes to ``problems``."""
    out: dict[str, np.ndarray] = {}
    for vi, value in zip(infos, values, strict=False):
        problem = _type_problem(vi, f"{kind} {vi.name!r}")
        v = _normalise(value, f"{kind} {vi.name!r}")
        if problem or v.problem:
            problems.append(problem or v.problem)
        elif v.array is not None:
            out[vi.name] = v.array
    return out
