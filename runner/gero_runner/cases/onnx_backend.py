"""The ONNX backend node suite: every node test case the installed onnx package generates.

onnx >= 1.23 no longer ships frozen node data; ``collect_testcases`` builds each case in
memory (a one-node model, its inputs and the outputs onnx computed for them). Nothing is
downloaded. Collection takes a few seconds, so it happens once, in the parent process.

Each case keeps its own tolerance (``TestCase.rtol``/``atol``, 1e-3/1e-7 at onnx 1.23),
applied as onnx's runner does: ``numpy.testing.assert_allclose(actual, expected, rtol,
atol)``, i.e. ``|a − e| ≤ atol + rtol·|e|`` element-wise. String tensors are compared
exactly.

Sequence and optional values (of tensors) are fed and read through a wrapper around the
node under test, so every path runs the same tensor-only graph: a sequence input arrives
as its tensors and a SequenceConstruct, an optional one through Optional; a sequence
output is read as ``NAME.length`` (SequenceLength) and ``NAME[i]`` (SequenceAt), each
tensor compared element-wise as onnx's own runner does; an optional output as
``NAME.has_element`` and, when it holds one, ``NAME.value``. Cases gero still cannot feed
or compare (maps, nested sequences, bfloat16/float8/int4) become ``execution``
observations with the reason, so the counts stay honest.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gero_runner.case import CaseInstance
from gero_runner.request import RunRequest

SUITE = "onnx-backend"
EXPECTED_LABEL = "onnx-expected"

# Element types that ONNX Runtime's Python API takes as NumPy arrays and that gero compares.
def as_strings(array: np.ndarray) -> np.ndarray:
    """A string tensor as a NumPy unicode array (stored without pickles, compared exactly)."""
    if array.dtype.kind == "U":
        return array
    flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
    return np.array(flat, dtype=str).reshape(array.shape) if flat else \
        np.zeros(array.shape, dtype="<U1")


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
    if array.dtype.kind in "SU" or (array.dtype == object and all(
            isinstance(v, str | bytes) for v in array.reshape(-1))):
        return _Value(as_strings(array))
    if array.dtype == object:
        return _Value(None, f"{what} holds Python objects gero cannot compare")
    if array.dtype.kind != "U" and array.dtype not in _PLAIN_DTYPES:
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


RANDOM_OPS = frozenset(("Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
                        "RandomUniform", "RandomUniformLike"))
RANDOM_SEED = 0.0
"""The seed given to a random operator that has none: without it every run draws other
values, so its observations got new ids on every rerun and never deduplicated."""


def _nodes(graph: Any) -> Iterator[Any]:
    import onnx

    for node in graph.node:
        yield node
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                yield from _nodes(g)


def _has_random(model: Any) -> bool:
    return any(n.op_type in RANDOM_OPS for n in _nodes(model.graph))


def seeded(model: Any) -> Any:
    """``model`` with every unseeded random node given ``seed=RANDOM_SEED`` (a copy; the
    model itself when nothing needs a seed)."""
    import onnx

    nodes = _nodes
    if not any(n.op_type in RANDOM_OPS and not any(a.name == "seed" for a in n.attribute)
               for n in nodes(model.graph)):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in nodes(copy.graph):
        if node.op_type in RANDOM_OPS and not any(a.name == "seed" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("seed", RANDOM_SEED))
    return copy


def to_case(tc: Any, op_type: str) -> CaseInstance:
    """One onnx TestCase as a CaseInstance (or an unsupported one carrying the reason)."""
    import onnx

    model = seeded(tc.model)
    random = model is not tc.model or _has_random(tc.model)
    inputs_data, outputs_data = tc.data_sets[0]
    problems: list[str] = []
    try:
        wrapped = wrap_values(model, list(inputs_data), list(outputs_data))
    except Unwrappable as e:
        wrapped = None
        problems.append(str(e))
    note = ""
    if wrapped is not None:
        model, inputs_data, outputs_data, note = wrapped
    graph_inputs = list(model.graph.input)
    graph_outputs = list(model.graph.output)
    inputs = _tensors(graph_inputs, inputs_data, "input", problems)
    expected = _tensors(graph_outputs, outputs_data, "output", problems)
    dtype = _case_dtype(list(expected.values()) or list(inputs.values()))
    return CaseInstance(
        suite=SUITE, case_id=f"{SUITE}/{op_type}/{tc.name}", op_type=op_type,
        case_name=tc.name, dtype=dtype, seed=-1, model=model.SerializeToString(),
        inputs=inputs, expected=expected if not problems else None,
        expected_label=EXPECTED_LABEL, expected_version=onnx.__version__,
        tolerance=(float(tc.rtol), float(tc.atol)),
        unsupported="; ".join(dict.fromkeys(problems)), wrapped=note, random=random,
    )


def _case_dtype(arrays: list[np.ndarray]) -> str:
    for x in arrays:
        if x.dtype.kind == "f":
            return str(x.dtype)
    if arrays and arrays[0].dtype.kind == "U":
        return "string"
    return str(arrays[0].dtype) if arrays else "-"


class Unwrappable(Exception):
    """A value the wrapper cannot express as tensors (a map, a nested sequence)."""


def _elem_tensor_type(tp: Any, what: str) -> Any:
    """The tensor type inside ``seq(tensor)`` or ``optional(tensor)`` (else Unwrappable)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return tp
    raise Unwrappable(f"{what} has ONNX type {kind} inside a sequence or optional (gero "
                      "feeds and compares tensors and sequences or optionals of tensors)")


def _tensors_in(value: Any) -> list[Any]:
    return [v for v in value] if isinstance(value, list | tuple) else [value]


