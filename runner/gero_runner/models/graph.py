"""Walking an ONNX graph: a node's subgraphs, and what they read.

Shared by the variants' topological sort and localize's graph surgery (``evidence``), which
sits above this package.
"""

from __future__ import annotations

import onnx


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """A node's subgraphs (If branches, Loop and Scan bodies), in attribute order."""
    graphs: list[onnx.GraphProto] = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            graphs.append(attr.g)
        graphs.extend(attr.graphs)
    return graphs


def subgraph_reads(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs (If, Loop, Scan bodies) read: the outer names they capture,
    their own names included (callers intersect with the names they know)."""
    reads: set[str] = set()
    for g in subgraphs(node):
        for n in g.node:
            reads.update(n.input)
            reads |= subgraph_reads(n)
    return reads
