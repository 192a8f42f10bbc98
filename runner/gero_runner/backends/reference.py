"""The official onnx ReferenceEvaluator: a correctness implementation, slow by design.

It is the path every runtime is compared with (``agreement``), not an oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from gero_runner.backends import names
from gero_runner.backends.base import NOT_APPLICABLE, Backend, PathSpec, as_array
from gero_runner.case import Arrays

BACKEND = "onnx-reference"
CORRECTED = names.CORRECTED
KERNELS = "gero_runner.backends.reference_kernels"
"""Vectorised Conv/pool/recurrent kernels both evaluator paths run (same results)."""


class OnnxReference(Backend):
    name = BACKEND
    distribution = "onnx"
    module = "onnx"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(BACKEND, BACKEND, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator",
                          "kernels": KERNELS})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        return make_evaluator(model)

    def run(self, session: Any, inputs: Arrays) -> list[np.ndarray]:
        with np.errstate(all="ignore"):  # inf/NaN results are observed, not warned about
            outputs = run_releasing(session, inputs)
        missing = [n for n in session.output_names if n not in outputs]
        if missing:
            raise RuntimeError(f"the evaluator computed no output {', '.join(missing)}")
        return [as_array(outputs[n]) for n in session.output_names]


RUNTIME = OnnxReference()
PATH = RUNTIME.paths(0)[0]


def version() -> str:
    return RUNTIME.version()


Observer = Callable[[Any, str, Any], None]
"""Called with (node, value name, value) as each value is made, before it may be freed."""


def _used_names(graph: Any) -> set[str]:
    """Every name a graph's nodes read, subgraphs included (outer-scope captures)."""
    import onnx

    used: set[str] = set()
    for node in graph.node:
        used.update(node.input)
        for attr in node.attribute:
            for g in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                used |= _used_names(g)
    return used


def run_releasing(evaluator: Any, feeds: Mapping[str, Any],
                  observe: Observer | None = None, wanted: list[str] | None = None
                  ) -> dict[str, Any]:
    """The graph outputs (or the ``wanted`` values) of a ReferenceEvaluator of a model,
    computed node by node as ``evaluator.run`` does, but each other intermediate is dropped
    after its last consumer: ``run`` keeps every value of the model alive until it
    returns."""
    import onnx

    outputs = list(evaluator.output_names) if wanted is None else list(wanted)
    nodes = list(evaluator.rt_nodes_)
    keep = set(outputs)
    last: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in _used_names(onnx.GraphProto(node=[node.onnx_node])):
            last[name] = i
    free_at: list[list[str]] = [[] for _ in nodes]
    for name, i in last.items():
        if name and name not in keep:
            free_at[i].append(name)
    results: dict[str, Any] = {"": None, **evaluator.rt_inits_, **feeds}
    # One BLAS thread: the workers already use the cores, and OpenBLAS threads competing
    # for a busy machine made the kernels' small products 4× slower (measured).
    with threadpool_limits(limits=1, user_api="blas"):
        _run_nodes(nodes, results, keep, last, free_at, observe)
    return {n: results[n] for n in outputs if n in results}


def _run_nodes(nodes: list[Any], results: dict[str, Any], keep: set[str],
               last: dict[str, int], free_at: list[list[str]], observe: Observer | None
               ) -> None:
    for i, node in enumerate(nodes):
        missing = [n for n in node.input if n not in results]
        if missing:
            raise RuntimeError(f"{node.onnx_node.op_type} node {node.onnx_node.name!r}: "
                               f"input(s) {', '.join(map(repr, missing))} not computed")
        args = [results[n] for n in node.input]
        made = node.run(*args, context=results) if node.need_context() else node.run(*args)
        for name, value in zip(node.output, made, strict=False):
            if not name:
                continue
            if observe is not None:
                observe(node.onnx_node, name, value)
            if name in keep or (name in last and last[name] > i):
                results[name] = value
        for name in free_at[i]:
            results.pop(name, None)


def make_evaluator(model: bytes) -> Any:
    import onnx

    return stock_evaluator(onnx.load_from_string(model))


def stock_evaluator(proto: Any) -> Any:
    """The stock evaluator with its slow operators vectorised (``reference_kernels``, the
    same results; where onnx's own operator departs from the spec it keeps onnx's code)."""
    from onnx.reference import ReferenceEvaluator

    from gero_runner.backends.reference_defects import opset_of
    from gero_runner.backends.reference_kernels import fast_ops

    opset = opset_of(proto)
    return ReferenceEvaluator(proto, new_ops=fast_ops(opset, complete=False) if opset
                              else None)


class CorrectedReference(OnnxReference):
    """The ReferenceEvaluator with gero's corrections of its known defects
    (``reference_defects``): what ORT is compared with where the stock evaluator shows one,
    and what the float64 shadow runs."""

    name = CORRECTED

    def version(self) -> str:
        return f"{super().version()}+gero"

    def paths(self, threads: int) -> list[PathSpec]:
        return [PathSpec(CORRECTED, CORRECTED, NOT_APPLICABLE, 0,
                         {"evaluator": "onnx.reference.ReferenceEvaluator",
                          "corrected": "gero_runner.backends.reference_defects",
                          "kernels": KERNELS})]

    def build(self, model: bytes, settings: Mapping[str, Any]) -> Any:
        import onnx

        from gero_runner.backends.reference_defects import corrected_evaluator

        return corrected_evaluator(onnx.load_from_string(model))


CORRECTED_RUNTIME = CorrectedReference()
CORRECTED_PATH = CORRECTED_RUNTIME.paths(0)[0]
