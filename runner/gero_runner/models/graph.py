"""Walking an ONNX graph: what a node's subgraphs read.

Shared by the variants' topological sort and localize's graph surgery (``evidence``), which
sits above this package.
"""

from __future__ import annotations

import onnx


def subgraph_reads(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs (If, Loop, Scan bodies) read: the outer names they capture,
    their own names included (callers intersect with the names they know)."""
    reads: set[str] = set()
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for g in graphs:
            for n in g.node:
                reads.update(n.input)
                reads |= subgraph_reads(n)
    return reads