def wrap_values(model: Any, inputs: list[Any], outputs: list[Any]
                ) -> tuple[Any, list[Any], list[Any], str]:
    """The model with its sequence and optional inputs and outputs turned into tensors (see
    the module docstring), the values to feed and expect, and a note saying what changed.
    The model is returned unchanged when it has none."""
    import onnx
    from onnx import helper

    kinds = [vi.type.WhichOneof("value") for vi in [*model.graph.input, *model.graph.output]]
    if all(k == "tensor_type" for k in kinds):
        return model, inputs, outputs, ""
    wrapped = onnx.ModelProto()
    wrapped.CopyFrom(model)
    graph = wrapped.graph
    front: list[Any] = []
    new_inputs: list[Any] = []
    feeds: list[Any] = []

    def feed_sequence(name: str, tp: Any, values: list[Any]) -> None:
        elem = _elem_tensor_type(tp.sequence_type.elem_type, f"input {name!r}")
        names = [f"{name}.{i}" for i in range(len(values))]
        for n, v in zip(names, values, strict=True):
            shape = list(np.shape(v if not isinstance(v, onnx.TensorProto) else v.dims))
            if isinstance(v, onnx.TensorProto):
                shape = list(v.dims)
            new_inputs.append(helper.make_tensor_value_info(n, elem.tensor_type.elem_type,
                                                            shape))
        feeds.extend(values)
        if names:
            front.append(helper.make_node("SequenceConstruct", names, [name]))
        else:
            front.append(helper.make_node("SequenceEmpty", [], [name],
                                          dtype=elem.tensor_type.elem_type))

    for vi, value in zip(list(graph.input), inputs, strict=False):
        kind = vi.type.WhichOneof("value")
        if kind == "tensor_type":
            new_inputs.append(vi)
            feeds.append(value)
        elif kind == "sequence_type" and isinstance(value, list | tuple):
            feed_sequence(vi.name, vi.type, list(value))
        elif kind == "optional_type":
            inner = vi.type.optional_type.elem_type
            if value is None:
                front.append(helper.make_node("Optional", [], [vi.name], type=inner))
            elif inner.WhichOneof("value") == "sequence_type":
                feed_sequence(f"{vi.name}.seq", inner, list(_tensors_in(value)))
                front.append(helper.make_node("Optional", [f"{vi.name}.seq"], [vi.name]))
            else:
                elem = _elem_tensor_type(inner, f"input {vi.name!r}")
                tensor = helper.make_value_info(f"{vi.name}.value", elem)
                new_inputs.append(tensor)
                feeds.append(value)
                front.append(helper.make_node("Optional", [f"{vi.name}.value"], [vi.name]))
        else:
            raise Unwrappable(f"input {vi.name!r} has ONNX type {kind} (gero feeds tensors "
                              "and sequences or optionals of tensors)")

    back: list[Any] = []
    new_outputs: list[Any] = []
    expect: list[Any] = []

    def read_sequence(name: str, tp: Any, values: list[Any]) -> None:
        elem = _elem_tensor_type(tp.sequence_type.elem_type, f"output {name!r}")
        back.append(helper.make_node("SequenceLength", [name], [f"{name}.length"]))
        new_outputs.append(helper.make_tensor_value_info(f"{name}.length",
                                                         onnx.TensorProto.INT64, []))
        expect.append(np.array(len(values), dtype=np.int64))
        for i, v in enumerate(values):
            index = f"{name}.index{i}"
            back.append(helper.make_node("Constant", [], [index], value=helper.make_tensor(
                index, onnx.TensorProto.INT64, [], [i])))
            back.append(helper.make_node("SequenceAt", [name, index], [f"{name}[{i}]"]))
            out = helper.make_value_info(f"{name}[{i}]", onnx.TypeProto())
            out.type.tensor_type.elem_type = elem.tensor_type.elem_type
            new_outputs.append(out)
            expect.append(v)

    for vo, value in zip(list(graph.output), outputs, strict=False):
        kind = vo.type.WhichOneof("value")
        if kind == "tensor_type":
            new_outputs.append(vo)
            expect.append(value)
        elif kind == "sequence_type" and isinstance(value, list | tuple):
            read_sequence(vo.name, vo.type, list(value))
        elif kind == "optional_type":
            flag = f"{vo.name}.has_element"
            back.append(helper.make_node("OptionalHasElement", [vo.name], [flag]))
            new_outputs.append(helper.make_tensor_value_info(flag, onnx.TensorProto.BOOL, []))
            expect.append(np.array(value is not None))
            if value is None:
                continue
            inner = vo.type.optional_type.elem_type
            back.append(helper.make_node("OptionalGetElement", [vo.name], [f"{vo.name}.value"]))
            if inner.WhichOneof("value") == "sequence_type":
                read_sequence(f"{vo.name}.value", inner, list(_tensors_in(value)))
            else:
                new_outputs.append(helper.make_value_info(
                    f"{vo.name}.value", _elem_tensor_type(inner, f"output {vo.name!r}")))
                expect.append(value)
        else:
            raise Unwrappable(f"output {vo.name!r} has ONNX type {kind} (gero compares "
                              "tensors and sequences or optionals of tensors)")

    nodes = [*front, *graph.node, *back]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.input[:]
    graph.input.extend(new_inputs)
    del graph.output[:]
    graph.output.extend(new_outputs)
    note = ("sequence and optional values fed through SequenceConstruct/Optional and read "
            "through SequenceLength/SequenceAt/OptionalHasElement/OptionalGetElement")
    if any(n.op_type == "Optional" and n.input for n in front):
        note += ("; the ReferenceEvaluator's Optional wraps its value in a list "
                 "(onnx/reference/ops/op_optional.py returns ([x],)), so its rows here show "
                 "that defect of the wrapper's Optional node, not of the node under test")
    return wrapped, feeds, expect, note


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
