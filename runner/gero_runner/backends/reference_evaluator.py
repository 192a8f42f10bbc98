"""The stock onnx ReferenceEvaluator and its node-by-node run that frees what it no longer
needs: below both the evaluator backend (``reference``) and the registry of its defects
(``reference_defects``), which both use it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits


def opset_of(model: Any) -> int:
    """The default-domain opset a model imports (0 when it imports none)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


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
    # NumPy's overflow warnings go to stderr even under `gero run -q`: a non-finite value is
    # evidence the row records (its NaN and inf counts), not a message.
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):
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

    from gero_runner.backends.reference_kernels import fast_ops

    opset = opset_of(proto)
    return ReferenceEvaluator(proto, new_ops=fast_ops(opset, complete=False) if opset
                              else None)
